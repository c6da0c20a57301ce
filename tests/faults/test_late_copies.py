"""Produce requests that reach the broker late, and erasures around them (issue 26, items 1 to 3).

A proxy in front of the broker (`RequestHolder`; the broker advertises the proxy's address, so
every client goes through it after its first metadata call) holds one produce request of the
ratings topic past the workers' delivery timeout, then forwards it on its original connection:
the client gave up on it, but it still reaches the broker, within the publication lease after it
was abandoned. The contract allows a copy after a newer event of its key only beyond the lease:

- one worker: the late copy comes before the next event of its ratings (the worker holds them);
- a worker killed as it gives up the request: the other worker does not publish a later event of
  its ratings before the lease, counted from the dead worker's last renewal, has run out;
- the client resending by itself after a cut connection, the cut request forwarded late;
- an `erase` right after the request was given up: the tombstone comes after the late copy;
- an `erase` whose tombstones are dropped, or which is stopped by a signal: its leases stay,
  the player's next game waits for them, and the same erase run again completes it.
"""

import asyncio
import dataclasses
import json
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from tests.faults.proxy import RequestHolder, kafka_client_id
from tests.support.audit import audit, seq_regressions
from tests.support.kafka import Record, read_topic
from tests.support.stack import Stack, require_local
from worker.service.connections import KAFKA_CLIENT_ID

pytestmark = [pytest.mark.integration, pytest.mark.faults, pytest.mark.timeout(120)]

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "samples/seed.csv"
PLAYER, OTHER, THIRD = "p00000", "p00003", "p00006"  # seeded in every category
KEY = f"{PLAYER}/blitz".encode()
# The delivery timeout (2 s) gives a request up; it is held 5 s, so it reaches the broker about
# 3 s after it was given up: within the publication lease (6 s) after that.
LEASE: dict[str, object] = {"publication_lease_seconds": 6, "producer_delivery_timeout_seconds": 2}
HOLD = 5.0
GIVEN_UP = "kafka_publish failed"  # the worker's warning when it gives a request up


@pytest.fixture
async def held(stack: Stack) -> AsyncIterator[tuple[Stack, RequestHolder]]:
    """The stack with a broker of its own behind a `RequestHolder`, which only the workers' and
    the commands' connections (their Kafka client id) go through faulted."""
    require_local(stack)
    proxy = RequestHolder(topic=stack.ratings_topic)
    port = proxy.start()
    try:
        proxied = await asyncio.to_thread(stack.processes.broker, port)  # killed with the test's processes
        proxy.upstream_port = proxied.port
        proxy.target = lambda first: kafka_client_id(first) == KAFKA_CLIENT_ID
        yield dataclasses.replace(stack, broker=proxied), proxy
    finally:
        proxy.stop()


def game(game_id: str, white: str = PLAYER, black: str = OTHER) -> bytes:
    return json.dumps(
        {
            "event_id": f"evt-{game_id}",
            "game_id": game_id,
            "finished_at": "2026-11-01T09:00:00Z",
            "rated": True,
            "time_control": {"base_seconds": 300, "increment_seconds": 3},  # blitz
            "white_id": white,
            "black_id": black,
            "result": "1-0",
            "termination": "resignation",
        }
    ).encode()


async def produce(stack: Stack, values: list[bytes], partition: int = 0) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=stack.broker.bootstrap, acks="all")
    await producer.start()
    try:
        for value in values:
            key = json.loads(value)["game_id"].encode()
            await producer.send_and_wait(stack.games_topic, value, key=key, partition=partition)
    finally:
        await producer.stop()


def command(stack: Stack, *args: str, **settings: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "worker", *args],
        env=stack.env(log_level="error", **{**LEASE, **settings}),
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


async def logged(stack: Stack, text: str, timeout: float = 20.0) -> int:
    """The worker whose log says `text` first (polled every 20 ms)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for n in range(len(stack.workers)):
            path = stack.tmp / f"worker-{n}.log"
            if path.exists() and text in path.read_text(errors="replace"):
                return n
        await asyncio.sleep(0.02)
    raise AssertionError(f"no worker logged {text!r} in {timeout} s\n{stack.logs()[-3000:]}")


async def seeded(stack: Stack, games: int = 1) -> None:
    await stack.create_topics(games=games, ratings=1)
    done = stack.import_seed(SEED)
    assert done.returncode == 0, done.stderr


async def released(proxy: RequestHolder, timeout: float = 30.0) -> None:
    """Until the held request went through to the broker (and a moment for the broker to take it)."""
    deadline = time.monotonic() + timeout
    while not proxy.released_at:
        assert time.monotonic() < deadline, "the held request was not forwarded"
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)


async def ratings_topic(stack: Stack) -> list[Record]:
    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1, timeout=30)
    return sorted(records, key=lambda r: (r.partition, r.offset))


def strict_audit(records: list[Record]) -> None:
    """The contract, with no late copy allowed: never an older seq after a newer one of its key."""
    try:
        audit([r for r in records if r.value is not None])
    except AssertionError as e:
        e.add_note(seq_regressions([r for r in records if r.value is not None]))
        raise


def copies(records: list[Record], key: bytes) -> int:
    seen: set[bytes] = set()
    repeated = 0
    for r in records:
        if r.key == key and r.value is not None:
            repeated += r.value in seen
            seen.add(r.value)
    return repeated


@pytest.mark.parametrize("cut_client", [False, True], ids=["given-up", "resent-after-a-cut"])
async def test_a_request_that_reaches_the_broker_late_comes_before_any_newer_event_of_its_ratings(
    held: tuple[Stack, RequestHolder], cut_client: bool
) -> None:
    """g2's events are held: the client gives the request up after 2 s and the worker sends them
    again at once, or (`cut_client`) the client's connection is cut and aiokafka resends them by
    itself, reporting a success; the held copy reaches the broker 3 s later, and must still come
    before g3's event of the same player."""
    stack, proxy = held
    await seeded(stack)
    stack.start_worker(**LEASE)
    await produce(stack, [game("g1")])
    await stack.wait_committed({0: 1})
    proxy.hold(1, HOLD, cut_client=cut_client)
    await produce(stack, [game("g2"), game("g3", PLAYER, THIRD)])
    await stack.wait_committed({0: 3}, timeout=60)
    await released(proxy)
    records = await ratings_topic(stack)
    assert copies(records, KEY) >= 1, "the late copy did not reach the topic"
    strict_audit(records)


async def test_a_worker_killed_as_it_gives_a_request_up_keeps_the_others_off_its_ratings_for_a_lease(
    held: tuple[Stack, RequestHolder],
) -> None:
    stack, proxy = held
    await seeded(stack, games=2)
    settings: dict[str, object] = {"publication_lease_seconds": 8, "producer_delivery_timeout_seconds": 2}
    for _ in range(2):
        stack.start_worker(**settings)
    await produce(stack, [game("g0", OTHER, THIRD)], partition=0)
    await produce(stack, [game("g1", THIRD, OTHER)], partition=1)
    await stack.wait_committed({0: 1, 1: 1})
    assert stack.holds_partitions(0) and stack.holds_partitions(1), "each worker holds one partition"
    # Held 9.8 s: it reaches the broker 7.8 s after it was given up (within the 8 s lease), and
    # later than the lease counted from the claim before it (8 s): another worker that took the
    # ratings over then would publish a later event before it.
    proxy.hold(1, 9.8)
    await produce(stack, [game("g2")], partition=0)
    dying = await logged(stack, GIVEN_UP)
    stack.workers[dying].kill()
    # A game of the same player on the other worker's partition: his rating's outbox is the dead
    # worker's until its lease runs out.
    await produce(stack, [game("g3", PLAYER, THIRD)], partition=1)
    await stack.wait_committed({0: 2, 1: 2}, timeout=90)
    await released(proxy)
    records = await ratings_topic(stack)
    strict_audit(records)


async def test_an_erase_right_after_a_request_was_given_up_publishes_its_tombstone_after_the_late_copy(
    held: tuple[Stack, RequestHolder],
) -> None:
    stack, proxy = held
    await seeded(stack)
    worker = stack.start_worker(**LEASE)
    await produce(stack, [game("g1")])
    await stack.wait_committed({0: 1})
    proxy.hold(1, HOLD)
    await produce(stack, [game("g2")])
    await logged(stack, GIVEN_UP)
    refusals = 0
    while True:  # as an operator would: again while a worker holds his ratings
        done = command(stack, "erase", PLAYER, "--category", "blitz")
        if done.returncode == 0:
            break
        assert "is being published by a worker" in done.stderr, done.stderr
        refusals += 1
        await asyncio.sleep(0.5)
    await stack.wait_committed({0: 2})
    await released(proxy)
    records = await ratings_topic(stack)
    ours = [r for r in records if r.key == KEY]
    tombstone = next(n for n, r in enumerate(ours) if r.value is None)
    after = [json.loads(r.value)["seq"] for r in ours[tombstone:] if r.value is not None]
    assert not after, f"{PLAYER}/blitz: events after the tombstone: seq {after}"
    assert copies(records, KEY) >= 1, "the late copy did not reach the topic"
    # A restore from the topic does not bring him back.
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    stack.redis_client().flushall()
    restored = command(stack, "restore")
    assert restored.returncode == 0, restored.stderr
    assert stack.redis_client().get(f"rating:s:{PLAYER}/blitz") is None
    print(f"\nerase refused {refusals} times while the worker held {PLAYER}/blitz")


async def test_an_erase_that_fails_or_is_stopped_keeps_its_leases_and_run_again_completes(
    held: tuple[Stack, RequestHolder],
) -> None:
    stack, proxy = held
    await seeded(stack)
    seeded_records = len([rec for rec in await ratings_topic(stack) if rec.key == KEY])
    slow: dict[str, object] = {"publication_lease_seconds": 10, "command_retry_seconds": 2}
    proxy.dropping = True  # the tombstones never reach the broker
    failed = command(stack, "erase", PLAYER, "--category", "blitz", **slow)
    assert failed.returncode == 1 and "tombstones are NOT published" in failed.stderr, failed.stderr
    r = stack.redis_client()
    assert r.get(f"rating:l:{PLAYER}/blitz") == f"erase:{PLAYER}".encode()
    assert r.get(f"rating:s:{PLAYER}/blitz") is None
    # Stopped by a signal while it tries: the leases stay too.
    stopping = subprocess.Popen(
        [sys.executable, "-m", "worker", "erase", PLAYER, "--category", "blitz"],
        env=stack.env(log_level="error", **{**LEASE, **slow, "command_retry_seconds": 30}),
        stderr=subprocess.DEVNULL,
    )
    await asyncio.sleep(3)
    stopping.send_signal(signal.SIGTERM)
    assert stopping.wait(timeout=30) == 1
    assert r.get(f"rating:l:{PLAYER}/blitz") == f"erase:{PLAYER}".encode()
    # His next game is applied, but not published while the erase's leases hold it.
    stack.start_worker(**{**LEASE, "publication_lease_seconds": 10})
    await produce(stack, [game("g9")])
    for _ in range(100):
        if r.get(f"rating:s:{PLAYER}/blitz") is not None:
            break
        await asyncio.sleep(0.05)
    assert r.get(f"rating:s:{PLAYER}/blitz") is not None, "the game was not applied"
    await asyncio.sleep(1.0)
    before = [rec for rec in await ratings_topic(stack) if rec.key == KEY]
    assert len(before) == seeded_records, f"his new game was published before any tombstone: {before}"
    proxy.dropping = False
    done = command(stack, "erase", PLAYER, "--category", "blitz", **slow)
    assert done.returncode == 0, done.stderr
    # The runs before may still have a tombstone on its way: the leases run out as they would have.
    assert r.pttl(f"rating:l:{PLAYER}/blitz") > 0, "the run again released what the runs before owed"
    await stack.wait_committed({0: 1}, timeout=60)
    ours = [rec for rec in await ratings_topic(stack) if rec.key == KEY]
    tombstone = next(n for n, rec in enumerate(ours) if rec.value is None)
    after = [json.loads(rec.value)["seq"] for rec in ours[tombstone + 1 :] if rec.value is not None]
    assert after == [1], f"after the tombstone: {after}; before it: {ours[:tombstone]}"
    assert all(rec.value is not None for rec in ours[:tombstone])
