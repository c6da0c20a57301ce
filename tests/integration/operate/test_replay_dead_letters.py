"""`rating-worker replay-dead-letters` with a real broker, Redis and worker: a dry run publishes
nothing; a record still bad is dead-lettered again with its original headers; a record parked
for a reason that no longer applies (a raised RATING_MAX_MESSAGE_BYTES) is applied exactly once,
from the original record (its dead letter holds the value cut), and a second replay is a
duplicate that changes nothing. A header an input record already named `original.error.kind`
cannot be told from one the dead letter renamed: the replay restores `error.kind`, as the
contract says, and says so."""

import json
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from tests.support import commands
from tests.support.kafka import read_topic
from tests.support.stack import Stack

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
SEED = REPO / "samples/seed.csv"


@dataclass(frozen=True)
class Ran:
    status: int
    stdout: str
    stderr: str


def replay(stack: Stack, *args: str, **settings: object) -> Ran:
    done = commands.run(
        [sys.executable, "-m", "worker", "replay-dead-letters", *args],
        env=stack.env(log_level="error", **settings),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return Ran(done.returncode, done.stdout, done.stderr)


async def produce_with_headers(stack: Stack, key: bytes, value: bytes, headers: list[tuple[str, bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=stack.broker.bootstrap, acks="all")
    await producer.start()
    try:
        await (await producer.send(stack.games_topic, value, key=key, headers=headers))
    finally:
        await producer.stop()


async def raw_headers(stack: Stack, topic: str, offset: int) -> list[tuple[str, bytes]]:
    """The headers of partition 0's record at `offset`, as bytes and in order (read_topic makes a dict of them)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=stack.broker.bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, offset)
        while True:
            for records in (await consumer.getmany(tp, timeout_ms=500, max_records=1)).values():
                return list(records[0].headers)
    finally:
        await consumer.stop()


def game(game_id: str, **extra: object) -> bytes:
    return json.dumps(
        {
            "event_id": f"evt-{game_id}",
            "game_id": game_id,
            "finished_at": "2026-11-01T09:00:00Z",
            "rated": True,
            "time_control": {"base_seconds": 300, "increment_seconds": 3},
            "white_id": "p00000",
            "black_id": "p00003",
            "result": "1-0",
            "termination": "resignation",
            **extra,
        }
    ).encode()


async def test_a_dry_run_publishes_nothing_and_a_schema_error_is_dead_lettered_again(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    bad = json.dumps({"game_id": "g-bad", "rated": "yes"}).encode()
    await produce_with_headers(stack, b"g-bad", bad, [("trace", b"t-1"), ("error.kind", b"a producer's own")])
    stack.start_worker()
    await stack.wait_committed({0: 1})
    (letter,) = await read_topic(stack.broker.bootstrap, stack.dlq_topic, 1)
    assert letter.headers["error.kind"] == "invalid_schema"
    assert letter.headers["original.error.kind"] == "a producer's own"

    dry = replay(stack)
    assert dry.status == 0, dry.stderr
    assert dry.stdout.splitlines() == ["invalid_schema: 1"]
    assert "1 dead letters read, 1 selected; dry run: 1 would be replayed" in dry.stderr
    assert len(await read_topic(stack.broker.bootstrap, stack.games_topic, 1, idle=1.0)) == 1  # nothing produced

    other = replay(stack, "--kind", "too_large", "--apply")
    assert other.stdout == "" and "0 selected; replayed 0" in other.stderr

    applied = replay(stack, "--kind", "invalid_schema", "--apply")
    assert applied.status == 0, applied.stderr
    assert "replayed 1 to" in applied.stderr
    await stack.wait_committed({0: 2})
    first, again = await read_topic(stack.broker.bootstrap, stack.dlq_topic, 2)
    assert (again.key, again.value) == (b"g-bad", bad)
    assert again.headers["error.kind"] == "invalid_schema"
    assert again.headers["source.offset"] == "1"  # the replayed copy, at the input topic's end
    # The original headers again, renamed as before, and where the replay came from.
    assert again.headers["trace"] == "t-1"
    assert again.headers["original.error.kind"] == "a producer's own"
    assert again.headers["replayed.from"] == f"{stack.dlq_topic}/0/0"
    assert first.offset == 0
    # The next replay selects the first letter only: the one parked again is left out, or each
    # replay would double the copies of a record still bad.
    next_time = replay(stack)
    assert next_time.stdout.splitlines() == ["invalid_schema: 1"]
    assert "1 parked again after a replay left out (--include-replayed)" in next_time.stderr
    assert replay(stack, "--include-replayed").stdout.splitlines() == ["invalid_schema: 2"]


async def test_a_game_parked_as_too_large_is_applied_once_after_the_limit_is_raised(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    assert stack.import_seed(SEED).returncode == 0
    large = game("g-large", note=" " * 2000)  # valid, 2 KB
    await produce_with_headers(stack, b"g-large", large, [("trace", b"t-2")])
    worker = stack.start_worker(max_message_bytes=1000)
    await stack.wait_committed({0: 1})
    (letter,) = await read_topic(stack.broker.bootstrap, stack.dlq_topic, 1)
    assert letter.headers["error.kind"] == "too_large" and letter.value == large[:1000]
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    stack.start_worker()  # the limit raised (the default, 65536)

    applied = replay(stack, "--apply")
    assert applied.status == 0, applied.stderr
    assert "replayed 1 to" in applied.stderr and "(1 from the original record, 0 unrecoverable)" in applied.stderr
    await stack.wait_committed({0: 2})
    changes = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1)
    rated = [json.loads(r.value or b"") for r in changes if b"g-large" in (r.value or b"")]
    assert sorted(e["player_id"] for e in rated) == ["p00000", "p00003"]

    again = replay(stack, "--apply")  # the same dead letter once more: a duplicate now
    assert again.status == 0, again.stderr
    await stack.wait_committed({0: 3})
    changes = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1)
    assert len([r for r in changes if b"g-large" in (r.value or b"")]) == 2
    assert len(await read_topic(stack.broker.bootstrap, stack.dlq_topic, 1)) == 1  # not parked again


async def test_a_header_already_named_original_error_kind_is_replayed_as_error_kind_and_the_command_says_so(
    stack: Stack,
) -> None:
    await stack.create_topics(games=1, ratings=2)
    bad = json.dumps({"game_id": "g-named", "rated": "yes"}).encode()
    own = [("trace", b"t-3"), ("original.error.kind", b"named so by the producer"), ("error.message", b"theirs")]
    await produce_with_headers(stack, b"g-named", bad, own)
    stack.start_worker()
    await stack.wait_committed({0: 1})
    # The ambiguity: the producer's `original.error.kind` is copied unchanged, its `error.message`
    # renamed `original.error.message`; in the dead letter the two look alike.
    letter = await raw_headers(stack, stack.dlq_topic, 0)
    assert letter[:3] == [
        ("trace", b"t-3"),
        ("original.error.kind", b"named so by the producer"),
        ("original.error.message", b"theirs"),
    ]
    assert [name for name, _ in letter[3:]] == [
        "error.kind",
        "error.message",
        "source.topic",
        "source.partition",
        "source.offset",
    ]

    assumed = "2 headers original.<error header> in 1 dead letters taken as renamed by the worker"
    dry = replay(stack)
    assert dry.status == 0, dry.stderr
    assert f"{assumed}, would be replayed as <error header>" in dry.stderr

    applied = replay(stack, "--apply")
    assert applied.status == 0, applied.stderr
    assert f"{assumed}, replayed as <error header>" in applied.stderr
    assert "cannot be told apart" in applied.stderr
    await stack.wait_committed({0: 2})
    # As the contract says: every `original.<error header>` of the letter comes back as `<error header>`.
    assert await raw_headers(stack, stack.games_topic, 1) == [
        ("trace", b"t-3"),
        ("error.kind", b"named so by the producer"),
        ("error.message", b"theirs"),
        ("replayed.from", f"{stack.dlq_topic}/0/0".encode()),
    ]
    # Still bad, it is parked again with the same original headers as the first time.
    again = await raw_headers(stack, stack.dlq_topic, 1)
    assert again[:4] == [*letter[:3], ("replayed.from", f"{stack.dlq_topic}/0/0".encode())]
