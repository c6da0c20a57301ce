"""The alerts of tornelo's closes on what real processes export, as `test_closes.py` checks fide's:
a real tornelo worker's and a real close follower's `/metrics` recorded in each situation, made
against the real broker and redis-server, then `promtool test rules` over an hour of it.

- a tournament left open (games recorded, no end read): the workers export its age beside their
  threshold (RATING_TOURNAMENT_OPEN_ALERT_SECONDS, here 1 s so that a few seconds pass it), and
  RatingTournamentOpenTooLong fires 15 minutes on, not before; its end read and its close
  finished by the follower, nothing is open and it is silent;
- a follower whose drain the workers do not answer (no worker runs; RATING_CLOSE_DRAIN_TIMEOUT_SECONDS
  of 1 s): it keeps waiting and exports how long, and RatingCloseDrainWaiting is pending, then
  fires 5 minutes on; a worker started, the drain ends, the tournament is closed and it is silent.

The rules' edges minute by minute, on written series, are `test_close_rules.py`'s.
"""

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.service.alerts.recording import (
    TROUBLED,
    firing,
    record,
    sample,
    start_recorded_worker,
    troubled,
    wait_until,
)
from tests.support import prometheus
from tests.support.prometheus import Recording
from tests.support.stack import Stack
from tests.support.tornelo_service import (
    create_ends_topic,
    game,
    publish_ends,
    run,
    seed_file,
    start_follower,
    tornelo,
    wait_closed,
)
from worker.embedded.stack import free_port

pytestmark = pytest.mark.integration

INTERVAL = 60  # seconds between the samples of the promtool series
HOURS = 1
SCRAPES = 10  # a growing wait shows its trend (the follower samples it every 0.5 s)
# Another tornelo deployment beside the troubled one, healthy: the alerts never mix deployments.
HEALTHY = {"namespace": "arena", "job": "rating-worker-tornelo-staging", "pod": "rating-worker-tornelo-staging-1"}
FOLLOWER = {
    "namespace": "arena",
    "job": "rating-worker-close-follower-tornelo",
    "pod": "rating-worker-close-follower-tornelo-1",
}


def check_alerts(tmp: Path, situation: Recording, target: dict[str, str], beside: Recording, tests: list[Any]) -> None:
    steps = HOURS * 3600 // INTERVAL
    series = prometheus.input_series(situation, target, INTERVAL, steps)
    series += prometheus.input_series(beside, HEALTHY, INTERVAL, steps)
    case = {"interval": f"{INTERVAL}s", "input_series": series, "promql_expr_test": tests}
    result = prometheus.run_promtool_test(tmp, [case], f"{INTERVAL}s")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]


def alerts(at: str, *expected: dict[str, Any], state: str = "firing") -> dict[str, Any]:
    return {"expr": f'ALERTS{{alertstate="{state}"}}', "eval_time": at, "exp_samples": list(expected)}


def pending(alert: str, severity: str, **labels: str) -> dict[str, Any]:
    shown = firing(alert, severity, **labels)
    return {**shown, "labels": shown["labels"].replace('alertstate="firing"', 'alertstate="pending"')}


def ran(done: "subprocess.CompletedProcess[bytes]") -> None:
    assert done.returncode == 0, done.stderr.decode(errors="replace")


async def seeded(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=4)
    await create_ends_topic(stack)
    ran(run(stack, "import", str(seed_file(stack.tmp / "seed.csv", "A,blitz,2000,40,", "B,blitz,1900,40,"))))


@pytest.mark.timeout(240)
async def test_a_tournament_open_past_the_threshold_is_alerted_and_its_end_ends_that(stack: Stack) -> None:
    await seeded(stack)
    port = await start_recorded_worker(stack, **tornelo(stack), tournament_open_alert_seconds=1)
    await stack.produce([game("g1", "A", "B", "1-0", "T1")])
    await wait_until(lambda: sample(port, "rating_period_oldest_open_seconds") >= 2, "T1 open for 2 s")
    left_open = await record(port, None, 3)
    assert left_open.last("rating_period_open_alert_seconds") == 1
    assert left_open.last("rating_period_latest_closed") == -1  # no tournament ended yet
    assert left_open.last("rating_period_due_open") == 0  # never due by the clock

    log = stack.tmp / "follower.log"
    start_follower(stack, log)
    await publish_ends(stack, "T1")
    wait_closed(stack, "T1", logs=log)
    await wait_until(lambda: sample(port, "rating_period_latest_closed") == 1, "the workers to see T1 ended")
    await wait_until(lambda: sample(port, "rating_period_closes_total", outcome="closed") == 1, "the close counted")
    closed = await record(port, None, 3)
    assert closed.last("rating_period_oldest_open_seconds") == 0
    assert closed.last("rating_period_close_in_progress") == 0
    assert closed.last("rating_period_last_close_ratings") == 2  # A's and B's close events

    open_too_long = troubled("RatingTournamentOpenTooLong", "warning")
    check_alerts(stack.tmp, left_open, TROUBLED, closed, [alerts("14m"), alerts("16m", open_too_long)])
    check_alerts(stack.tmp, closed, TROUBLED, closed, [alerts("16m"), alerts("50m")])


@pytest.mark.timeout(240)
async def test_a_drain_the_workers_do_not_answer_is_alerted_until_they_catch_up(stack: Stack) -> None:
    await seeded(stack)
    await stack.produce([game("g1", "A", "B", "1-0", "T1")])  # no worker applies it yet
    port = free_port()
    log = stack.tmp / "follower.log"
    start_follower(stack, log, metrics_port=port, close_drain_timeout_seconds=1)
    await publish_ends(stack, "T1")
    await wait_until(
        lambda: sample(port, "rating_close_drain_waiting_seconds") > 1, "the follower's drain past its timeout", 60
    )
    waiting = await record(port, None, SCRAPES)
    assert waiting.last("rating_close_ends_read_total") == 1
    assert waiting.last("rating_close_ends_lag_records") == 0  # read: waiting on the workers, not on the topic

    healthy = await start_recorded_worker(stack, **tornelo(stack))
    wait_closed(stack, "T1", logs=log)
    await wait_until(lambda: sample(port, "rating_close_drain_waiting_seconds") == 0, "the drain to end")
    caught_up = await record(port, None, 3)
    await wait_until(lambda: sample(healthy, "rating_period_latest_closed") == 1, "the workers to see T1 ended")

    labels = {"namespace": FOLLOWER["namespace"], "job": FOLLOWER["job"]}
    check_alerts(
        stack.tmp,
        waiting,
        FOLLOWER,
        caught_up,
        [
            alerts("4m", pending("RatingCloseDrainWaiting", "warning", **labels), state="pending"),
            alerts("4m"),
            alerts("5m", firing("RatingCloseDrainWaiting", "warning", **labels)),
            alerts("5m", state="pending"),
        ],
    )
    check_alerts(stack.tmp, caught_up, FOLLOWER, caught_up, [alerts("10m"), alerts("10m", state="pending")])
