"""The alerts of a per-period system's closes (`fide`), as `test_held_up.py` checks the others: a
real fide worker's `/metrics` recorded in each situation, made by real `close-period` runs against
the real broker and redis-server, then `promtool test rules` over more than a day of it.

- a due month left open: RatingPeriodCloseOverdue fires once it has been open for a day, not
  before; closed by `close-period --due`, it is silent;
- a close left in progress (marked, as a run killed after its mark leaves it): RatingPeriodCloseStuck
  fires after two hours, not before; finished by `close-period --due`, it is silent.

On the way, the worker's gauges are checked against what the runs did: the latest closed month,
the due month open or not, the close in progress and its ratings left, the runs by outcome, the
last close's ratings and time, and a late game counted.
"""

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from tests.integration.service.alerts.recording import (
    TROUBLED,
    record,
    sample,
    start_recorded_worker,
    troubled,
    wait_until,
)
from tests.support import prometheus
from tests.support.closes import FIDE, PREFIX, close_period, due_month, game, killed_close_store, month_before
from tests.support.prometheus import Recording
from tests.support.stack import Stack
from worker.rules.finished_at import month_number
from worker.store import keys

pytestmark = pytest.mark.integration

INTERVAL = 60  # seconds between the samples of the promtool series: a day and more of them
SCRAPES = 3  # the values only change when a run or a game changes them
# Another fide deployment beside the troubled one, healthy: the alerts never mix deployments.
HEALTHY = {"namespace": "arena", "job": "rating-worker-fide-staging", "pod": "rating-worker-fide-staging-1"}


def check_alerts(
    tmp: Path, situation: Recording, beside: Recording, hours: int, expected: dict[str, list[Any]]
) -> None:
    """promtool over `hours` of the two recordings: at each evaluation time of `expected` (`23h`,
    ...), exactly those alerts fire."""
    steps = hours * 3600 // INTERVAL
    series = prometheus.input_series(situation, TROUBLED, INTERVAL, steps)
    series += prometheus.input_series(beside, HEALTHY, INTERVAL, steps)
    case = {
        "interval": f"{INTERVAL}s",
        "input_series": series,
        "promql_expr_test": [
            {"expr": 'ALERTS{alertstate="firing"}', "eval_time": at, "exp_samples": alerts}
            for at, alerts in expected.items()
        ],
    }
    result = prometheus.run_promtool_test(tmp, [case], f"{INTERVAL}s")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]


async def settled(port: int, what: str, condition: Callable[[], bool]) -> Recording:
    """The worker's /metrics recorded once it has read the situation (every 5 s) from Redis."""
    await wait_until(condition, what)
    return await record(port, None, SCRAPES)


def ran(done: "subprocess.CompletedProcess[bytes]") -> None:
    assert done.returncode == 0, done.stderr.decode(errors="replace")


@pytest.mark.timeout(240)
async def test_a_due_month_left_open_for_a_day_is_overdue_and_closing_it_ends_that(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=4)
    due = due_month()
    ran(close_period(stack, "--init", month_before(due)))  # the month before the due one closed
    port = await start_recorded_worker(stack, **FIDE)
    left_open = await settled(port, "the due month open", lambda: sample(port, "rating_period_due_open") == 1)
    assert left_open.last("rating_period_latest_closed") == month_number(month_before(due))
    assert left_open.last("rating_period_close_in_progress") == 0
    assert left_open.last("rating_period_closes_total", outcome="closed") == 0  # --init is no run

    ran(close_period(stack, "--due"))  # no game recorded: it marks the due month, its index empty
    closed = await settled(port, "the close", lambda: sample(port, "rating_period_closes_total", outcome="closed") == 1)
    assert closed.last("rating_period_due_open") == 0
    assert closed.last("rating_period_latest_closed") == month_number(due)
    closed_at = stack.redis_client().hget(keys.periods_key(PREFIX), "closed_at")
    assert closed_at is not None
    assert closed.last("rating_period_last_closed_timestamp_seconds") == float(closed_at)
    assert closed.last("rating_period_last_close_ratings") == 0

    check_alerts(
        stack.tmp,
        left_open,
        closed,
        26,
        {"23h": [], "25h": [troubled("RatingPeriodCloseOverdue", "warning")]},
    )
    check_alerts(stack.tmp, closed, closed, 26, {"25h": []})


@pytest.mark.timeout(240)
async def test_a_close_left_in_progress_is_stuck_and_finishing_it_ends_that(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=4)
    due = due_month()
    port = await start_recorded_worker(stack, **FIDE)
    await stack.produce([game("g1", "A", "B", due), game("g2", "C", "D", due)])
    await stack.wait_committed(await stack.end_offsets(2), timeout=60)
    # The due month marked closed, as a close-period killed right after its mark leaves it.
    client = Redis.from_url(stack.redis.url)
    try:
        store = killed_close_store(client)
        assert await store.mark(0, due, due) == 1
    finally:
        await client.aclose()
    stuck = await settled(port, "the close in progress", lambda: sample(port, "rating_period_close_in_progress") == 1)
    assert stuck.last("rating_period_close_ratings_left") == 4
    assert stuck.last("rating_period_due_open") == 0  # marked: the month counts as closed

    ran(close_period(stack, "--due"))  # finishes the close in progress
    await stack.produce([game("g3", "A", "C", due)])  # its month closed: late, recorded in the next
    finished = await settled(
        port,
        "the close finished and the late game",
        lambda: (
            sample(port, "rating_period_closes_total", outcome="closed") == 1
            and sample(port, "rating_period_games_late_total") == 1
        ),
    )
    assert finished.last("rating_period_close_in_progress") == 0
    assert finished.last("rating_period_close_ratings_left") == 0
    assert finished.last("rating_period_last_close_ratings") == 4
    assert (finished.last("rating_period_last_close_seconds") or 0) > 0

    check_alerts(
        stack.tmp,
        stuck,
        finished,
        4,
        {"1h50m": [], "3h": [troubled("RatingPeriodCloseStuck", "warning")]},
    )
    check_alerts(stack.tmp, finished, finished, 4, {"3h": []})
