"""Input that the Kafka client cannot hand over never stops the fleet (issue 26, item 6).

- Batches compressed with each codec Kafka defines, by another client (confluent-kafka), bad
  records among them, are rated and dead-lettered by a real worker like any other input.
- The worker's own output and dead letters go out compressed with RATING_KAFKA_COMPRESSION_TYPE.
- A record whose header key is not UTF-8 (`\\xff\\xfe`) in the middle of a batch: the games
  before it are rated, its partition alone is paused (one log line naming partition and offset,
  the metric), the other partition keeps flowing, a restarted worker pauses at the same place;
  `rating-worker dead-letter-unreadable` has the paused worker dead-letter it as
  `invalid_encoding` with its original bytes and rate the games after it, once; `rebuild`
  reads past it as the workers did and agrees with them. No traceback anywhere.
"""

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from tests.faults.proxy import Proxy
from tests.support import commands, prometheus
from tests.support import records as game_records
from tests.support.audit import audit, read_store
from tests.support.batches import CODECS, NOT_UTF8, RawRecord, batch_codecs, produce_compressed, produce_raw_batch
from tests.support.kafka import Record, read_topic
from tests.support.stack import Stack, require_local
from worker.embedded.stack import free_port
from worker.systems.arena.traffic import ArenaSimulation

pytestmark = pytest.mark.integration

PAUSED = "rating_partition_paused_at_offset"


def command(stack: Stack, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return commands.run(
        [sys.executable, "-m", "worker", *args],
        env=stack.env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def log_lines(stack: Stack, n: int) -> Iterator[dict[str, object]]:
    for line in (stack.tmp / f"worker-{n}.log").read_text(errors="replace").splitlines():
        if line.startswith("{"):
            yield json.loads(line)


async def wait_for(check: Callable[[], bool], stack: Stack, what: str, timeout: float = 60) -> None:
    """Until `check()`, the latest worker started staying alive meanwhile."""
    deadline = time.monotonic() + timeout
    while not check():
        stack.assert_alive([len(stack.workers) - 1])
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{stack.logs_tail()}"
        await asyncio.sleep(0.3)


async def wait_committed(stack: Stack, end: dict[int, int], timeout: float = 60) -> None:
    """Until the group committed `end`, the latest worker alive meanwhile (a crash fails at once)."""
    deadline = time.monotonic() + timeout
    while True:
        stack.assert_alive([len(stack.workers) - 1])
        done = await stack.committed(max(end) + 1)
        if all(done[p] >= end[p] for p in end):
            return
        assert time.monotonic() < deadline, f"offsets not committed in {timeout} s: {done} < {end}\n{stack.logs_tail()}"
        await asyncio.sleep(0.3)


def no_traceback(stack: Stack) -> None:
    logs = stack.logs()
    assert "Traceback" not in logs and '"exception"' not in logs, logs[-3000:]


def paused_at(port: int) -> float | None:
    """The worker's rating_partition_paused_at_offset of partition 0 (None: no such series; NaN:
    the worker does not answer yet)."""
    try:
        samples = prometheus.parse_scrape(prometheus.scrape(port))
    except OSError:
        return float("nan")
    return samples.get((PAUSED, (("partition", "0"),)))


def game_ids(lines: list[bytes]) -> set[str]:
    return {json.loads(line)["game_id"] for line in lines}


def rated_once(stack: Stack, output: list[Record], good: list[bytes]) -> None:
    """The output audits clean (each game once, gapless seq, the rules' numbers) and every
    good game, and nothing else, is recorded in Redis."""
    audit(output)
    ids = game_ids(good)
    assert game_records.recorded(stack.redis_client(), ids) == ids, "a game was not rated"
    assert read_store(stack.redis.url, ids).unknown_records == 0, "a record of a game never produced"


async def test_batches_of_every_codec_with_bad_records_among_them_are_rated_and_dead_lettered(stack: Stack) -> None:
    """The audit's first reproduction: an lz4 batch stopped `run`, and the valid game before it
    in the same fetch was never rated. Now every codec, one per partition."""
    codecs = ("gzip", "snappy", "lz4", "zstd")
    await stack.create_topics(games=len(codecs), ratings=2)
    sim = stack.seeded_simulation(60, seed=26)
    lines = list(sim.game_lines(40 * len(codecs)))
    bad = [b"{not json", b"\xff\xfe\x00garbage"]
    produced: dict[int, list[bytes]] = {}
    for p, codec in enumerate(codecs):
        own = lines[40 * p : 40 * (p + 1)]
        produced[p] = [*own[:20], *bad, *own[20:]]
        await asyncio.to_thread(produce_compressed, stack.broker.bootstrap, stack.games_topic, p, produced[p], codec)
        stored = await batch_codecs(stack.broker.bootstrap, stack.games_topic, p)
        assert stored and set(stored) == {CODECS[codec]}, f"partition {p}: batches of codecs {stored}, not {codec}"
    stack.start_worker()
    await wait_committed(stack, {p: len(values) for p, values in produced.items()})
    letters = await read_topic(stack.broker.bootstrap, stack.dlq_topic, len(bad) * len(codecs), idle=0.5)
    assert sorted((int(d.headers["source.partition"]), int(d.headers["source.offset"]), d.value) for d in letters) == [
        (p, 20 + i, value) for p in range(len(codecs)) for i, value in enumerate(bad)
    ]
    output = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1)
    rated_once(stack, output, lines)
    no_traceback(stack)


async def test_the_output_and_dead_letters_compressed_with_lz4_are_read_back(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    sim = ArenaSimulation(40, seed=27)
    seed = stack.tmp / "seed.csv"
    seed.write_text(sim.seed_csv())
    imported = stack.import_seed(seed, kafka_compression_type="lz4")  # its `imported` events too
    assert imported.returncode == 0, imported.stderr.decode(errors="replace")
    lines = list(sim.game_lines(60))
    await stack.produce([*lines[:30], b"{not json", *lines[30:]])
    stack.start_worker(kafka_compression_type="lz4")
    await wait_committed(stack, {0: len(lines) + 1})
    output = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1)
    rated_once(stack, output, lines)
    letters = await read_topic(stack.broker.bootstrap, stack.dlq_topic, 1, idle=0.5)
    assert [(d.value, d.headers["error.kind"]) for d in letters] == [(b"{not json", "invalid_json")]
    for topic, partitions in ((stack.ratings_topic, 2), (stack.dlq_topic, 1)):
        stored = [c for p in range(partitions) for c in await batch_codecs(stack.broker.bootstrap, topic, p)]
        assert stored and set(stored) == {CODECS["lz4"]}, f"{topic}: batches of codecs {stored}"


async def test_a_fetch_failing_while_the_partitions_are_being_assigned_skips_none_of_the_others(stack: Stack) -> None:
    """The first fetch fails at an unreadable record while the worker still takes its partitions
    (Redis slowed: its rebalance listener still reads the watermarks and has not found where the
    group starts). The failed call may have consumed other partitions' records without handing
    them over: they are read again from where the group starts them, never skipped. (CI saw it:
    partition 1's records were skipped, its start taken from the position the failed call left.)
    The partitions come back from a fetch in a random order: with 12 of them, the unreadable one
    is rarely the first."""
    _, redis_server = require_local(stack)
    partitions, per_partition = 12, 4
    await stack.create_topics(games=partitions, ratings=2)
    sim = stack.seeded_simulation(60, seed=62)
    lines = list(sim.game_lines(6 + per_partition * (partitions - 1)))
    bad = RawRecord(lines[3], b"bad-key", [(NOT_UTF8, b"v")])
    bootstrap, topic = stack.broker.bootstrap, stack.games_topic
    assert await produce_raw_batch(bootstrap, topic, 0, [RawRecord(v) for v in lines[:3]] + [bad]) == 0
    others = lines[6:]
    for p in range(1, partitions):
        own = others[per_partition * (p - 1) : per_partition * p]
        await asyncio.to_thread(produce_compressed, bootstrap, topic, p, own, "none")
    proxy = Proxy(upstream_port=redis_server.port)
    proxy.start()
    try:
        proxy.delay = 0.4  # each way: the listener's read of the watermarks takes a second or more
        port = free_port()
        stack.start_worker(metrics_port=port, redis_url=proxy.redis_url)
        await wait_for(lambda: paused_at(port) == 3, stack, "the metric of the paused partition")
        proxy.delay = 0
        await wait_committed(stack, {0: 3, **{p: per_partition for p in range(1, partitions)}})
    finally:
        proxy.stop()
    output = await read_topic(bootstrap, stack.ratings_topic, 1)
    rated_once(stack, output, [*lines[:3], *others])
    no_traceback(stack)


async def test_a_header_key_that_is_not_utf8_pauses_its_partition_alone_until_an_operator_has_it_dead_lettered(
    stack: Stack,
) -> None:
    await stack.create_topics(games=2, ratings=2)
    sim = stack.seeded_simulation(40, seed=61)
    lines = list(sim.game_lines(90))
    before, inside, after, other = lines[:20], lines[20:27], lines[27:40], lines[40:90]
    # Partition 0: 20 games, then one batch (offsets 20-26) of three games, the unreadable record
    # (offset 23, itself a valid game: it must be dead-lettered, not rated), three games; then 13 games.
    bad = RawRecord(inside[3], b"bad-key", [(b"trace", b"t-1"), (NOT_UTF8, b"v"), (b"error.kind", b"x")])
    batch = [RawRecord(v) for v in inside[:3]] + [bad] + [RawRecord(v) for v in inside[4:]]
    good = [*before, *inside[:3], *inside[4:], *after, *other]
    bootstrap, topic = stack.broker.bootstrap, stack.games_topic
    await asyncio.to_thread(produce_compressed, bootstrap, topic, 0, before, "none")
    assert await produce_raw_batch(bootstrap, topic, 0, batch) == 20
    await asyncio.to_thread(produce_compressed, bootstrap, topic, 0, after, "none")
    await asyncio.to_thread(produce_compressed, bootstrap, topic, 1, other[:30], "none")

    port = free_port()
    stack.start_worker(metrics_port=port)
    # The three games before it in its batch are rated; partition 1 goes on.
    await wait_committed(stack, {0: 23, 1: 30})
    await wait_for(lambda: paused_at(port) == 23, stack, "the metric of the paused partition")
    await asyncio.to_thread(produce_compressed, bootstrap, topic, 1, other[30:], "none")
    await wait_committed(stack, {1: 50})
    assert (await stack.committed(2))[0] == 23
    paused = [e for e in log_lines(stack, 0) if e.get("partition") == 0 and e.get("offset") == 23]
    assert len(paused) == 1 and paused[0]["level"] == "error", paused
    message = str(paused[0]["message"])
    assert f"{topic} partition 0" in message and "offset 23" in message, message
    assert "dead-letter-unreadable --partition 0 --offset 23" in message, message

    # A restarted worker stops at the same place, and only there.
    stack.workers[0].send_signal(signal.SIGTERM)
    assert stack.workers[0].wait(timeout=20) == 0
    port = free_port()
    stack.start_worker(metrics_port=port)
    await wait_for(lambda: paused_at(port) == 23, stack, "the restarted worker to pause partition 0 at 23")

    # The way past: the paused worker dead-letters it and rates the rest, inside its group.
    moved = command(stack, "dead-letter-unreadable", "--partition", "0", "--offset", "23")
    assert moved.returncode == 0, moved.stderr
    assert "1 unreadable record dead-lettered (offset 23)" in moved.stderr, moved.stderr
    await wait_committed(stack, {0: 40, 1: 50})
    await wait_for(lambda: paused_at(port) is None, stack, "the paused series to go")

    letters = await read_topic(bootstrap, stack.dlq_topic, 1, idle=0.5)
    assert len(letters) == 1
    letter = letters[0]
    assert (letter.key, letter.value) == (b"bad-key", inside[3])
    assert letter.headers["trace"] == "t-1"  # the UTF-8 header kept, one named like an error header renamed
    assert letter.headers["original.error.kind"] == "x"
    assert letter.headers["error.kind"] == "invalid_encoding"
    assert "\\xff\\xfe" in letter.headers["error.message"], letter.headers["error.message"]
    assert (letter.headers["source.topic"], letter.headers["source.partition"], letter.headers["source.offset"]) == (
        topic,
        "0",
        "23",
    )
    output = await read_topic(bootstrap, stack.ratings_topic, 1)
    rated_once(stack, output, good)
    assert not game_records.recorded(stack.redis_client(), game_ids([inside[3]])), "the unreadable game was rated"
    no_traceback(stack)

    # rebuild reads past it as the workers did, with one line naming it.
    built = command(stack, "rebuild", "--seed", str(stack.tmp / "seed.csv"))
    assert built.returncode == 0, built.stderr
    assert "Traceback" not in built.stderr, built.stderr
    named = [line for line in built.stderr.splitlines() if f"{topic} partition 0 offset 23" in line]
    assert len(named) == 1 and "invalid_encoding" in named[0], built.stderr
    # Every record but that one, as the worker rated them (the ratings may differ: rebuild applies
    # the games in finished_at order, the worker applied partition 0's later ones after partition 1's).
    assert f"read {len(good)} records (0 bad), {len(good)} games" in built.stderr, built.stderr
