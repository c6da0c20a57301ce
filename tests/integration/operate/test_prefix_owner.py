"""`{prefix}system`: the rating system that owns a key prefix. The first command that writes
there records its system; a command of another system stops at start (status 2, one line),
before it joins a group or writes anything; a prefix holding keys without the owner key is the
arena's (it predates the key)."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.kafka import read_topic
from tests.support.stack import Stack

pytestmark = pytest.mark.integration

SEED = Path(__file__).resolve().parents[3] / "samples/seed.csv"
REFUSED = (
    "rating-worker: error: RATING_REDIS_KEY_PREFIX=rating: belongs to the rating system uscf-cc "
    "(rating:system), not arena: each deployment needs a prefix of its own\n"
)


def run(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "worker", *args],
        env=stack.env(log_level="error", command_retry_seconds=5),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_the_first_write_records_the_system_and_the_prefix_of_another_stops_every_command(
    stack: Stack,
) -> None:
    await stack.create_topics(games=1, ratings=2)
    r = stack.redis_client()
    assert r.get("rating:system") is None
    assert stack.import_seed(SEED).returncode == 0
    assert r.get("rating:system") == b"arena"

    r.set("rating:system", "uscf-cc")  # as if a uscf-cc deployment had been given this prefix
    before = {k: r.dump(k) for k in r.scan_iter("*")}
    commands = [("import", str(SEED), "--force"), ("restore", "--force"), ("erase", "p00000"), ("run",)]
    commands += [("switch-over",), ("records", "compact")]
    for command in commands:
        done = run(stack, *command)
        assert (done.returncode, done.stderr) == (2, REFUSED), command
    assert {k: r.dump(k) for k in r.scan_iter("*")} == before  # nothing written
    # Nothing produced either (no tombstone, no event beyond the first import's).
    published = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1)
    assert all(record.value is not None for record in published)
    assert await stack.committed(1) == {0: 0}  # the worker never joined its group to commit


async def test_a_prefix_with_keys_but_no_owner_is_the_arenas(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    r = stack.redis_client()
    r.set("rating:s:p1/blitz", b"an older release's state")
    done = run(stack, "records")  # reads only: claims nothing
    assert done.returncode == 0, done.stderr
    assert r.get("rating:system") is None
    assert stack.import_seed(SEED).returncode == 0
    assert r.get("rating:system") == b"arena"


async def test_rebuild_never_clears_a_prefix_it_does_not_own(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    r = stack.redis_client()
    r.set("rebuilt:system", "uscf-cc")
    r.set("rebuilt:s:p1/correspondence", b"another system's state")
    done = run(stack, "rebuild", "--prefix", "rebuilt:", "--force", "--seed", str(SEED))
    assert done.returncode == 2
    assert "RATING_REDIS_KEY_PREFIX=rebuilt: belongs to the rating system uscf-cc" in done.stderr
    assert r.get("rebuilt:s:p1/correspondence") == b"another system's state"  # nothing cleared
    # Another system's default prefix is refused before Redis is even asked.
    done = run(stack, "rebuild", "--prefix", "rating-uscf-cc:", "--force", "--seed", str(SEED))
    assert done.returncode == 2
    assert "overlaps the key prefix 'rating-uscf-cc:' of the rating system uscf-cc" in done.stderr
