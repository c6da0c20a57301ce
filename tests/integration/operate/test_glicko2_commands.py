"""The commands with RATING_SYSTEM=glicko2 against a real broker, Redis and worker: `topics` makes
what is missing of the system's topics (the input topic is the arena's, shared: it may exist
already) and `check` passes them; `config` shows glicko2's names; `replay-dead-letters` puts a
record back on the topic it came from, and a game parked as too large is applied once after the
limit is raised; `erase` forgets a player's three categories (and refuses a category of another
system); `rebuild` keeps exactly the games `run` kept (the future check with each record's own
timestamp) and `switch-over` publishes a tampered live rating back as the rebuilt one, its
`last_rated_at` included."""

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from schemas.rating_changed_v2 import Glicko2RatingChanged
from tests.support import commands
from tests.support.contract import VALID_GAME
from tests.support.kafka import read_topic
from tests.support.stack import Stack
from worker.rules.hundredths import Hundredths
from worker.systems.glicko2 import rules as glicko2
from worker.systems.glicko2.codec import decode_glicko2_state, encode_glicko2_state
from worker.systems.glicko2.events import read_glicko2
from worker.systems.glicko2.rules import GlickoState

pytestmark = pytest.mark.integration

G2 = {"system": "glicko2"}
PREFIX = "rating-glicko2:"
REBUILD = "rating-glicko2-rebuild:"  # glicko2's default rebuild prefix
SEED_ROWS = (
    "player_id,category,rating,rated_games,deviation,volatility\n"
    "ann,rapid,1600.00,40,80.00,0.06\n"
    "ann,blitz,1650,40,60.00,0.06\n"
    "ann,bullet,1700,10,120,0.07\n"
    "bob,blitz,1400,10,150.00,0.065\n"
)
# The seeded blitz states (seq 1, last_rated_at null: their first game grows nothing).
ANN_BLITZ = GlickoState(Hundredths(165000), Hundredths(6000), glicko2.Nanos(60_000_000), 40, None, 1)
BOB_BLITZ = GlickoState(Hundredths(140000), Hundredths(15000), glicko2.Nanos(65_000_000), 10, None, 1)


def run(stack: Stack, *args: str, **settings: object) -> subprocess.CompletedProcess[str]:
    return commands.run(
        [sys.executable, "-m", "worker", *args],
        env=stack.env(log_level="error", command_retry_seconds=5, **{**G2, **settings}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def game(game_id: str, white: str = "ann", black: str = "bob", **extra: object) -> bytes:
    return json.dumps(
        {**VALID_GAME, "event_id": f"e-{game_id}", "game_id": game_id, **extra} | {"white_id": white, "black_id": black}
    ).encode()


def seed(stack: Stack) -> Path:
    path = stack.tmp / "seed.csv"
    path.write_text(SEED_ROWS)
    done = run(stack, "import", str(path))
    assert done.returncode == 0, done.stderr
    return path


def ms(timestamp: str) -> int:
    return int(datetime.fromisoformat(timestamp).astimezone(UTC).timestamp() * 1000)


async def produce_at(stack: Stack, records: list[tuple[bytes, int | None]]) -> None:
    """Each value with its own CreateTime (None: the producer's clock), in order."""
    producer = AIOKafkaProducer(bootstrap_servers=stack.broker.bootstrap, acks="all")
    await producer.start()
    try:
        for value, timestamp_ms in records:
            await (await producer.send(stack.games_topic, value, key=b"k", timestamp_ms=timestamp_ms))
    finally:
        await producer.stop()


async def payloads(stack: Stack, at_least: int) -> list[bytes]:
    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, at_least)
    return [r.value for r in sorted(records, key=lambda r: (r.partition, r.offset)) if r.value]


def states(stack: Stack, prefix: str) -> dict[str, GlickoState]:
    r = stack.redis_client()
    found = {}
    for key in r.scan_iter(f"{prefix}s:*"):
        value = r.get(key)
        assert isinstance(value, bytes)
        found[key.decode().removeprefix(f"{prefix}s:")] = decode_glicko2_state(value)
    return found


async def test_topics_makes_what_is_missing_beside_the_shared_input_topic_and_check_passes(stack: Stack) -> None:
    # The arena's deployment made the input topic (with its own output and dead letters) first.
    arena = {"system": "arena", "topic_ratings": f"arena-{stack.ratings_topic}"}
    arena |= {"topic_dead_letters": f"arena-{stack.dlq_topic}", "kafka_group_id": f"arena-{stack.group}"}
    first = run(stack, "topics", "--replication", "1", partitions=2, **arena)
    assert first.returncode == 0, first.stderr
    assert f"created {stack.games_topic}, arena-{stack.ratings_topic}, arena-{stack.dlq_topic}" in first.stderr
    done = run(stack, "topics", "--replication", "1", partitions=2)
    assert done.returncode == 0, done.stderr
    assert f"topics: created {stack.ratings_topic}, {stack.dlq_topic}\n" in done.stderr  # the input exists
    again = run(stack, "topics", "--replication", "1", partitions=2)
    assert "topics: created none (all exist)" in again.stderr, again.stderr

    checked = run(stack, "check", partitions=2)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert all(line.startswith("ok") for line in checked.stdout.splitlines()), checked.stdout
    for topic in (stack.games_topic, stack.ratings_topic, stack.dlq_topic):
        assert any(line.split(maxsplit=1)[1].startswith(f"topic {topic}") for line in checked.stdout.splitlines())
    assert f"ok       redis key prefix: {PREFIX} is not another system's" in checked.stdout.splitlines()
    r = stack.redis_client()
    assert r.get(f"{PREFIX}system") is None  # check claims nothing
    # Another system's prefix: check says so (fatal).
    r.set(f"{PREFIX}system", "arena")
    refused = run(stack, "check", partitions=2)
    assert refused.returncode == 1
    assert f"redis key prefix: RATING_REDIS_KEY_PREFIX={PREFIX} belongs to the rating system arena" in refused.stdout


def test_config_shows_glicko2s_names() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RATING_")}
    done = commands.run(
        [sys.executable, "-m", "worker", "config"],
        env=env | {"RATING_SYSTEM": "glicko2", "RATING_FUTURE_ALLOWANCE_SECONDS": "600"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "RATING_SYSTEM=glicko2" in lines and "RATING_FUTURE_ALLOWANCE_SECONDS=600" in lines
    for line in (
        "RATING_TOPIC_GAMES=arena.game.finished.v1",
        "RATING_TOPIC_RATINGS=arena.rating.changed.v2.glicko2",
        "RATING_TOPIC_DEAD_LETTERS=arena.game.finished.v1.dlq.glicko2",
        "RATING_KAFKA_GROUP_ID=rating-worker-glicko2",
        "RATING_REDIS_KEY_PREFIX=rating-glicko2:",
    ):
        assert f"# {line} (default)" in lines, line


async def test_a_dead_letter_goes_back_to_its_topic_and_a_large_game_is_applied_once(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    seed(stack)
    large = game("g-large", note=" " * 2000)
    bad = game("g-bad", control="close")
    await produce_at(stack, [(large, None), (bad, None)])
    worker = stack.start_worker(max_message_bytes=1000, **G2)
    await stack.wait_committed({0: 2})
    letters = await read_topic(stack.broker.bootstrap, stack.dlq_topic, 2)
    assert [r.headers["error.kind"] for r in letters] == ["too_large", "invalid_schema"]
    assert {r.headers["source.topic"] for r in letters} == {stack.games_topic}
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    stack.start_worker(**G2)  # the limit raised

    dry = run(stack, "replay-dead-letters")
    assert dry.stdout.splitlines() == ["invalid_schema: 1", "too_large: 1"]
    applied = run(stack, "replay-dead-letters", "--kind", "too_large", "--apply")
    assert applied.returncode == 0, applied.stderr
    assert f"replayed 1 to {stack.games_topic}" in applied.stderr
    await stack.wait_committed({0: 3})
    won = [read_glicko2(p) for p in await payloads(stack, 6) if b'"game_id":"g-large"' in p]
    # Both players' rated_game, from their seeded states (ann white wins).
    white, black = glicko2.rate(ANN_BLITZ, BOB_BLITZ, str(VALID_GAME["finished_at"]), "1-0")
    assert sorted((e.key, e.kind, e.state) for e in won) == [
        ("ann/blitz", "rated_game", white.after._replace(seq=2)),
        ("bob/blitz", "rated_game", black.after._replace(seq=2)),
    ]
    assert white.after.last_rated_at == VALID_GAME["finished_at"]
    assert run(stack, "replay-dead-letters", "--kind", "too_large", "--apply").returncode == 0
    await stack.wait_committed({0: 4})
    assert len([p for p in await payloads(stack, 6) if b'"game_id":"g-large"' in p]) == 2  # a duplicate now


async def test_erase_forgets_the_players_three_categories(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    seed(stack)
    r = stack.redis_client()
    ann = [f"ann/{category}" for category in ("rapid", "blitz", "bullet")]
    assert all(r.exists(f"{PREFIX}s:{rating}") for rating in ann)
    wrong = run(stack, "erase", "ann", "--category", "correspondence")
    assert wrong.returncode == 2
    assert wrong.stderr == "rating-worker: error: --category correspondence: glicko2 rates rapid, blitz, bullet only\n"
    assert all(r.exists(f"{PREFIX}s:{rating}") for rating in ann)
    done = run(stack, "erase", "ann")
    assert done.returncode == 0, done.stderr
    assert f"tombstones published for {', '.join(ann)} on {stack.ratings_topic}" in done.stderr
    assert not any(r.exists(f"{PREFIX}s:{rating}") for rating in ann) and r.exists(f"{PREFIX}s:bob/blitz")
    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 7)
    last = {rec.key: rec.value for rec in sorted(records, key=lambda rec: (rec.partition, rec.offset))}
    assert all(last[rating.encode()] is None for rating in ann) and last[b"bob/blitz"] is not None


async def test_rebuild_keeps_what_run_kept_and_switch_over_puts_a_tampered_rating_back(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    path = seed(stack)
    # In finished_at order (the rebuild's order), each record's timestamp given: a game finishing
    # more than the hour after its record's is refused by run and by rebuild alike; one exactly
    # the hour after counts in both.
    records: list[tuple[bytes, int | None]] = [
        (game("g1", finished_at="2026-11-20T10:00:00Z"), None),
        (game("g2", "cat", "ann", finished_at="2026-11-21T10:00:00Z", result="0-1"), None),
        (game("g3", "bob", "cat", finished_at="2026-11-22T10:00:00.5Z", result="1/2-1/2"), None),
        (game("g-late", "ann", "dan", finished_at="2026-11-24T12:00:00.001Z"), ms("2026-11-24T11:00:00Z")),
        (game("g-edge", "bob", "ann", finished_at="2026-11-25T12:00:00Z"), ms("2026-11-25T11:00:00Z")),
        (
            game(
                "g4",
                "ann",
                "cat",
                finished_at="2026-11-26T10:00:00Z",
                time_control={"base_seconds": 900, "increment_seconds": 10},
            ),
            None,
        ),
    ]
    await produce_at(stack, records)
    worker = stack.start_worker(**G2)
    await stack.wait_committed({0: len(records)})
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    letters = await read_topic(stack.broker.bootstrap, stack.dlq_topic, 1)
    assert [r.value for r in letters] == [records[3][0]]
    assert "RATING_FUTURE_ALLOWANCE_SECONDS=3600" in letters[0].headers["error.message"]
    before = await payloads(stack, 14)

    built = run(stack, "rebuild", "--seed", str(path))
    assert built.returncode == 0, built.stderr
    assert "0 differ from the live ones" in built.stderr
    rebuilt, live = states(stack, REBUILD), states(stack, PREFIX)
    assert rebuilt == live
    assert sorted(live) == ["ann/blitz", "ann/bullet", "ann/rapid", "bob/blitz", "cat/blitz", "cat/rapid"]
    assert live["ann/blitz"].last_rated_at == "2026-11-25T12:00:00Z"  # g-edge, ann's latest blitz game
    # As if the live state had been computed by an older rule: another rating, RD, sigma and time.
    r = stack.redis_client()
    tampered = live["ann/blitz"]._replace(
        rating=Hundredths(123456),
        deviation=Hundredths(9999),
        volatility=glicko2.Nanos(70_000_001),
        last_rated_at="2026-01-01T00:00:00Z",
    )
    r.set(f"{PREFIX}s:ann/blitz", encode_glicko2_state(tampered))

    switched = run(stack, "switch-over")
    assert switched.returncode == 0, switched.stderr
    assert "1 imported events published" in switched.stderr
    new = [p for p in await payloads(stack, len(before) + 1) if p not in before]
    assert len(new) == 1
    event = Glicko2RatingChanged.model_validate_json(new[0])
    want = rebuilt["ann/blitz"]
    assert (event.event_id, event.kind, event.seq) == (f"import/ann/blitz/{want.seq + 1}", "imported", want.seq + 1)
    assert read_glicko2(new[0]).state == want._replace(seq=want.seq + 1)  # the rebuilt state whole
    assert event.state.last_rated_at == "2026-11-25T12:00:00Z"
    assert (str(event.rating_before), str(event.rating_after)) == ("1234.56", f"{want.rating / 100:.2f}")
    detail = event.detail
    assert (detail.expected_score, str(detail.deviation_before), str(detail.volatility_before)) == (
        None,
        "99.99",
        "0.070000001",
    )
    assert str(detail.deviation_after) == f"{want.deviation / 100:.2f}"
    assert states(stack, PREFIX)["ann/blitz"] == want._replace(seq=want.seq + 1)
