"""A consumer group that lost its offsets, or was rewound, re-reads games whose idempotency
records have expired: the watermarks Redis keeps per input partition keep them from being
applied twice.

The records' expiry is simulated by deleting them (their retention is at least a minute);
the offsets' loss by a group id the broker has never seen, and a rewind by committing 0.
"""

import asyncio
import signal

import pytest
from aiokafka import AIOKafkaConsumer

from tests.support.audit import audit
from tests.support.games import keyed
from tests.support.kafka import read_topic
from tests.support.stack import Stack
from worker.store import keys
from worker.systems.arena.traffic import ArenaSimulation

pytestmark = [pytest.mark.integration, pytest.mark.faults]

PREFIX = "rating:"
PARTITIONS = 2


async def commit_zero(stack: Stack, group: str) -> None:
    """An operator resets the group to the beginning (kafka-consumer-groups --reset-offsets):
    here a member of the group commits offset 0 for every partition it is assigned."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=stack.broker.bootstrap,
        group_id=group,
        enable_auto_commit=False,
        session_timeout_ms=3000,
        heartbeat_interval_ms=1000,
    )
    consumer.subscribe([stack.games_topic])
    await consumer.start()
    try:
        while len(consumer.assignment()) < PARTITIONS:
            await consumer.getmany(timeout_ms=200)
        await consumer.commit(dict.fromkeys(consumer.assignment(), 0))
    finally:
        await consumer.stop()


@pytest.mark.parametrize("rewind", ["new-group", "offsets-reset"])
@pytest.mark.timeout(120)
async def test_a_rewound_group_applies_no_game_twice_after_its_records_expired(stack: Stack, rewind: str) -> None:
    sim = ArenaSimulation(40, seed=5)
    seed = stack.tmp / "seed.csv"
    seed.write_text(sim.seed_csv(), encoding="utf-8")
    await stack.create_topics(games=PARTITIONS, ratings=2)
    assert stack.import_seed(seed).returncode == 0
    lines = list(sim.game_lines(600, 0.0, 0.0))
    first, later = lines[:400], lines[400:]
    await stack.produce(first, keyed(first))
    group = f"group-{stack.name}"
    worker = stack.start_worker()
    end = await stack.games_ends()
    await stack.wait_committed(end)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    published = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1)

    r = stack.redis_client()
    marks = {int(p): int(o) for p, o in r.hgetall(keys.watermark_key(PREFIX, stack.games_topic)).items()}
    assert marks == end  # the batch's last apply raised them to what was committed
    expired = list(r.scan_iter(f"{PREFIX}{keys.RECORDS}*"))  # every record, as if the retention had passed
    assert expired and r.delete(*expired) == len(expired)
    assert not list(r.scan_iter(f"{PREFIX}{keys.GAME}*"))  # a new store: compact records only

    if rewind == "new-group":
        group = f"renamed-{stack.name}"
    else:
        await commit_zero(stack, group)
    worker = stack.start_worker(kafka_group_id=group)
    await stack.produce(later, keyed(later))
    end = await stack.games_ends()
    await _wait_group(stack, group, end)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0

    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, len(published) + 1)
    result = audit(records)  # one event per change, gapless: no game of `first` applied again
    first_ids = {g for g in result.game_ids if f'"game_id":"{g}"'.encode() in b"\n".join(first)}
    assert first_ids == {e.game_id for e in (audit(published).events.values()) if e.game_id is not None}
    assert len(result.events) > len(audit(published).events)  # `later` was applied
    logs = stack.logs()
    if rewind == "new-group":
        assert "has no committed offset but Redis has applied it up to" in logs
    else:
        assert "taken as duplicates, not applied again" in logs


async def _wait_group(stack: Stack, group: str, end: dict[int, int], timeout: float = 60) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        done = await stack.committed(PARTITIONS, group)
        if all(done[p] >= n for p, n in end.items()):
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"group {group} did not commit {end}: {done}")
        await asyncio.sleep(0.3)


@pytest.mark.timeout(60)
async def test_a_batch_of_bad_records_alone_raises_its_watermark(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    await stack.produce([b"{not json", b"[1, 2]"])
    worker = stack.start_worker()
    await stack.wait_committed({0: 2})
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    r = stack.redis_client()
    # Every record below 2 is done (dead-lettered): a switch-over waiting for them is not held up.
    assert r.hget(keys.watermark_key(PREFIX, stack.games_topic), "0") == b"2"


@pytest.mark.timeout(60)
async def test_a_partition_ending_below_its_watermark_stops_the_worker_with_the_reason(stack: Stack) -> None:
    """The input topic was recreated since the watermark was kept: its records below it are new
    games, which must not be taken as done."""
    await stack.create_topics(games=1, ratings=2)
    r = stack.redis_client()
    r.hset(keys.watermark_key(PREFIX, stack.games_topic), "0", 1000)  # left by the old topic
    sim = ArenaSimulation(10, seed=3)
    await stack.produce(list(sim.game_lines(20, 0.0, 0.0)))
    worker = stack.start_worker()
    assert worker.wait(timeout=40) == 1
    assert "ends at offset 20, below its watermark 1000" in stack.logs()
    assert not list(r.scan_iter(f"{PREFIX}{keys.RECORDS}*")), "no game was taken as done, none was applied"
