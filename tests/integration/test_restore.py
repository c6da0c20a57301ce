"""`rating-worker restore`: Redis wiped, state rebuilt from the output topic, games still recognized."""

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from tests.integration.conftest import Stack
from tests.integration.kafka_io import Record, read_topic
from tests.integration.test_stream import wait_committed

REPO = Path(__file__).resolve().parents[2]
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
    return subprocess.run(
        [sys.executable, "-m", "worker", "restore", *args],
        env=stack.env(),
        capture_output=True,
        timeout=120,
        check=False,
    )


def test_restore_after_a_wipe_gives_back_the_same_state_and_redeliveries_stay_duplicates(stack: Stack) -> None:
    asyncio.run(_restore(stack))


async def _restore(stack: Stack) -> None:
    await stack.create_topics(games=2, ratings=3)
    assert stack.import_seed(SAMPLE_SEED).returncode == 0
    lines = SAMPLE.read_bytes().splitlines()
    await stack.produce(lines)
    worker = stack.start_worker()
    end = {p: n for p, n in (await _ends(stack)).items()}
    await wait_committed(stack, end)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    r = redis.Redis.from_url(stack.redis.url)
    before = states(r)
    published = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1)
    assert before and len(published) > len(before)

    r.flushall()
    done = restore(stack)
    assert done.returncode == 0, done.stderr
    assert states(r) == before
    # Every game with an event in the topic is recorded again, without facts.
    recorded = {k.decode().removeprefix("rating:g:") for k in r.scan_iter("rating:g:*")}
    assert _games_with_events(published) <= recorded
    assert r.get(f"rating:g:{sorted(recorded)[0]}") == b""
    assert f"{len(before)} states written".encode() in done.stderr

    again = restore(stack)  # idempotent: nothing left to do
    assert again.returncode == 0
    assert b"0 states written" in again.stderr
    assert states(r) == before

    # A redelivery after the restore of every game that had events changes nothing and
    # publishes nothing. (A game that changed nothing left no event: it cannot be restored,
    # which the README states; committed offsets, kept by Kafka, keep it from coming back.)
    with_events = _games_with_events(published)
    await stack.produce([line for line in lines if any(f'"game_id":"{g}"'.encode() in line for g in with_events)])
    stack.start_worker()
    await wait_committed(stack, await _ends(stack))
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


async def _ends(stack: Stack) -> dict[int, int]:
    records = await read_topic(stack.broker.bootstrap, stack.games_topic, 1, idle=0.5)
    end: dict[int, int] = {}
    for rec in records:
        end[rec.partition] = max(end.get(rec.partition, 0), rec.offset + 1)
    return end
