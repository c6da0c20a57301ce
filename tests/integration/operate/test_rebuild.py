"""`rebuild` recomputes every rating from the input topic into a fresh prefix; `switch-over`
publishes the ratings that differ as imported events with the next seq."""

import asyncio
import contextlib
import json
import random
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.asyncio import Redis as AsyncRedis

from schemas.game_finished import GameFinished
from tests.support import commands
from tests.support.kafka import read_topic
from tests.support.rate import rate
from tests.support.stack import Stack
from worker.engine.decoder import BadInput, decode_game
from worker.engine.engine import Engine
from worker.operate.rebuild import apply_all, history_order
from worker.replay.memory_store import MemoryBackend, MemoryStore
from worker.replay.seed_file import read_seed_file
from worker.rules.hundredths import Hundredths, Points
from worker.store import records
from worker.store.schedule import SeedItem, apply_in_order
from worker.systems.arena.codec import decode_state, encode_state
from worker.systems.arena.state import UNSEEN
from worker.systems.registry import ARENA

REPO = Path(__file__).resolve().parents[3]
SAMPLE, SAMPLE_SEED = REPO / "samples/games.jsonl", REPO / "samples/seed.csv"

pytestmark = pytest.mark.integration


@pytest.fixture
async def stack(stack: Stack) -> Stack:
    """The test's stack, its topics created: one games partition, two ratings partitions."""
    await stack.create_topics(games=1, ratings=2)
    return stack


def command(stack: Stack, *args: str) -> subprocess.CompletedProcess[bytes]:
    return commands.run(
        [sys.executable, "-m", "worker", *args], env=stack.env(), capture_output=True, timeout=120, check=False
    )


def prefixed(r: redis.Redis, prefix: str) -> dict[str, bytes]:
    out = {}
    for key in r.scan_iter(f"{prefix}s:*"):
        value = r.get(key)
        assert isinstance(key, bytes) and isinstance(value, bytes)
        out[key.decode().removeprefix(f"{prefix}s:")] = value
    return out


async def test_rebuild_recomputes_history_aside_and_switch_over_publishes_what_differs(stack: Stack) -> None:
    assert stack.import_seed(SAMPLE_SEED).returncode == 0
    lines = SAMPLE.read_bytes().splitlines()
    await stack.produce(lines)
    worker = stack.start_worker()
    await stack.wait_committed({0: len(lines)})
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    r = stack.redis_client()
    live = prefixed(r, "rating:")

    # The sample is in (finished_at, game_id) order already: the rebuild must equal `rate`.
    expected = offline_states(lines, SAMPLE_SEED)
    built = command(stack, "rebuild", "--seed", str(SAMPLE_SEED))
    assert built.returncode == 0, built.stderr
    rebuilt = prefixed(r, "rating-rebuild:")
    assert set(rebuilt) == set(expected)
    for key, value in rebuilt.items():
        state = decode_state(value)
        want = expected[key]
        assert state.rated_games == want["rated_games"] and state.seq == want["seq"], key
        assert (None if want["rating"] is None else round(float(want["rating"]) * 100)) == state.rating, key
    assert prefixed(r, "rating:") == live  # the live state is untouched
    assert b"0 differ" in built.stderr

    again = command(stack, "rebuild", "--seed", str(SAMPLE_SEED))
    assert again.returncode == 1 and b"already holds keys" in again.stderr

    # A rule "corrected": the live state of one rated player was computed by the old rule.
    key = next(k for k, v in sorted(live.items()) if decode_state(v).rating is not None)
    old = decode_state(live[key])
    wrong = type(old)(Hundredths(old.rating + 1234) if old.rating else None, old.rated_games, old.qualifying, old.seq)
    r.set(f"rating:s:{key}", encode_state(wrong))
    before = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1)
    switched = command(stack, "switch-over")
    assert switched.returncode == 0, switched.stderr
    assert b"1 imported events published" in switched.stderr
    after = await read_topic(stack.broker.bootstrap, stack.ratings_topic, len(before) + 1)
    seen = {rec.value for rec in before}
    new = [json.loads(rec.value) for rec in after if rec.value not in seen and rec.value is not None]
    assert len(new) == 1
    (event,) = new
    assert (event["kind"], f"{event['player_id']}/{event['category']}") == ("imported", key)
    assert event["seq"] == old.seq + 1
    assert round(event["rating_before"] * 100) == wrong.rating
    assert round(event["rating_after"] * 100) == decode_state(rebuilt[key]).rating
    fixed = decode_state(prefixed(r, "rating:")[key])
    assert (fixed.rating, fixed.seq) == (decode_state(rebuilt[key]).rating, old.seq + 1)


async def test_a_rebuild_that_spills_its_sorts_equals_the_sort_in_memory(stack: Stack) -> None:
    """Games out of order, exact copies and conflicting ones (some earlier in history than their
    original): sorted through files under the least budget (`--memory-mb 16`, the games padded to
    60 KB each to fill its runs), the result is the in-memory sort's of each game's first copy (no
    worker ran: the lowest offset is kept, whatever its finished_at), state for state and record
    for record."""
    rng = random.Random(7)
    lines = SAMPLE.read_bytes().splitlines()
    valid = []
    for line in lines:
        with contextlib.suppress(BadInput):
            valid.append(decode_game(line, 65536).model_dump(mode="json"))
    for game in rng.sample(valid, 30):  # exact copies
        lines.insert(rng.randrange(len(lines) + 1), json.dumps(game, separators=(",", ":")).encode())
    for n, game in enumerate(rng.sample(valid, 20)):  # conflicting copies, half of them earlier in history
        other = {**game, "result": "1/2-1/2" if game["result"] != "1/2-1/2" else "1-0"}
        if n % 2 == 0:
            other["finished_at"] = "2026-10-31T23:59:59Z"
        lines.insert(rng.randrange(len(lines) + 1), json.dumps(other, separators=(",", ":")).encode())
    rng.shuffle(lines)
    lines = [padded(line, 60_000) for line in lines]  # about 33 MB: four runs of 8 MiB a sort
    await stack.produce(lines)

    built = command(stack, "rebuild", "--seed", str(SAMPLE_SEED), "--memory-mb", "16")
    assert built.returncode == 0, built.stderr
    runs = re.search(rb"the history's sorts spilled (\d+) runs", built.stderr)
    assert runs is not None and int(runs[1]) >= 6, built.stderr  # three or more runs spilled by each sort

    # The in-memory sort: each valid game's first copy in the partition, in (instant, game_id) order.
    firsts: dict[str, GameFinished] = {}
    for line in lines:
        with contextlib.suppress(BadInput):  # dead letters are not history
            first = decode_game(line, 65536)  # RATING_MAX_MESSAGE_BYTES default
            firsts.setdefault(first.game_id, first)
    games = list(firsts.values())
    engine = Engine(ARENA, Points(1200))  # RATING_TRAINING_RATING's default, as the command runs
    expected = MemoryBackend(UNSEEN, keep_outboxes=False)
    await apply_in_order(
        engine, MemoryStore(expected), [SeedItem(row, False) for row in read_seed_file(SAMPLE_SEED, ARENA.rules)]
    )
    await apply_all(engine, expected, sorted(games, key=history_order))

    r = stack.redis_client()
    rebuilt = prefixed(r, "rating-rebuild:")
    assert rebuilt == {k: encode_state(v) for k, v in expected.states.items()}
    game_ids = {g.game_id for g in games}
    client = AsyncRedis.from_url(stack.redis.url)
    try:
        recorded = await records.lookup(client, "rating-rebuild:", sorted(game_ids))
    finally:
        await client.aclose()
    assert recorded == {g: expected.record(g) for g in game_ids}


def padded(line: bytes, size: int) -> bytes:
    """A valid game's line with JSON whitespace before its closing brace, `size` bytes long (the
    same game); any other line as it is."""
    try:
        decode_game(line, 65536)
    except BadInput:
        return line
    return line[:-1] + b" " * (size - len(line)) + line[-1:]


def offline_states(lines: list[bytes], seed: Path) -> dict[str, dict[str, Any]]:
    """Each rating's last `state`, from `rate` over `seed` and these games in this order."""
    offline = rate("-", "--seed", seed, "--dlq", "/dev/null", stdin=b"\n".join(lines) + b"\n")
    assert offline.returncode == 0, offline.stderr
    out: dict[str, dict[str, Any]] = {}
    for line in offline.stdout.splitlines():
        e = json.loads(line)
        out[f"{e['player_id']}/{e['category']}"] = e["state"]
    return out


@pytest.mark.timeout(180)
async def test_a_switch_over_while_the_worker_runs_changes_nothing_when_no_rule_changed(stack: Stack) -> None:
    assert stack.import_seed(SAMPLE_SEED).returncode == 0
    lines = SAMPLE.read_bytes().splitlines()
    first, rest = lines[:250], lines[250:]
    await stack.produce(first)
    worker = stack.start_worker()
    await stack.wait_committed({0: len(first)})
    built = command(stack, "rebuild", "--seed", str(SAMPLE_SEED))
    assert built.returncode == 0, built.stderr
    assert b"0 differ" in built.stderr

    async def feed() -> None:  # the rest arrives while the switch-over runs
        for start in range(0, len(rest), 25):
            await stack.produce(rest[start : start + 25])
            await asyncio.sleep(0.1)

    feeding = asyncio.create_task(feed())
    await asyncio.sleep(0.3)
    switched = await asyncio.to_thread(command, stack, "switch-over")
    await feeding
    assert switched.returncode == 0, switched.stderr
    assert b"0 imported events published" in switched.stderr
    await stack.wait_committed({0: len(lines)})
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0

    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1)
    events = [json.loads(r.value) for r in records if r.value is not None]
    seeded = sum(1 for line in SAMPLE_SEED.read_text().splitlines()[1:] if line)
    assert sum(1 for e in events if e["kind"] == "imported") == seeded  # the seed's, none from the switch-over
    last: dict[str, dict[str, object]] = {}
    for e in sorted(events, key=lambda e: e["seq"]):
        last[f"{e['player_id']}/{e['category']}"] = e["state"]
    assert last == offline_states(lines, SAMPLE_SEED)  # what the offline replay of the whole stream gives


def game_at(game_id: str, finished_at: str, white: str, black: str) -> bytes:
    return json.dumps(
        {
            "event_id": f"ev-{game_id}",
            "game_id": game_id,
            "finished_at": finished_at,
            "rated": True,
            "time_control": {"base_seconds": 180, "increment_seconds": 0},
            "white_id": white,
            "black_id": black,
            "result": "1-0",
            "termination": "checkmate",
        },
        separators=(",", ":"),
    ).encode()


async def test_rebuild_orders_a_game_of_year_0000_before_the_others(stack: Stack) -> None:
    seed = stack.tmp / "seed.csv"
    seed.write_text("player_id,category,rating,rated_games\na,blitz,1800.00,40\nb,blitz,1700.00,40\n")
    late = game_at("g-late", "2026-11-29T21:44:51Z", "a", "b")
    # Year 0000, with an offset that takes it before the year's start in UTC.
    early = game_at("g-early", "0000-01-01T00:30:00+01:00", "b", "a")
    await stack.produce([late, early])
    built = command(stack, "rebuild", "--seed", str(seed))
    assert built.returncode == 0, built.stderr
    expected = offline_states([early, late], seed)
    r = stack.redis_client()
    rebuilt = prefixed(r, "rating-rebuild:")
    for key, state in expected.items():
        got = decode_state(rebuilt[key])
        assert (got.seq, got.rated_games) == (state["seq"], state["rated_games"]), key
        assert got.rating == round(float(state["rating"]) * 100), key


async def test_rebuild_force_clears_its_prefix_and_an_overlapping_prefix_is_refused(stack: Stack) -> None:
    assert stack.import_seed(SAMPLE_SEED).returncode == 0
    lines = SAMPLE.read_bytes().splitlines()[:50]
    await stack.produce(lines)
    r = stack.redis_client()
    live = prefixed(r, "rating:")
    assert live
    r.set("rating-rebuild:s:stray/blitz", b"9|150000|3|")  # left by an earlier rebuild
    r.set("rating-rebuild:g:stray-game", b"00")
    forced = command(stack, "rebuild", "--seed", str(SAMPLE_SEED), "--force")
    assert forced.returncode == 0, forced.stderr
    assert r.get("rating-rebuild:s:stray/blitz") is None and r.get("rating-rebuild:g:stray-game") is None
    assert prefixed(r, "rating-rebuild:")
    for prefix in ("rating", "rating:x:", "r"):
        overlapping = command(stack, "rebuild", "--prefix", prefix, "--force")
        assert overlapping.returncode == 2, prefix
        assert b"overlaps RATING_REDIS_KEY_PREFIX" in overlapping.stderr
    pattern = command(stack, "rebuild", "--prefix", "re*", "--force")  # would clear `re**`: every key
    assert pattern.returncode == 2 and b"which Redis reads as a key pattern" in pattern.stderr
    assert prefixed(r, "rating:") == live  # nothing of the live prefix was touched or cleared
