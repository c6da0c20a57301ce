"""The streaming worker against a real broker and a real Redis: one worker at a time."""

import asyncio
import json
import signal
import time
from collections import defaultdict
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from tests.support import records as game_records
from tests.support.audit import audit, read_store
from tests.support.kafka import read_topic
from tests.support.rate import rate
from tests.support.stack import Stack
from worker.systems.arena.traffic import ArenaSimulation

REPO = Path(__file__).resolve().parents[3]
SAMPLE, SAMPLE_SEED = REPO / "samples/games.jsonl", REPO / "samples/seed.csv"

pytestmark = pytest.mark.integration


def offline(games: Path, seed: Path) -> list[bytes]:
    done = rate(games, "--seed", seed, "--dlq", "/dev/null")
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


async def test_one_worker_one_partition_publishes_exactly_what_rate_produces(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=4)
    imported = stack.import_seed(SAMPLE_SEED)
    assert imported.returncode == 0, imported.stderr
    lines = SAMPLE.read_bytes().splitlines()
    await stack.produce(lines)
    stack.start_worker()
    await stack.wait_committed({0: len(lines)})
    expected = offline(SAMPLE, SAMPLE_SEED)
    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, len(expected))
    published = [r.value or b"" for r in records]
    # Same events, byte for byte; per rating in the same order (across ratings the output
    # partitions interleave them differently).
    assert sorted(published) == sorted(expected)
    per_key: dict[bytes, list[bytes]] = defaultdict(list)
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        assert r.key is not None and r.value is not None
        per_key[r.key].append(r.value)
    expected_per_key: dict[bytes, list[bytes]] = defaultdict(list)
    for value in expected:
        e = json.loads(value)
        expected_per_key[f"{e['player_id']}/{e['category']}".encode()].append(value)
    assert per_key == expected_per_key
    audit(records)


async def test_bad_input_is_dead_lettered_with_its_kind_and_changes_nothing(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    assert stack.import_seed(SAMPLE_SEED).returncode == 0
    sim = ArenaSimulation(40, seed=7)
    sim.players = [p for p in sim.players if p.established]  # all rated: every game publishes
    good = [json.dumps(sim.game()).encode() for _ in range(50)]
    first = json.loads(good[0])
    conflicting = dict(first, result="0-1" if first["result"] != "0-1" else "1-0", event_id="other")
    bad: list[tuple[bytes | None, bytes, str]] = [
        (b"k1", b"\xff\xfe\x00garbage", "invalid_encoding"),
        (None, b"{not json", "invalid_json"),
        (b"k3", b"[1, 2]", "invalid_schema"),
        (b"k4", json.dumps(dict(first, game_id="other/../id")).encode(), "invalid_schema"),
        (b"k5", json.dumps(dict(first, game_id="g-rated-int", rated=1)).encode(), "invalid_schema"),
        (b"k6", json.dumps(conflicting).encode(), "conflicting_duplicate"),
        (b"k7", json.dumps(dict(first, game_id="huge", pad="x" * 5000)).encode(), "too_large"),
    ]
    values = [good[0], *[v for _, v, _ in bad], *good[1:]]
    keys: list[bytes | None] = [b"g0", *[k for k, _, _ in bad], *[None] * 49]
    await stack.produce(values, keys)
    r = stack.redis_client()
    stack.start_worker(max_message_bytes=4096)
    await stack.wait_committed({0: len(values)})
    letters = await read_topic(stack.broker.bootstrap, stack.dlq_topic, len(bad))
    assert [(d.key, d.headers["error.kind"]) for d in letters] == [(k, kind) for k, _, kind in bad]
    for letter, (_, value, kind), offset in zip(letters, bad, range(1, 8), strict=True):
        assert letter.value == (value[:4096] if kind == "too_large" else value)
        assert letter.headers["source.topic"] == stack.games_topic
        assert letter.headers["source.partition"] == "0"
        assert letter.headers["source.offset"] == str(offset)
        assert letter.headers["error.message"]
    # The bad records changed nothing: the ratings are those of the good games alone.
    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1)
    tally = audit(records)
    games_published = tally.game_ids
    assert games_published == {json.loads(g)["game_id"] for g in good} & games_published
    assert "other/../id" not in games_published and "huge" not in games_published
    good_ids = {json.loads(g)["game_id"] for g in good}
    assert first["game_id"] in game_records.recorded(r, [first["game_id"]])
    assert read_store(stack.redis.url, good_ids).unknown_records == 0  # no record of a bad game


async def test_sigterm_under_load_exits_0_within_the_grace_and_loses_nothing(stack: Stack) -> None:
    await stack.create_topics(games=4, ratings=4)
    sim = ArenaSimulation(200, seed=11)
    seed = stack.tmp / "seed.csv"
    seed.write_text(sim.seed_csv())
    assert stack.import_seed(seed).returncode == 0
    lines = list(sim.game_lines(6000))
    await stack.produce(lines, [json.loads(line)["game_id"].encode() for line in lines])
    worker = stack.start_worker(shutdown_grace_seconds=10, batch_size=200)
    await asyncio.sleep(3.0)  # joined and busy
    worker.send_signal(signal.SIGTERM)
    started = time.monotonic()
    status = worker.wait(timeout=15)
    assert status == 0, stack.logs()[-3000:]
    assert time.monotonic() - started < 10
    stack.start_worker()
    end = await stack.games_ends()
    await stack.wait_committed(end)
    tally = audit(await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1))
    r = stack.redis_client()
    ids = {json.loads(line)["game_id"] for line in lines}
    assert game_records.recorded(r, ids) == ids, "a game was lost"
    assert tally.events


@pytest.mark.timeout(60)
async def test_a_dead_letter_larger_than_kafka_takes_is_cut_to_fit_and_the_partition_goes_on(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    assert stack.import_seed(SAMPLE_SEED).returncode == 0
    # A bad record whose key and headers alone pass the worker's 1 MiB request limit: Kafka would
    # refuse its dead letter for good (before: retried for ever, the partition blocked behind it).
    key, value = b"k" * 300_000, b"{not json" + b" " * 30_000
    headers = [("trace", b"t" * 400_000), ("error.kind", b"spoofed"), ("more", b"m" * 400_000)]
    sim = ArenaSimulation(40, seed=7)
    sim.players = [p for p in sim.players if p.established]
    good = [json.dumps(sim.game()).encode() for _ in range(5)]
    producer = AIOKafkaProducer(bootstrap_servers=stack.broker.bootstrap, max_request_size=4 * 1024 * 1024)
    await producer.start()
    try:
        await (await producer.send(stack.games_topic, value, key=key, headers=headers))
        for line in good:
            await (await producer.send(stack.games_topic, line))
    finally:
        await producer.stop()
    stack.start_worker()
    await stack.wait_committed({0: 1 + len(good)})  # the good games after it were applied
    (letter,) = await read_topic(stack.broker.bootstrap, stack.dlq_topic, 1)
    assert letter.key == key and letter.value == value  # both fit once the headers are dropped
    assert letter.headers["error.kind"] == "invalid_json"
    assert letter.headers["error.truncated"] == "3 original headers dropped"
    assert "trace" not in letter.headers and "original.error.kind" not in letter.headers
    r = stack.redis_client()
    good_ids = {json.loads(g)["game_id"] for g in good}
    assert game_records.recorded(r, good_ids) == good_ids


@pytest.mark.timeout(60)
async def test_a_dead_letter_carries_the_original_headers_first_renaming_those_named_like_error_headers(
    stack: Stack,
) -> None:
    await stack.create_topics(games=1, ratings=2)
    producer = AIOKafkaProducer(bootstrap_servers=stack.broker.bootstrap)
    await producer.start()
    try:
        headers = [("trace-id", b"abc"), ("error.kind", b"spoofed"), ("source.offset", b"x")]
        await (await producer.send(stack.games_topic, b"[1, 2]", key=b"k", headers=headers))
    finally:
        await producer.stop()
    stack.start_worker()
    await stack.wait_committed({0: 1})
    (letter,) = await read_topic(stack.broker.bootstrap, stack.dlq_topic, 1)
    raw = await _raw_headers(stack)
    assert [name for name, _ in raw] == [
        "trace-id",
        "original.error.kind",
        "original.source.offset",
        "error.kind",
        "error.message",
        "source.topic",
        "source.partition",
        "source.offset",
    ]
    assert raw[:3] == [("trace-id", b"abc"), ("original.error.kind", b"spoofed"), ("original.source.offset", b"x")]
    assert letter.headers["error.kind"] == "invalid_schema" and letter.headers["source.offset"] == "0"


async def _raw_headers(stack: Stack) -> list[tuple[str, bytes]]:
    """The dead letter's headers as bytes, in order (read_topic decodes them into a dict)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=stack.broker.bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    try:
        consumer.assign([TopicPartition(stack.dlq_topic, 0)])
        await consumer.seek_to_beginning()
        while True:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                return list(records[0].headers)
    finally:
        await consumer.stop()
