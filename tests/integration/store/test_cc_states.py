"""`uscf-cc`'s states through both stores (the one in memory and the one in Redis), by the same
protocol the arena's use: a rating never seen reads as unrated, a written state reads back
whole (a negative rating too), and a write over a state that moved on is refused
(check-and-set on the seq)."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from tests.support.processes import Processes
from worker.replay.memory_store import MemoryBackend, MemoryStore
from worker.rules.hundredths import Hundredths
from worker.rules.uscf_cc import CcState
from worker.store.protocol import StateWrite, Store, Write
from worker.store.redis_store import CcRedisStore
from worker.store.state_codec import decode_cc_state, encode_cc_state

KEY = "alice/correspondence"


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: Path, processes: Processes) -> AsyncIterator[Store[CcState]]:
    if request.param == "memory":
        yield MemoryStore(MemoryBackend(CcState()), "p1", 30.0)
        return
    server = processes.redis(tmp_path)
    client = Redis.from_url(server.url)
    try:
        yield CcRedisStore(client, "rating-uscf-cc:", "p1", 30.0, 3600)
    finally:
        await client.aclose()


def write(game_id: str, read_seq: int, state: CcState) -> Write[CcState]:
    return Write(game_id, game_id.encode().ljust(8, b"-"), ((KEY, read_seq),), (StateWrite(KEY, state, b"event"),))


async def test_cc_states_go_through_a_store_whole(store: Store[CcState]) -> None:
    assert (await store.read([KEY], [])).states[KEY] == CcState()
    first = CcState(Hundredths(-10050), 1, 1)  # a negative first rating (U12)
    applied, _ = await store.apply([write("g1", 0, first)])
    assert applied == [True]
    assert (await store.read([KEY], [])).states[KEY] == first
    # Read at seq 0 again, as a process that missed g1 would: refused, nothing changes.
    applied, _ = await store.apply([write("g2", 0, CcState(Hundredths(170000), 1, 1))])
    assert applied == [False]
    assert (await store.read([KEY], [])).states[KEY] == first
    second = CcState(Hundredths(160000), 2, 2)
    applied, _ = await store.apply([write("g3", 1, second)])
    assert applied == [True]
    assert (await store.read([KEY], [])).states[KEY] == second


@pytest.mark.parametrize(
    "state", [CcState(), CcState(Hundredths(160000), 40, 1), CcState(Hundredths(-10050), 1, 7), CcState(None, 0, 3)]
)
def test_the_cc_encoding_round_trips_and_starts_with_the_seq(state: CcState) -> None:
    encoded = encode_cc_state(state)
    assert decode_cc_state(encoded) == state
    assert encoded.startswith(f"{state.seq}|".encode())  # what the scripts read to check a version
