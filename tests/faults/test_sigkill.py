"""Several workers in one group, SIGKILLed at random moments under a steady load.

Games are keyed by game id, so a player's games are spread over every partition and the
workers race for the same ratings. Whatever is killed when, the output must audit clean,
every game be applied once, and Redis end in the state of each rating's last published event.
"""

import asyncio
import random
import signal
import subprocess
import time
from datetime import UTC, datetime

import pytest

from tests.faults.fault_report import FaultReport, report_fault
from tests.support.audit import check_everything
from tests.support.games import keyed
from tests.support.stack import Stack

pytestmark = pytest.mark.integration

KILLS = 6
# Each kill stalls the group until the dead member's session expires (~5-6 s on tansu with a
# 3 s session), so the kills take ~35 s: 40 chunks of 250 games 0.8 s apart keep a steady
# load (~300 games/s) through all of them.
CHUNKS = 40
CHUNK_PAUSE = 0.8
HOLDER_WAIT = 15.0  # a rebalance after a kill takes ~6 s; twice that means the group is stuck


# The test takes 10-40 s on 2 cores and every wait inside has its own shorter bound; this one
# only turns a hang anywhere else into a failure.
@pytest.mark.timeout(120)
@pytest.mark.faults
async def test_sigkill_at_random_moments_loses_nothing_and_applies_nothing_twice(stack: Stack) -> None:
    await stack.create_topics(games=6, ratings=4)
    sim = stack.seeded_simulation(300, seed=47)
    lines = list(sim.game_lines(10_000))
    size = len(lines) // CHUNKS
    chunks = [lines[i : i + size] for i in range(0, len(lines), size)]
    rng = random.Random(20261101)

    await stack.produce(chunks[0], keyed(chunks[0]))
    stack.start_worker()
    stack.start_worker()
    await _until_some_committed(stack, partitions=6)

    async def feed() -> None:
        for chunk in chunks[1:]:
            await stack.produce(chunk, keyed(chunk))
            await asyncio.sleep(CHUNK_PAUSE)

    feeding = asyncio.create_task(feed())
    killed: list[subprocess.Popen[bytes]] = []
    for _ in range(KILLS):
        await asyncio.sleep(rng.uniform(0.5, 3.0))
        holders = await _holders(stack, rng)
        victim = rng.choice(holders)
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
        killed.append(victim)
        print(f"{datetime.now(UTC):%H:%M:%S.%f} SIGKILL worker-{stack.workers.index(victim)} (pid {victim.pid})")
        stack.start_worker()
    await feeding

    end = await stack.end_offsets(len(lines))
    started = time.monotonic()
    await stack.wait_committed(end, timeout=60)
    recovery = time.monotonic() - started
    crashed = [w.returncode for w in stack.workers if w not in killed and w.poll() is not None]
    assert not crashed, f"workers not killed by the test exited on their own: {crashed}"

    tally = await check_everything(stack, lines)
    # check_everything passed: every game recorded once, nothing lost or applied twice.
    offered = len(lines)
    report_fault(FaultReport(f"{len(killed)} worker SIGKILLs", offered, offered, offered, tally.copies, 0, 0, recovery))
    print(
        f"\n{len(killed)} SIGKILLs: {len(lines)} games, {len(tally.events)} distinct events, "
        f"{tally.copies} duplicate copies; all committed {recovery:.1f} s after the load ended"
    )


async def _holders(stack: Stack, rng: random.Random) -> list[subprocess.Popen[bytes]]:
    """The live workers holding partitions, once one does, plus a random 0-0.5 s into its work.

    Right after a kill the group rebalances and nobody holds any; a replacement killed before it
    joined, or a worker killed while it waits for the rebalance, proves nothing. The backlog that
    built up during the rebalance is in flight just after the assignment.
    """
    deadline = time.monotonic() + HOLDER_WAIT
    while True:
        assert time.monotonic() < deadline, f"no worker held partitions within {HOLDER_WAIT} s"
        live = [(n, w) for n, w in enumerate(stack.workers) if w.poll() is None]
        assert live, "no worker alive"
        if [w for n, w in live if stack.holds_partitions(n)]:
            await asyncio.sleep(rng.uniform(0, 0.5))
            holding = [w for n, w in live if w.poll() is None and stack.holds_partitions(n)]
            if holding:
                return holding
        await asyncio.sleep(0.05)


async def _until_some_committed(stack: Stack, partitions: int, timeout: float = 30) -> None:
    """The workers joined and are busy: kills then hit work in flight, not an idle start."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = await stack.committed(partitions)
        if sum(done.values()) > 0:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"nothing committed within {timeout} s of starting the workers")
