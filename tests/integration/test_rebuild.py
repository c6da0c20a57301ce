"""`rebuild` recomputes every rating from the input topic into a fresh prefix; `switch-over`
publishes the ratings that differ as imported events with the next seq."""

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from tests.integration.conftest import Stack
from tests.integration.kafka_io import read_topic
from tests.integration.test_stream import wait_committed
from worker.state_codec import decode_state, encode_state

REPO = Path(__file__).resolve().parents[2]
SAMPLE, SAMPLE_SEED = REPO / "samples/games.jsonl", REPO / "samples/seed.csv"

pytestmark = pytest.mark.integration


def command(stack: Stack, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "worker", *args], env=stack.env(), capture_output=True, timeout=120, check=False
    )


def prefixed(r: redis.Redis, prefix: str) -> dict[str, bytes]:
    out = {}
    for key in r.scan_iter(f"{prefix}s:*"):
        value = r.get(key)
        assert isinstance(key, bytes) and isinstance(value, bytes)
        out[key.decode().removeprefix(f"{prefix}s:")] = value
    return out


def test_rebuild_recomputes_history_aside_and_switch_over_publishes_what_differs(stack: Stack) -> None:
    asyncio.run(_rebuild(stack))


async def _rebuild(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    assert stack.import_seed(SAMPLE_SEED).returncode == 0
    lines = SAMPLE.read_bytes().splitlines()
    await stack.produce(lines)
    worker = stack.start_worker()
    await wait_committed(stack, {0: len(lines)})
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    r = redis.Redis.from_url(stack.redis.url)
    live = prefixed(r, "rating:")

    # The sample is in (finished_at, game_id) order already: the rebuild must equal `rate`.
    offline = subprocess.run(
        [sys.executable, "-m", "worker", "rate", str(SAMPLE), "--seed", str(SAMPLE_SEED), "--dlq", "/dev/null"],
        capture_output=True,
        check=True,
    )
    expected: dict[str, dict[str, object]] = {}
    for line in offline.stdout.splitlines():
        e = json.loads(line)
        expected[f"{e['player_id']}/{e['category']}"] = e["state"]
    built = command(stack, "rebuild", "--seed", str(SAMPLE_SEED))
    assert built.returncode == 0, built.stderr
    rebuilt = prefixed(r, "rating-rebuild:")
    assert set(rebuilt) == set(expected)
    for key, value in rebuilt.items():
        state = decode_state(value)
        want = expected[key]
        assert state.rated_games == want["rated_games"] and state.seq == want["seq"], key
        assert (None if want["rating"] is None else round(float(want["rating"]) * 100)) == state.rating, key  # type: ignore[arg-type]
    assert prefixed(r, "rating:") == live  # the live state is untouched
    assert b"0 differ" in built.stderr

    again = command(stack, "rebuild", "--seed", str(SAMPLE_SEED))
    assert again.returncode == 1 and b"already holds keys" in again.stderr

    # A rule "corrected": the live state of one rated player was computed by the old rule.
    key = next(k for k, v in sorted(live.items()) if decode_state(v).rating is not None)
    old = decode_state(live[key])
    wrong = type(old)(old.rating + 1234 if old.rating else None, old.rated_games, old.qualifying, old.seq)
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
