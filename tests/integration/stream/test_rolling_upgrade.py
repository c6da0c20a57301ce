"""A rolling upgrade from the release before the compact idempotency records (worker.store.records).

That release reads and writes one legacy key per game and nothing else. Its workers and this
release's share one consumer group and one store while a deploy rolls: each game comes again as
copies on other partitions, so that a copy of a game one release applied is read by the other.
No game may be applied twice: not while both run (this release writes both layouts on a store the
earlier one wrote), nor after the earlier one is gone and `rating-worker records compact` ran.

The earlier release runs from a git worktree of its commit, with this checkout's environment.
"""

import asyncio
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import commands
from tests.support.audit import check_everything
from tests.support.games import keyed
from tests.support.stack import Stack
from worker.store import keys
from worker.systems.arena.traffic import ArenaSimulation

pytestmark = pytest.mark.integration

# The last commit of the release with legacy records only.
LEGACY_RELEASE = "f2a38e0183f37bfe6b7cc9350f1c33c0c9d6e569"
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def legacy_code(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tree = tmp_path_factory.mktemp("legacy") / "tree"
    added = subprocess.run(
        ["git", "worktree", "add", "--detach", str(tree), LEGACY_RELEASE], cwd=ROOT, capture_output=True, check=False
    )
    if added.returncode != 0:
        pytest.fail(f"cannot check out the earlier release {LEGACY_RELEASE} (a shallow clone?): {added.stderr!r}")
    yield tree
    subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True, check=False)


def copies(lines: list[bytes], n: int) -> tuple[list[bytes], list[bytes | None]]:
    """`n` copies of each game under other keys: most land on partitions another worker holds."""
    values: list[bytes] = []
    copy_keys: list[bytes | None] = []
    for line in lines:
        game_id = json.loads(line)["game_id"]
        for i in range(n):
            values.append(line)
            copy_keys.append(f"{game_id}/copy-{i}".encode())
    return values, copy_keys


async def wait_both_hold_partitions(stack: Stack, timeout: float = 60) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not all(stack.holds_partitions(n) for n in range(len(stack.workers))):
        assert asyncio.get_running_loop().time() < deadline, "the two workers never shared the partitions"
        await asyncio.sleep(0.2)


@pytest.mark.timeout(240)
async def test_old_and_new_workers_in_one_group_apply_no_game_twice(stack: Stack, legacy_code: Path) -> None:
    await stack.create_topics(games=4, ratings=4)
    sim = ArenaSimulation(120, seed=13)
    seed = stack.tmp / "seed.csv"
    seed.write_text(sim.seed_csv(), encoding="utf-8")
    assert stack.import_seed(seed, code=legacy_code).returncode == 0  # the store as the earlier release left it
    lines = list(sim.game_lines(1500, 0.0, 0.0))
    before, during, after = lines[:300], lines[300:1000], lines[1000:]

    # Before the deploy: the earlier release alone.
    old = stack.start_worker_from(legacy_code)
    await stack.produce(before, keyed(before))
    produced = len(before)
    await stack.wait_committed(await stack.end_offsets(produced))
    r = stack.redis_client()
    assert r.hget(keys.store_key("rating:"), "records") is None, "the earlier release knows no compact records"

    # During the deploy: both releases in the group, every game of `before` and `during` again.
    stack.start_worker()
    await wait_both_hold_partitions(stack)
    await stack.produce(during, keyed(during))
    values, copy_keys = copies(before + during, 2)
    await stack.produce(values, copy_keys)
    produced += len(during) + len(values)
    await stack.wait_committed(await stack.end_offsets(produced))
    assert r.hget(keys.store_key("rating:"), "records") == b"both"

    # After it: the earlier release gone, the legacy writes stopped, every game again.
    old.send_signal(signal.SIGTERM)
    assert old.wait(timeout=30) == 0
    flipped = commands.run(
        [sys.executable, "-m", "worker", "records", "compact"],
        env=stack.env(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert flipped.returncode == 0 and b"records: compact" in flipped.stderr, flipped.stderr
    await stack.produce(after, keyed(after))
    values, copy_keys = copies(lines, 1)
    await stack.produce(values, copy_keys)
    produced += len(after) + len(values)
    await stack.wait_committed(await stack.end_offsets(produced))

    # Each game applied once (one or two distinct events, none repeated with other bytes), the
    # store at the published states, every game recorded.
    tally = await check_everything(stack, lines)
    assert tally.game_ids, "no game was applied"
