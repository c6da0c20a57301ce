"""`rating-worker erase`, with a real broker, Redis and worker: the player's states and outboxes
deleted and a tombstone on each of his keys; `restore` from the output topic does not bring him
back; erasing twice is harmless; a later game rates him afresh; unpublished events or a lease
held by a worker refuse it (nothing erased) unless --force."""

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from redis.asyncio import Redis

from tests.support import commands
from tests.support.kafka import read_topic
from tests.support.stack import Stack
from worker.operate.redis_ops import read_states
from worker.systems.arena.codec import RATING_STATES
from worker.systems.arena.state import RatingState

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
SEED = REPO / "samples/seed.csv"
PLAYER, OTHER = "p00000", "p00003"  # both seeded in every category
CATEGORIES = ("rapid", "blitz", "bullet")


def run(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return commands.run(
        [sys.executable, "-m", "worker", *args],
        env=stack.env(log_level="error"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def game(game_id: str) -> bytes:
    return json.dumps(
        {
            "event_id": f"evt-{game_id}",
            "game_id": game_id,
            "finished_at": "2026-11-01T09:00:00Z",
            "rated": True,
            "time_control": {"base_seconds": 300, "increment_seconds": 3},  # blitz
            "white_id": PLAYER,
            "black_id": OTHER,
            "result": "1-0",
            "termination": "resignation",
        }
    ).encode()


async def states(stack: Stack, player: str) -> dict[str, RatingState]:
    redis = Redis.from_url(stack.redis.url)
    try:
        return await read_states(redis, "rating:", [f"{player}/{c}" for c in CATEGORIES], RATING_STATES)
    finally:
        await redis.aclose()


async def last_value_per_key(stack: Stack) -> dict[bytes, bytes | None]:
    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1)
    last: dict[bytes, bytes | None] = {}
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        assert record.key is not None
        last[record.key] = record.value
    return last


async def test_erase_forgets_the_player_for_good_and_twice_is_harmless(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=3)
    assert stack.import_seed(SEED).returncode == 0
    await stack.produce([game("g-1")])
    worker = stack.start_worker()
    await stack.wait_committed({0: 1})
    assert set(await states(stack, PLAYER)) == {f"{PLAYER}/{c}" for c in CATEGORIES}
    kept = await states(stack, OTHER)

    done = run(stack, "erase", PLAYER)
    assert done.returncode == 0, done.stderr
    assert f"tombstones published for {PLAYER}/rapid, {PLAYER}/blitz, {PLAYER}/bullet" in done.stderr
    assert await states(stack, PLAYER) == {}
    assert await states(stack, OTHER) == kept  # nobody else touched
    r = stack.redis_client()
    assert not list(r.scan_iter(f"rating:o:{PLAYER}/*")) and not list(r.scan_iter(f"rating:l:{PLAYER}/*"))
    last = await last_value_per_key(stack)
    assert all(last[f"{PLAYER}/{c}".encode()] is None for c in CATEGORIES)
    assert last[f"{OTHER}/blitz".encode()] is not None

    again = run(stack, "erase", PLAYER)
    assert again.returncode == 0, again.stderr
    assert "states deleted: none" in again.stderr
    assert await states(stack, OTHER) == kept

    # A restore from the output topic does not bring him back; the others are restored.
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    r.flushall()
    restored = run(stack, "restore")
    assert restored.returncode == 0, restored.stderr
    assert await states(stack, PLAYER) == {}
    assert await states(stack, OTHER) == kept

    # A later game of his rates him afresh: unrated, his blitz rating's first change.
    stack.start_worker()
    await stack.produce([game("g-2")])
    await stack.wait_committed({0: 2})
    for _ in range(50):
        fresh = (await states(stack, PLAYER)).get(f"{PLAYER}/blitz")
        if fresh is not None:
            break
        await asyncio.sleep(0.1)
    assert fresh is not None and fresh.rating is None and fresh.seq == 1


async def test_unpublished_events_or_a_held_lease_refuse_it_unless_forced(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=3)
    assert stack.import_seed(SEED).returncode == 0
    r = stack.redis_client()
    r.rpush(f"rating:o:{OTHER}/rapid", b"an event not yet published")
    refused = run(stack, "erase", OTHER)
    assert refused.returncode == 1
    assert f"refused, nothing erased: {OTHER}/rapid has 1 event not yet published" in refused.stderr
    assert len(await states(stack, OTHER)) == 3  # nothing deleted
    assert all(v is not None for v in (await last_value_per_key(stack)).values())  # no tombstone

    r.set(f"rating:l:{OTHER}/blitz", b"a worker's token", px=60_000)
    leased = run(stack, "erase", OTHER, "--force")
    assert leased.returncode == 1 and f"{OTHER}/blitz is being published by a worker" in leased.stderr
    r.delete(f"rating:l:{OTHER}/blitz")

    forced = run(stack, "erase", OTHER, "--category", "rapid", "--force")
    assert forced.returncode == 0, forced.stderr
    assert set(await states(stack, OTHER)) == {f"{OTHER}/blitz", f"{OTHER}/bullet"}
    assert not r.exists(f"rating:o:{OTHER}/rapid")
    last = await last_value_per_key(stack)
    assert last[f"{OTHER}/rapid".encode()] is None and last[f"{OTHER}/blitz".encode()] is not None


def test_a_bad_player_id_is_refused_with_one_line(stack: Stack) -> None:
    done = run(stack, "erase", "no/slash")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "rating-worker: error: 'no/slash' is not a player id (letters, digits, '_', '.', '-'; at most 128)"
    ]
