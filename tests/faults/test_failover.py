"""Redis failovers and restarts that lose writes: real primaries, replicas and workers.

1. With RATING_REDIS_WAIT_REPLICAS, an acknowledgement (the outbox trim after a published
   round) reaches the replica before the next round is sent: a replica promoted in between
   never re-sends an event after a newer one of its key.
2. A store that went back in time under a running worker (a restart from a replica's older
   copy, or from nothing) is refused by every script until `restore` has run: the worker
   stops applying games instead of computing them from states that lack published changes.
"""

import asyncio
import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
import redis
from aiokafka import AIOKafkaProducer
from redis.asyncio import Redis

from tests.support.audit import audit
from tests.support.games import ENGINE, keyed, make_game, seed_write
from tests.support.kafka import committed, read_topic
from tests.support.processes import Processes
from tests.support.replication import promote, start_replica
from tests.support.stack import Stack, require_local
from worker.embedded.stack import RedisServer
from worker.engine.engine import SeedRow
from worker.rules.categories import Category
from worker.rules.hundredths import Hundredths
from worker.store import keys
from worker.store.redis_store import RedisStore, StoreUntrusted
from worker.store.schedule import Item, SeedItem
from worker.stream.pipeline import Pipeline
from worker.stream.publisher import Publisher
from worker.systems.arena.codec import RATING_STATES, decode_state
from worker.systems.arena.state import RatingState
from worker.systems.arena.traffic import ArenaSimulation

pytestmark = [pytest.mark.integration, pytest.mark.faults]

PREFIX = "rating:"
LEASE = 1.0  # seconds: the stopped process's leases expire quickly on the promoted replica


class PromotingPublisher(Publisher):
    """Promotes the replica right after the first round of events Kafka acknowledged, once armed."""

    def __init__(self, producer: AIOKafkaProducer, topic: str, replica: RedisServer) -> None:
        super().__init__(producer, topic, delivery_timeout=0.5)
        self.replica = replica
        self.armed = False
        self.rounds = 0

    async def send(self, records: Sequence[tuple[bytes, bytes | None]]) -> bool:
        clean = await super().send(records)
        if self.armed:
            self.rounds += 1
            if self.rounds == 1:
                promote(self.replica)
        return clean


@pytest.fixture
def replica(stack: Stack, processes: Processes, tmp_path: Path) -> RedisServer:
    """A replica of the stack's redis-server, in sync (killed with the test's processes)."""
    _, primary = require_local(stack)
    return start_replica(processes, primary, tmp_path / "replica")


def pipeline_on(client: Redis, publisher: Publisher, token: str, wait_replicas: int = 1) -> Pipeline[RatingState]:
    store = RedisStore(
        client, PREFIX, token, LEASE, 3600, wait_replicas=wait_replicas, wait_timeout_ms=100, codec=RATING_STATES
    )
    return Pipeline(ENGINE, store, publisher, hold_seconds=LEASE)


@pytest.mark.timeout(60)
async def test_an_acknowledgement_reaches_the_replica_before_the_next_round_is_sent(
    stack: Stack, replica: RedisServer
) -> None:
    await stack.create_topics(ratings=2)
    producer = AIOKafkaProducer(bootstrap_servers=stack.broker.bootstrap, acks="all")
    await producer.start()
    primary, promoted = Redis.from_url(stack.redis.url), Redis.from_url(replica.url)
    try:
        publisher = PromotingPublisher(producer, stack.ratings_topic, replica)
        first = pipeline_on(primary, publisher, "first")
        seeds: list[Item] = [SeedItem(SeedRow(p, Category.BLITZ, Hundredths(180000), 40), False) for p in "abcd"]
        await first.run(seeds)
        # Player a plays three games in one batch: three events of a/blitz go out in three rounds.
        games: list[Item] = [make_game(f"g{n}", "a", opponent) for n, opponent in enumerate("bcd", 1)]
        publisher.armed = True
        stuck = asyncio.create_task(first.run(games))
        await asyncio.sleep(2.0)  # its first round is out; the replica was promoted right after
        went_on = stuck.done()  # it must wait for a replica to hold the acknowledgement: for ever
        stuck.cancel()
        # The operator's failover: a worker on the promoted replica redelivers the batch.
        # The promoted replica has no replica of its own.
        second = pipeline_on(promoted, Publisher(producer, stack.ratings_topic, 0.5), "second", wait_replicas=0)
        await second.run(games)
    finally:
        await producer.stop()
        await primary.aclose()
        await promoted.aclose()
    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 4 + 6)
    result = audit(records)  # never an older seq after a newer one, gapless, rules exact
    assert [e.seq for e in result.by_key["a/blitz"]] == [1, 2, 3, 4]
    a_seqs = [json.loads(r.value or b"")["seq"] for r in sorted(records, key=lambda r: r.offset) if r.key == b"a/blitz"]
    assert a_seqs[:3] == [1, 2, 2], a_seqs  # round 0's event again, right after its original
    assert a_seqs[3:] == [3, 4], a_seqs
    assert not went_on, "the batch went on although no replica acknowledged its first round"


# --- a store that went back in time ---------------------------------------------------------------


def restore(stack: Stack) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "worker", "restore"], env=stack.env(), capture_output=True, timeout=120, check=False
    )


@pytest.mark.parametrize("lost", ["older-copy", "everything"])
@pytest.mark.timeout(150)
async def test_a_store_that_lost_acknowledged_writes_stops_the_worker_until_restore(
    stack: Stack, replica: RedisServer, lost: str
) -> None:
    sim = ArenaSimulation(60, seed=11)
    seed = stack.tmp / "seed.csv"
    seed.write_text(sim.seed_csv(), encoding="utf-8")
    await stack.create_topics(games=2, ratings=3)
    assert stack.import_seed(seed).returncode == 0
    lines = list(sim.game_lines(1500, 0.0, 0.0))
    first, second, third = lines[:500], lines[500:1000], lines[1000:]
    await stack.produce(first, keyed(first))
    worker = stack.start_worker()
    await _wait_total_committed(stack, len(first))
    # The replica stops replicating here: it holds the store as it was after `first`.
    promote(replica)
    await stack.produce(second, keyed(second))
    await _wait_total_committed(stack, len(first) + len(second))
    published = len(await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1))

    # Redis comes back on the same address without the writes of `second`: from the replica's
    # older copy (a failover to a replica that lagged), or with nothing at all.
    data = stack.tmp / "stale"
    data.mkdir()
    if lost == "older-copy":
        with redis.Redis(port=replica.port) as client:
            client.save()
        shutil.copy(Path(replica.directory) / "dump.rdb", data / "dump.rdb")
    _, old = require_local(stack)
    old.kill()
    stack.redis = stack.processes.redis(data, port=old.port)

    await stack.produce(third, keyed(third))
    await asyncio.sleep(6)
    # Nothing of `third` was applied on the stale store, and nothing was published from it.
    assert len(await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1)) == published
    assert await _total_committed(stack) == len(first) + len(second)
    assert worker.poll() is None, "the worker must wait, not exit"
    assert "the Redis store is not trusted" in stack.logs()
    r = stack.redis_client()
    assert r.get(keys.untrusted_key(PREFIX)) is not None

    done = restore(stack)
    assert done.returncode == 0, done.stderr
    assert b"the store is trusted" in done.stderr
    await _wait_total_committed(stack, len(lines))
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, published + 1)
    result = audit(records)
    # Redis ends in the state of each rating's last event: nothing computed from the lost state.
    for key, state in result.final_states().items():
        stored = r.get(keys.state_key(PREFIX, key))
        assert isinstance(stored, bytes) and decode_state(stored) == state, key
    assert r.get(keys.untrusted_key(PREFIX)) is None


async def _total_committed(stack: Stack) -> int:
    return sum((await committed(stack.broker.bootstrap, f"group-{stack.name}", stack.games_topic, 2)).values())


async def _wait_total_committed(stack: Stack, total: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while await _total_committed(stack) < total:
        if time.monotonic() > deadline:
            raise AssertionError(f"{total} records not committed in {timeout} s")
        await asyncio.sleep(0.3)


@pytest.mark.timeout(30)
async def test_another_process_writing_after_a_loss_does_not_hide_it(stack: Stack, replica: RedisServer) -> None:
    """A's write is lost with a failover; B then writes on the promoted store, raising the shared
    counter back above what A saw: A's own `seen` key still shows the loss."""
    primary, promoted = Redis.from_url(stack.redis.url), Redis.from_url(replica.url)
    try:
        a = RedisStore(primary, PREFIX, "A", 60, 3600, codec=RATING_STATES)
        (write, _), (later, _) = seed_write("a", 180000), seed_write("c", 170000)
        assert (await a.apply([write]))[0] == [True]
        await asyncio.sleep(0.3)  # replicated
        promote(replica)  # the failover: the replica stops following the primary here
        assert (await a.apply([later]))[0] == [True]  # acknowledged by the primary only: lost
        a.redis = promoted  # A and B now talk to the promoted replica
        a._read, a._apply, a._ack = (promoted.register_script(x.script) for x in (a._read, a._apply, a._ack))
        b = RedisStore(promoted, PREFIX, "B", 60, 3600, codec=RATING_STATES)
        for player in "bde":  # B writes: the shared counter passes what A saw
            assert (await b.apply([seed_write(player, 150000)[0]]))[0] == [True]
        with pytest.raises(StoreUntrusted, match="as process A saw them"):
            await a.read(["a/blitz"], [])
        with pytest.raises(StoreUntrusted):  # and B too, from then on
            await b.read(["b/blitz"], [])
    finally:
        await primary.aclose()
        await promoted.aclose()
