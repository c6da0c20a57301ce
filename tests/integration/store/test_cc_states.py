"""What is particular to `uscf-cc`'s states in both stores (the one in memory and the one in
Redis): a rating never seen reads as `CcState()`, a negative rating (U12) goes through whole,
and the codec's encoding starts with the seq. The rest (check-and-set on the seq, taint,
records, outboxes, leases) is the contract's, which runs for uscf-cc as for the arena:
tests/integration/store/test_contract.py."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from tests.support.processes import Processes
from worker.engine.engine import Engine, SeedRow
from worker.replay.memory_store import MemoryBackend, MemoryStore
from worker.rules.hundredths import Hundredths, Points
from worker.store.protocol import Store, Write
from worker.store.redis_store import RedisStore
from worker.systems.registry import USCF_CC
from worker.systems.uscf_cc.codec import CC_STATES, decode_cc_state, encode_cc_state
from worker.systems.uscf_cc.rules import CATEGORY, CcState

KEY = "alice/correspondence"
ENGINE = Engine(USCF_CC, Points(1200))


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: Path, processes: Processes) -> AsyncIterator[Store[CcState]]:
    if request.param == "memory":
        yield MemoryStore(MemoryBackend(CcState()), "p1", 30.0)
        return
    server = processes.redis(tmp_path)
    client = Redis.from_url(server.url)
    try:
        yield RedisStore(client, "rating-uscf-cc:", "p1", 30.0, 3600, codec=CC_STATES)
    finally:
        await client.aclose()


async def test_a_negative_cc_rating_goes_through_a_store_whole(store: Store[CcState]) -> None:
    assert (await store.read([KEY], [])).states[KEY] == CcState()
    seeded = ENGINE.seed(SeedRow("alice", CATEGORY, Hundredths(-10050), 1), CcState(), force=True).update
    assert seeded is not None and seeded.key == KEY
    first = CcState(Hundredths(-10050), 1, 1)  # a negative rating (U12), as its seeding row gives it
    assert seeded.state == first
    applied, _ = await store.apply([Write("", b"", ((KEY, 0),), (seeded,))])  # as the importer writes it
    assert applied == [True]
    assert (await store.read([KEY], [])).states[KEY] == first


@pytest.mark.parametrize(
    "state", [CcState(), CcState(Hundredths(160000), 40, 1), CcState(Hundredths(-10050), 1, 7), CcState(None, 0, 3)]
)
def test_the_cc_encoding_round_trips_and_starts_with_the_seq(state: CcState) -> None:
    encoded = encode_cc_state(state)
    assert decode_cc_state(encoded) == state
    assert encoded.startswith(f"{state.seq}|".encode())  # what the scripts read to check a version
