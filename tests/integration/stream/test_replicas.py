"""Several workers in one group: games of one player on many partitions at once.

Games are keyed by game id, so a player's games are spread over every partition and the
workers race for the same ratings: only the per-rating check-and-set keeps them in order.
Whatever the interleaving, the output must audit clean and Redis must end in the state of
each rating's last published event. (The same under SIGKILLs: tests/faults/test_sigkill.py.)
"""

import time

import pytest

from tests.support.audit import check_everything
from tests.support.games import keyed
from tests.support.stack import Stack

pytestmark = pytest.mark.integration


# Each test takes 10-40 s on 2 cores and every wait inside has its own shorter bound; this one
# only turns a hang anywhere else into a failure.
@pytest.mark.timeout(120)
async def test_three_workers_on_twelve_partitions_apply_every_game_once(stack: Stack) -> None:
    await stack.create_topics(games=12, ratings=6)
    sim = stack.seeded_simulation(300, seed=31)
    lines = list(sim.game_lines(20_000))
    await stack.produce(lines, keyed(lines))
    end = await stack.end_offsets(len(lines))
    assert len(end) == 12, f"games landed in {len(end)} of 12 partitions"

    started = time.monotonic()
    for _ in range(3):
        stack.start_worker()
    await stack.wait_committed(end, timeout=60)
    took = time.monotonic() - started
    assert all(w.poll() is None for w in stack.workers), f"a worker exited: {[w.returncode for w in stack.workers]}"

    tally = await check_everything(stack, lines)
    sharing = sum(stack.holds_partitions(n) for n in range(len(stack.workers)))
    print(
        f"\n3 workers ({sharing} holding partitions), 12 partitions: {len(lines)} games committed in {took:.1f} s; "
        f"{len(tally.events)} distinct events, {tally.copies} duplicate copies"
    )
