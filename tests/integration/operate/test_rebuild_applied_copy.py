"""`rebuild` keeps, of a game's copies, the one the workers applied: the copy the output's
events name (`source_event_id`), else the one whose facts the live idempotency record holds,
else the copy of lowest offset in its partition and, across partitions, the earliest arrival
(record timestamp), then the lowest partition. With no rule changed, `rebuild` and
`switch-over` then publish nothing, also when the copies differ (a conflicting duplicate the
workers dead-lettered, or a copy whose only other `finished_at` made it a duplicate)."""

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from tests.support import commands
from tests.support.kafka import Record, read_topic
from tests.support.rate import rate
from tests.support.stack import Stack
from worker.systems.arena.codec import decode_state
from worker.systems.glicko2.codec import decode_glicko2_state
from worker.systems.glicko2.rules import GlickoState

pytestmark = pytest.mark.integration

SEEDS = {
    "arena": "player_id,category,rating,rated_games\nann,blitz,1800.00,40\nbob,blitz,1700.00,40\n",
    "glicko2": (
        "player_id,category,rating,rated_games,deviation,volatility\n"
        "ann,blitz,1800.00,40,60.00,0.06\nbob,blitz,1700.00,40,80.00,0.06\n"
    ),
}
# The live and the rebuild's key prefixes of each system (their defaults).
PREFIXES = {"arena": ("rating:", "rating-rebuild:"), "glicko2": ("rating-glicko2:", "rating-glicko2-rebuild:")}


def game(event_id: str, game_id: str, finished_at: str, result: str = "1-0", **extra: object) -> bytes:
    return json.dumps(
        {
            "event_id": event_id,
            "game_id": game_id,
            "finished_at": finished_at,
            "rated": True,
            "time_control": {"base_seconds": 180, "increment_seconds": 0},
            "white_id": "ann",
            "black_id": "bob",
            "result": result,
            "termination": "checkmate" if result != "1/2-1/2" else "draw_agreement",
            **extra,
        },
        separators=(",", ":"),
    ).encode()


def command(stack: Stack, system: str, *args: str) -> subprocess.CompletedProcess[str]:
    return commands.run(
        [sys.executable, "-m", "worker", *args],
        env=stack.env(system=system, log_level="error", command_retry_seconds=5),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def seeded(stack: Stack, system: str) -> Path:
    path = stack.tmp / "seed.csv"
    path.write_text(SEEDS[system])
    done = command(stack, system, "import", str(path))
    assert done.returncode == 0, done.stderr
    return path


async def send(stack: Stack, records: list[tuple[bytes, int, int | None]]) -> None:
    """Each value to its partition with its CreateTime (None: now), in order."""
    producer = AIOKafkaProducer(bootstrap_servers=stack.broker.bootstrap, acks="all")
    await producer.start()
    try:
        for value, partition, timestamp_ms in records:
            await (await producer.send(stack.games_topic, value, partition=partition, timestamp_ms=timestamp_ms))
    finally:
        await producer.stop()


def states(stack: Stack, prefix: str, system: str) -> dict[str, Any]:
    decode = decode_glicko2_state if system == "glicko2" else decode_state
    r = stack.redis_client()
    found = {}
    for key in r.scan_iter(f"{prefix}s:*"):
        value = r.get(key)
        assert isinstance(value, bytes)
        found[key.decode().removeprefix(f"{prefix}s:")] = decode(value)
    return found


async def output(stack: Stack, at_least: int) -> list[Record]:
    return sorted(
        await read_topic(stack.broker.bootstrap, stack.ratings_topic, at_least, idle=0.5),
        key=lambda r: (r.partition, r.offset),
    )


async def rebuild_and_switch_over_change_nothing(stack: Stack, system: str, seed: Path, published: int) -> None:
    """`rebuild` finds no rating differing from the live ones and `switch-over` publishes nothing."""
    live_prefix, rebuild_prefix = PREFIXES[system]
    before = await output(stack, published)
    built = command(stack, system, "rebuild", "--seed", str(seed))
    assert built.returncode == 0, built.stderr
    assert "0 differ from the live ones" in built.stderr, built.stderr
    assert states(stack, rebuild_prefix, system) == states(stack, live_prefix, system)
    switched = command(stack, system, "switch-over")
    assert switched.returncode == 0, switched.stderr
    assert "0 imported events published" in switched.stderr, switched.stderr
    assert await output(stack, len(before)) == before


@pytest.mark.parametrize("system", ["arena", "glicko2"])
async def test_the_applied_copy_of_a_conflicting_duplicate_is_rebuilt_and_nothing_is_switched(
    stack: Stack, system: str
) -> None:
    """The audit's reproduction: copy A (10:00, white wins) applied, then copy B (09:00, black
    wins) dead-lettered; B's earlier `finished_at` must not make it the rebuild's."""
    await stack.create_topics(games=1, ratings=2)
    seed = seeded(stack, system)
    stack.start_worker(system=system)
    await send(stack, [(game("e-A", "g1", "2026-11-20T10:00:00Z", "1-0"), 0, None)])
    await stack.wait_committed({0: 1})
    later = game("e-B", "g1", "2026-11-20T09:00:00Z", "0-1")
    await send(stack, [(later, 0, None)])
    await stack.wait_committed({0: 2})
    letters = await read_topic(stack.broker.bootstrap, stack.dlq_topic, 1, idle=0.5)
    assert [(r.value, r.headers["error.kind"]) for r in letters] == [(later, "conflicting_duplicate")]
    events = [json.loads(r.value) for r in await output(stack, 4) if r.value and b'"game_id":"g1"' in r.value]
    assert sorted((e["player_id"], e["source_event_id"]) for e in events) == [("ann", "e-A"), ("bob", "e-A")]

    await rebuild_and_switch_over_change_nothing(stack, system, seed, published=4)


async def test_the_idempotency_record_tells_the_applied_copy_when_the_output_shows_no_event(stack: Stack) -> None:
    """Copy A (unrated: it changes nothing, so no event names it) applied first on partition 1;
    copy B (rated, black wins) dead-lettered from partition 0, with an earlier timestamp, which
    the last rule alone would prefer: the live record's facts are A's."""
    await stack.create_topics(games=2, ratings=2)
    seed = seeded(stack, "arena")
    stack.start_worker()
    now = int(time.time() * 1000)
    await send(stack, [(game("e-A", "g1", "2026-11-20T10:00:00Z", "1-0", rated=False), 1, now)])
    await stack.wait_committed({0: 0, 1: 1})
    later = game("e-B", "g1", "2026-11-20T09:00:00Z", "0-1")
    await send(stack, [(later, 0, now - 60_000)])
    await stack.wait_committed({0: 1, 1: 1})
    letters = await read_topic(stack.broker.bootstrap, stack.dlq_topic, 1, idle=0.5)
    assert [(r.value, r.headers["error.kind"]) for r in letters] == [(later, "conflicting_duplicate")]
    assert not [r for r in await output(stack, 2) if r.value and b'"game_id":"g1"' in r.value]

    await rebuild_and_switch_over_change_nothing(stack, "arena", seed, published=2)


async def test_the_output_tells_the_applied_copy_when_the_copies_differ_only_in_finished_at(stack: Stack) -> None:
    """Same facts, other `finished_at` (the live record matches both: a duplicate, not dead-
    lettered): copy A applied first on partition 1, copy B on partition 0 with an earlier
    timestamp; the events' `source_event_id` names A, whose time glicko2 keeps as last_rated_at."""
    await stack.create_topics(games=2, ratings=2)
    seed = seeded(stack, "glicko2")
    stack.start_worker(system="glicko2")
    now = int(time.time() * 1000)
    await send(stack, [(game("e-A", "g1", "2026-11-20T10:00:00Z"), 1, now)])
    await stack.wait_committed({0: 0, 1: 1})
    await send(stack, [(game("e-B", "g1", "2026-11-20T09:00:00Z"), 0, now - 60_000)])
    await stack.wait_committed({0: 1, 1: 1})
    assert not await read_topic(stack.broker.bootstrap, stack.dlq_topic, 0, timeout=2, idle=0.5)
    live: dict[str, GlickoState] = states(stack, "rating-glicko2:", "glicko2")
    assert {live["ann/blitz"].last_rated_at, live["bob/blitz"].last_rated_at} == {"2026-11-20T10:00:00Z"}

    await rebuild_and_switch_over_change_nothing(stack, "glicko2", seed, published=4)


async def test_with_no_output_or_record_the_lowest_offset_then_the_earliest_arrival_is_kept(stack: Stack) -> None:
    """No worker ran: in one partition the copy of lowest offset is kept, whatever its timestamp
    or `finished_at`; across partitions, the earliest timestamp, then the lowest partition."""
    await stack.create_topics(games=2, ratings=2)
    seed = seeded(stack, "arena")
    now = int(time.time() * 1000)
    kept = [
        game("e-A", "g1", "2026-11-20T10:00:00Z", "1-0"),
        game("e-D", "g2", "2026-11-20T11:30:00Z", "0-1"),
        game("e-F", "g3", "2026-11-20T12:30:00Z", "1/2-1/2"),
    ]
    await send(
        stack,
        [
            (kept[0], 0, now),  # g1: partition 0, offset 0
            (game("e-B", "g1", "2026-11-20T09:00:00Z", "0-1"), 0, now - 60_000),  # offset 1, earlier
            (game("e-C", "g2", "2026-11-20T11:00:00Z", "1-0"), 1, now),  # g2: later than its copy on 0
            (kept[1], 0, now - 1000),
            (game("e-E", "g3", "2026-11-20T12:00:00Z", "1-0"), 1, now),  # g3: as early as its copy on 0
            (kept[2], 0, now),
        ],
    )
    built = command(stack, "arena", "rebuild", "--seed", str(seed))
    assert built.returncode == 0, built.stderr
    expected = offline_states(kept, seed)
    rebuilt = states(stack, "rating-rebuild:", "arena")
    assert set(rebuilt) == set(expected)
    for key, want in expected.items():
        got = rebuilt[key]
        assert (got.rating, got.rated_games) == (round(float(want["rating"]) * 100), want["rated_games"]), key
        assert [q.game_id for q in got.qualifying] == [q["game_id"] for q in want["qualifying"]], key


async def test_switch_over_brings_forward_the_applied_copy_of_a_game_after_the_rebuild(stack: Stack) -> None:
    """Copies A (applied) and B (dead-lettered) both arrive after the rebuild: the switch-over
    brings A forward, not B, and imports nothing."""
    await stack.create_topics(games=1, ratings=2)
    seed = seeded(stack, "arena")
    built = command(stack, "arena", "rebuild", "--seed", str(seed))
    assert built.returncode == 0, built.stderr
    stack.start_worker()
    await send(stack, [(game("e-A", "g1", "2026-11-20T10:00:00Z", "1-0"), 0, None)])
    await stack.wait_committed({0: 1})
    await send(stack, [(game("e-B", "g1", "2026-11-20T09:00:00Z", "0-1"), 0, None)])
    await stack.wait_committed({0: 2})
    before = await output(stack, 4)
    switched = command(stack, "arena", "switch-over")
    assert switched.returncode == 0, switched.stderr
    assert "0 imported events published" in switched.stderr, switched.stderr
    assert "1 games applied since the rebuild brought forward" in switched.stderr, switched.stderr
    assert await output(stack, len(before)) == before


def offline_states(lines: list[bytes], seed: Path) -> dict[str, dict[str, Any]]:
    """Each rating's last `state`, from `rate` over `seed` and these games in this order."""
    offline = rate("-", "--seed", seed, "--dlq", "/dev/null", stdin=b"\n".join(lines) + b"\n")
    assert offline.returncode == 0, offline.stderr
    out: dict[str, dict[str, Any]] = {}
    for line in offline.stdout.splitlines():
        e = json.loads(line)
        out[f"{e['player_id']}/{e['category']}"] = e["state"]
    return out
