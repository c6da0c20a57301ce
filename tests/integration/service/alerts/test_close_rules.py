"""The alerts of tornelo's closes as promtool unit tests of the rules (`promtool test rules`), on
series written in promtool's notation rather than recorded: the situations a real follower and
real workers are put in are `test_tornelo_closes.py`'s; these pin each rule's edges (when it is
pending, when it fires, what keeps it silent) minute by minute.

- RatingCloseDrainWaiting: pending from the follower's first report of a drain past its timeout,
  firing 5 minutes later, gone once the drain ends;
- RatingCloseFollowerLagging: end records waiting and not going down fire after 15 minutes; a
  backlog that goes down does not;
- RatingTournamentOpenTooLong: the oldest open tournament older than the threshold fires; a fide
  deployment, which exports the age of its oldest open month but no threshold, never does;
- RatingPeriodCloseStuck covers a tornelo deployment's close as fide's.
"""

from pathlib import Path
from typing import Any

import pytest

from tests.support import prometheus

pytestmark = pytest.mark.integration

TORNELO = {"namespace": "arena", "job": "rating-worker-tornelo", "pod": "rating-worker-tornelo-1", "system": "tornelo"}
FOLLOWER = {
    "namespace": "arena",
    "job": "rating-worker-close-follower-tornelo",
    "pod": "rating-worker-close-follower-tornelo-1",
    "system": "tornelo",
}
# Another tornelo deployment beside it (a staging copy), healthy: the alerts never mix deployments.
STAGING = {**FOLLOWER, "job": "rating-worker-close-follower-tornelo-staging", "pod": "staging-1"}
FIDE = {"namespace": "arena", "job": "rating-worker-fide", "pod": "rating-worker-fide-1", "system": "fide"}
SEVERITY = {
    "RatingCloseDrainWaiting": "warning",
    "RatingCloseFollowerLagging": "warning",
    "RatingTournamentOpenTooLong": "warning",
    "RatingPeriodCloseStuck": "warning",
}


def series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return {"series": f"{name}{{{inner}}}", "values": values}


def alert(name: str, state: str, target: dict[str, str]) -> dict[str, Any]:
    """One ALERTS sample: the alert in `state` for `target`'s deployment (its namespace and job)."""
    labels = {
        "alertname": name,
        "alertstate": state,
        "severity": SEVERITY[name],
        "namespace": target["namespace"],
        "job": target["job"],
    }
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return {"labels": "ALERTS{" + inner + "}", "value": 1}


def at(name: str, eval_time: str, *expected: dict[str, Any]) -> dict[str, Any]:
    """At `eval_time`, exactly `expected` of the alert `name` (pending or firing)."""
    return {"expr": f'ALERTS{{alertname="{name}"}}', "eval_time": eval_time, "exp_samples": list(expected)}


def check(tmp: Path, inputs: list[dict[str, str]], tests: list[dict[str, Any]]) -> None:
    case = {"interval": "1m", "input_series": inputs, "promql_expr_test": tests}
    result = prometheus.run_promtool_test(tmp, [case], "1m")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]


def test_a_drain_past_its_timeout_is_pending_then_fires_and_ends_with_it(tmp_path: Path) -> None:
    """The follower reports 0 until its drain passes RATING_CLOSE_DRAIN_TIMEOUT_SECONDS, then the
    seconds it has waited (from minute 10 to 30), then 0 again once the workers caught up."""
    name = "RatingCloseDrainWaiting"
    inputs = [
        series("rating_close_drain_waiting_seconds", FOLLOWER, "0x9 600+60x20 0x20"),
        series("rating_close_drain_waiting_seconds", STAGING, "0x50"),
    ]
    check(
        tmp_path,
        inputs,
        [
            at(name, "9m"),
            at(name, "10m", alert(name, "pending", FOLLOWER)),
            at(name, "14m", alert(name, "pending", FOLLOWER)),
            at(name, "15m", alert(name, "firing", FOLLOWER)),
            at(name, "30m", alert(name, "firing", FOLLOWER)),
            at(name, "31m"),
            at(name, "45m"),
        ],
    )


def test_a_drain_that_ends_within_five_minutes_of_its_timeout_never_fires(tmp_path: Path) -> None:
    name = "RatingCloseDrainWaiting"
    inputs = [series("rating_close_drain_waiting_seconds", FOLLOWER, "0x9 600+60x3 0x30")]
    check(
        tmp_path,
        inputs,
        [at(name, "11m", alert(name, "pending", FOLLOWER)), at(name, "15m"), at(name, "20m"), at(name, "40m")],
    )


def test_end_records_waiting_and_not_going_down_fire_after_15_minutes(tmp_path: Path) -> None:
    """From minute 10, 3 ends wait past the follower's position and stay there (a follower stuck
    in a close: its lag is not sampled again); beside it, a backlog of 300 from minute 10 worked
    down by 5 a minute (pending while the window still holds its rise, never firing), and a
    follower with none."""
    name = "RatingCloseFollowerLagging"
    inputs = [
        series("rating_close_ends_lag_records", FOLLOWER, "0x9 3x60"),
        series("rating_close_ends_lag_records", STAGING, "0x9 300-5x60"),
        series("rating_close_ends_lag_records", {**STAGING, "job": "quiet", "pod": "quiet-1"}, "0x70"),
    ]
    check(
        tmp_path,
        inputs,
        [
            at(name, "9m"),
            at(name, "10m", alert(name, "pending", FOLLOWER), alert(name, "pending", STAGING)),
            at(name, "24m", alert(name, "pending", FOLLOWER), alert(name, "pending", STAGING)),
            at(name, "25m", alert(name, "firing", FOLLOWER)),
            at(name, "60m", alert(name, "firing", FOLLOWER)),
        ],
    )


def test_a_growing_lag_fires_and_one_caught_up_ends_it(tmp_path: Path) -> None:
    name = "RatingCloseFollowerLagging"
    inputs = [series("rating_close_ends_lag_records", FOLLOWER, "1+1x30 0x30")]
    check(
        tmp_path,
        inputs,
        [
            at(name, "1m", alert(name, "pending", FOLLOWER)),  # a delta needs two samples
            at(name, "15m", alert(name, "pending", FOLLOWER)),
            at(name, "16m", alert(name, "firing", FOLLOWER)),
            at(name, "30m", alert(name, "firing", FOLLOWER)),
            at(name, "31m"),
        ],
    )


def test_a_tournament_open_past_the_threshold_fires_and_a_fide_month_never_does(tmp_path: Path) -> None:
    """tornelo's oldest open tournament is 600,000 s old at 0 and ages a minute a minute: past the
    threshold of 7 days (604,800 s) from minute 81, firing from minute 96. fide's oldest open month
    is 40 days old: its workers export no threshold, so nothing compares it."""
    name = "RatingTournamentOpenTooLong"
    week = 7 * 86400
    inputs = [
        series("rating_period_oldest_open_seconds", TORNELO, "600000+60x120"),
        series("rating_period_open_alert_seconds", TORNELO, f"{week}x120"),
        # A second pod of the same deployment: the same values (both read Redis), one alert.
        series("rating_period_oldest_open_seconds", {**TORNELO, "pod": "rating-worker-tornelo-2"}, "600000+60x120"),
        series("rating_period_open_alert_seconds", {**TORNELO, "pod": "rating-worker-tornelo-2"}, f"{week}x120"),
        series("rating_period_oldest_open_seconds", FIDE, f"{40 * 86400}+60x120"),
        series("rating_period_oldest_open_seconds", {**TORNELO, "job": "staging", "pod": "s-1"}, "0x120"),
        series("rating_period_open_alert_seconds", {**TORNELO, "job": "staging", "pod": "s-1"}, f"{week}x120"),
    ]
    check(
        tmp_path,
        inputs,
        [
            at(name, "80m"),
            at(name, "81m", alert(name, "pending", TORNELO)),
            at(name, "95m", alert(name, "pending", TORNELO)),
            at(name, "96m", alert(name, "firing", TORNELO)),
            at(name, "120m", alert(name, "firing", TORNELO)),
        ],
    )


def test_a_tournament_ended_before_the_threshold_stays_silent_and_a_lower_threshold_fires_sooner(
    tmp_path: Path,
) -> None:
    """The threshold is the deployment's setting (RATING_TOURNAMENT_OPEN_ALERT_SECONDS), exported
    by its workers: a deployment that sets a day is alerted a day in."""
    name = "RatingTournamentOpenTooLong"
    day = {**TORNELO, "job": "one-day", "pod": "one-day-1"}
    inputs = [
        # Its oldest open tournament ends at minute 60, the next one open is an hour old.
        series("rating_period_oldest_open_seconds", TORNELO, "600000+60x60 3600+60x60"),
        series("rating_period_open_alert_seconds", TORNELO, f"{7 * 86400}x120"),
        series("rating_period_oldest_open_seconds", day, "86000+60x120"),
        series("rating_period_open_alert_seconds", day, "86400x120"),
    ]
    check(
        tmp_path,
        inputs,
        [
            at(name, "6m"),
            at(name, "7m", alert(name, "pending", day)),
            at(name, "22m", alert(name, "firing", day)),
            at(name, "120m", alert(name, "firing", day)),
        ],
    )


def test_a_tornelo_close_in_progress_for_two_hours_is_stuck(tmp_path: Path) -> None:
    name = "RatingPeriodCloseStuck"
    inputs = [
        series("rating_period_close_in_progress", TORNELO, "0x9 1x200"),
        series("rating_period_close_in_progress", FIDE, "0x210"),
    ]
    check(
        tmp_path,
        inputs,
        [
            at(name, "9m"),
            at(name, "2h9m", alert(name, "pending", TORNELO)),
            at(name, "2h10m", alert(name, "firing", TORNELO)),
        ],
    )
