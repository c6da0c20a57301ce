"""`rating-worker restore`: Redis wiped, state rebuilt from the output topic, games still recognized."""

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from redis.asyncio import Redis as AsyncRedis

from tests.support import commands, records
from tests.support.audit import audit
from tests.support.games import ENGINE
from tests.support.kafka import Record, produce, read_topic
from tests.support.stack import Stack
from worker.engine.decoder import decode_game
from worker.store.redis_store import RedisStore
from worker.store.schedule import plan
from worker.systems.arena.codec import RATING_STATES

REPO = Path(__file__).resolve().parents[3]
SAMPLE, SAMPLE_SEED = REPO / "samples/games.jsonl", REPO / "samples/seed.csv"

pytestmark = pytest.mark.integration


def states(r: redis.Redis) -> dict[bytes, bytes]:
    found = {}
    for key in r.scan_iter("rating:s:*"):
        value = r.get(key)
        assert isinstance(key, bytes) and isinstance(value, bytes)
        found[key] = value
    return found


def restore(stack: Stack, *args: str) -> subprocess.CompletedProcess[bytes]:
    return commands.run(
        [sys.executable, "-m", "worker", "restore", *args],
        env=stack.env(),
        capture_output=True,
        timeout=120,
        check=False,
    )


async def test_restore_after_a_wipe_gives_back_the_same_state_and_redeliveries_stay_duplicates(stack: Stack) -> None:
    await stack.create_topics(games=2, ratings=3)
    assert stack.import_seed(SAMPLE_SEED).returncode == 0
    lines = SAMPLE.read_bytes().splitlines()
    await stack.produce(lines)
    worker = stack.start_worker()
    end = await stack.games_ends()
    await stack.wait_committed(end)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    r = stack.redis_client()
    before = states(r)
    published = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1)
    assert before and len(published) > len(before)

    r.flushall()
    done = restore(stack)
    assert done.returncode == 0, done.stderr
    assert states(r) == before
    # Every game with an event in the topic is recorded again, without facts.
    # (A wiped store is a new one: its records are compact only.)
    with_events = _games_with_events(published)
    assert not list(r.scan_iter("rating:g:*"))
    stored = {g: r.hget(*records.address("rating:", g)) for g in with_events}
    assert all(isinstance(v, bytes) and records.split(v)[0] == b"" for v in stored.values()), stored
    assert f"{len(before)} states written".encode() in done.stderr

    again = restore(stack)  # idempotent: nothing left to do
    assert again.returncode == 0
    assert b"0 states written" in again.stderr
    assert states(r) == before

    # A redelivery after the restore of every game that had events changes nothing and
    # publishes nothing. (A game that changed nothing left no event: it cannot be restored,
    # which docs/operations.md states; committed offsets, kept by Kafka, keep it from coming back.)
    await stack.produce([line for line in lines if any(f'"game_id":"{g}"'.encode() in line for g in with_events)])
    stack.start_worker()
    await stack.wait_committed(await stack.games_ends())
    after = await read_topic(stack.broker.bootstrap, stack.ratings_topic, len(published))
    assert len(after) == len(published)
    assert states(r) == before

    # A state that differs from the topic's is refused unless forced.
    key = next(iter(before))
    r.set(key, b"99|150000|1|")
    refused = restore(stack)
    assert refused.returncode == 1 and key.decode().removeprefix("rating:s:").encode() in refused.stderr
    assert r.get(key) == b"99|150000|1|"
    forced = restore(stack, "--force")
    assert forced.returncode == 0
    assert states(r) == before


def _games_with_events(records: list[Record]) -> set[str]:
    games = {json.loads(r.value)["game_id"] for r in records if r.value is not None}
    return {g for g in games if g is not None}


# --- outboxes, leases and games half published --------------------------------------------------

PLAYERS = {"a": 180000, "b": 170000, "c": 160000, "d": 150000}  # rated blitz players (hundredths)


def game_line(game_id: str, white: str, black: str, result: str = "1-0") -> bytes:
    return json.dumps(
        {
            "event_id": f"ev-{game_id}",
            "game_id": game_id,
            "finished_at": "2026-11-29T21:44:51Z",
            "rated": True,
            "time_control": {"base_seconds": 180, "increment_seconds": 0},
            "white_id": white,
            "black_id": black,
            "result": result,
            "termination": "checkmate",
        },
        separators=(",", ":"),
    ).encode()


async def seeded_and_played(stack: Stack, games: list[bytes]) -> list[Record]:
    """Seed PLAYERS, let a worker apply `games` and stop; the output topic's records."""
    await stack.create_topics(games=1, ratings=2)
    seed = stack.tmp / "seed.csv"
    rows = [f"{p},blitz,{h // 100}.{h % 100:02d},40" for p, h in PLAYERS.items()]
    seed.write_text("player_id,category,rating,rated_games\n" + "\n".join(rows) + "\n", encoding="utf-8")
    assert stack.import_seed(seed).returncode == 0
    await stack.produce(games)
    worker = stack.start_worker()
    await stack.wait_committed({0: len(games)})
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    return await read_topic(stack.broker.bootstrap, stack.ratings_topic, len(PLAYERS) + 2 * len(games))


async def apply_unpublished(stack: Stack, line: bytes) -> dict[str, bytes]:
    """Apply a game in Redis as a worker would, and crash before publishing: its events stay
    in their outboxes (with a lease). Returns each rating's outbox."""
    client = AsyncRedis.from_url(stack.redis.url)
    try:
        store = RedisStore(client, "rating:", "crashed-worker", 60, 3600, codec=RATING_STATES)
        game = decode_game(line, 65536)
        snapshot = await store.read(ENGINE.ratings_read(game) or (), [game.game_id])
        (planned,) = plan(ENGINE, [game], snapshot)
        assert planned.write is not None
        applied, claimed = await store.apply([planned.write])
        assert applied == [True]
        return {r: events[-1] for r, events in claimed.outboxes.items()}
    finally:
        await client.aclose()


async def test_restore_leaves_a_rating_ahead_by_its_outbox_alone_even_when_forced(stack: Stack) -> None:
    published = await seeded_and_played(stack, [game_line("g1", "a", "b"), game_line("g2", "c", "d")])
    r = stack.redis_client()
    # A crash between the Redis apply of g3 and its publication: a/blitz and c/blitz are one
    # change ahead of the topic, their events in their outboxes.
    pending = await apply_unpublished(stack, game_line("g3", "a", "c", "0-1"))
    ahead = {k: r.get(f"rating:s:{k}") for k in pending}
    # b/blitz's outbox still holds its last event, which the topic has (the ack was lost).
    last_b = max((rec for rec in published if rec.key == b"b/blitz"), key=lambda rec: rec.offset)
    assert last_b.value is not None
    r.rpush("rating:o:b/blitz", last_b.value)
    r.set("rating:l:d/blitz", b"a-dead-worker")  # a lease left by a worker that died

    forced = restore(stack, "--force")
    assert forced.returncode == 0, forced.stderr
    for k, state in ahead.items():  # left alone: the state after g3, and g3's events to publish
        assert r.get(f"rating:s:{k}") == state
        assert r.lrange(f"rating:o:{k}", 0, -1) == [pending[k]]
    assert b"2 ahead of the topic by their outbox" in forced.stderr
    assert r.llen("rating:o:b/blitz") == 0  # the topic has it: removed
    assert list(r.scan_iter("rating:l:*")) == []  # every lease cleared

    # The next worker publishes g3's events, then applies g4 after g3: one event per seq.
    await stack.produce([game_line("g3", "a", "c", "0-1"), game_line("g4", "a", "d")])
    worker = stack.start_worker()
    await stack.wait_committed({0: 4})
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, len(published) + 4)
    result = audit(records)  # gapless seq, no seq with two different events, rules exact
    assert [e.game_id for e in result.by_key["a/blitz"]] == [None, "g1", "g3", "g4"]


async def test_restore_refuses_with_its_reason_a_state_that_differs_at_the_same_seq(stack: Stack) -> None:
    await seeded_and_played(stack, [game_line("g1", "a", "b")])
    r = stack.redis_client()
    stored = r.get("rating:s:a/blitz")
    assert isinstance(stored, bytes)
    seq, rest = stored.split(b"|", 1)
    r.set("rating:s:a/blitz", seq + b"|123456|" + rest.split(b"|", 2)[1] + b"|")
    refused = restore(stack)
    assert refused.returncode == 1
    assert f"refused: a/blitz: the same seq {int(seq)} as the topic but another state".encode() in refused.stderr
    assert b"the store stays untrusted until nothing is refused" in refused.stderr
    # The workers wait meanwhile: every script refuses until a restore ends without refusals.
    assert r.get("rating:untrusted") == b"restore refused 1 ratings: run it with --force"
    forced = restore(stack, "--force")
    assert forced.returncode == 0 and r.get("rating:untrusted") is None


async def test_restore_lists_a_game_whose_second_event_was_lost_with_redis(stack: Stack) -> None:
    await seeded_and_played(stack, [game_line("g1", "a", "b")])
    # g2 is applied; a/blitz's event reaches the topic, d/blitz's does not; then Redis is lost.
    pending = await apply_unpublished(stack, game_line("g2", "a", "d"))

    await produce(stack.broker.bootstrap, stack.ratings_topic, [pending["a/blitz"]], [b"a/blitz"])
    stack.redis_client().flushall()
    done = restore(stack)
    assert done.returncode == 0, done.stderr
    assert b"partial: g2: d/blitz has no event on the topic" in done.stderr
    assert b"partial: g1" not in done.stderr  # both of g1's events are there


async def test_restore_does_not_bring_back_a_rating_erased_by_a_tombstone(stack: Stack) -> None:

    await seeded_and_played(stack, [game_line("g1", "a", "b")])
    # A privacy request erased a/blitz: a tombstone on its key (after its events, in its partition).
    await produce(stack.broker.bootstrap, stack.ratings_topic, [None], [b"a/blitz"])  # type: ignore[list-item]
    r = stack.redis_client()
    r.flushall()
    done = restore(stack)
    assert done.returncode == 0, done.stderr
    assert r.get("rating:s:a/blitz") is None
    assert r.get("rating:s:b/blitz") is not None
