"""The workers' export of the closes (`worker.service.period_closes.Export`): what a read of the
store becomes as metrics, and which processes have those metrics at all (a per-period system's
workers only; those read from Redis from the first read on, at the values read)."""

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from prometheus_client import REGISTRY, generate_latest

from worker import metrics
from worker.engine.decoder import ErrorKind
from worker.service.period_closes import Export, Seen
from worker.stream.retry import OPERATIONS
from worker.systems.arena.rules import ArenaRules
from worker.systems.fide.codec import FIDE_CALENDAR
from worker.systems.fide.rules import FideRules
from worker.systems.tornelo.codec import TORNELO_CALENDAR
from worker.systems.tornelo.rules import TorneloRules

# An hour into December (RATING_PERIOD_GRACE_SECONDS's default): November is not due yet, October is.
NOW = int(datetime(2026, 12, 1, 0, 30, tzinfo=UTC).timestamp())
GRACE = 3600
OPEN_ALERT = 604800  # RATING_TOURNAMENT_OPEN_ALERT_SECONDS's default: 7 days


def value(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


def seen(calendar: bytes, closes: dict[str, float] | None = None, closing: str | None = None, left: int = 0) -> Seen:
    return Seen(closes or {}, calendar, closing, left, None if closing else 1_790_000_000.0)


def ended(marks: int, opened: dict[str, float] | None = None, closing: str | None = None, left: int = 0) -> Seen:
    """A read of tornelo's store: `marks` tournaments marked ended (the one value kept beside the
    marks, the latest's id, is not what the export reads), the open ones' first recordings."""
    latest = f"t{marks}".encode() if marks else b""
    return Seen({}, latest, closing, left, None, marks, opened or {})


@pytest.fixture
def fide() -> Iterator[Export]:
    """A fide worker's metrics: prepared as `run` prepares them; the arena's again afterwards."""
    metrics.prepare(FideRules(), ErrorKind, OPERATIONS, periodic=True)
    try:
        yield Export(FideRules(), FIDE_CALENDAR, GRACE)
    finally:
        metrics.prepare(ArenaRules(), ErrorKind, OPERATIONS)


def test_only_a_per_period_systems_workers_have_the_close_metrics_and_those_of_redis_after_a_read(
    fide: Export,
) -> None:
    assert value("rating_period_games_late_total") is not None  # this process's own, from start-up
    assert value("rating_period_due_open") is None  # not read yet: absent, not a 0 it does not mean
    fide.show(seen(b"2026-09"), NOW)
    served = generate_latest(metrics.exposed("fide")).decode()
    assert 'rating_period_due_open{system="fide"} 1.0' in served
    metrics.prepare(ArenaRules(), ErrorKind, OPERATIONS)
    served = generate_latest(metrics.exposed("arena")).decode()
    assert "rating_period_" not in served


def test_the_due_month_is_open_until_it_is_marked_and_the_latest_closed_month_is_a_number(fide: Export) -> None:
    fide.show(seen(b""), NOW)
    assert value("rating_period_latest_closed") == -1  # nothing closed
    assert value("rating_period_due_open") == 1
    fide.show(seen(b"2026-09"), NOW)
    assert value("rating_period_latest_closed") == 2026 * 12 + 8
    assert value("rating_period_due_open") == 1  # October is due
    fide.show(seen(b"2026-10", closing="2026-10", left=7), NOW)  # marked, its close in progress
    assert value("rating_period_due_open") == 0
    assert value("rating_period_close_in_progress") == 1
    assert value("rating_period_close_ratings_left") == 7
    fide.show(seen(b"2026-10"), NOW)
    assert (value("rating_period_close_in_progress"), value("rating_period_close_ratings_left")) == (0, 0)
    assert value("rating_period_last_closed_timestamp_seconds") == 1_790_000_000.0


def test_the_runs_counted_in_redis_are_counters_made_at_the_stores_count(fide: Export) -> None:
    """A pod's start is no increase: the first read makes each series at the store's count; a
    count that went down (the record deleted) is a counter reset."""
    record = {"closed": 3.0, "nothing_due": 40.0, "seconds": 12.5, "ratings": 812.0, "drain_seconds": 0.4}
    fide.show(seen(b"2026-10", record), NOW)
    assert value("rating_period_closes_total", outcome="closed") == 3
    assert value("rating_period_closes_total", outcome="nothing_due") == 40
    assert value("rating_period_closes_total", outcome="failed") == 0
    assert value("rating_period_last_close_seconds") == 12.5
    assert value("rating_period_last_close_ratings") == 812
    assert value("rating_period_last_drain_seconds") == 0.4
    fide.show(seen(b"2026-10", {**record, "closed": 4.0, "failed": 1.0}), NOW)
    assert value("rating_period_closes_total", outcome="closed") == 4
    assert value("rating_period_closes_total", outcome="failed") == 1
    fide.show(seen(b"2026-10", {"closed": 1.0}), NOW)
    assert value("rating_period_closes_total", outcome="closed") == 1


@pytest.fixture
def tornelo() -> Iterator[Export]:
    """A tornelo worker's metrics, its export as `watch_for` makes it (with the open tournaments'
    alert threshold); the arena's again afterwards."""
    metrics.prepare(TorneloRules(), ErrorKind, OPERATIONS, periodic=True)
    try:
        yield Export(TorneloRules(), TORNELO_CALENDAR, GRACE, OPEN_ALERT)
    finally:
        metrics.prepare(ArenaRules(), ErrorKind, OPERATIONS)


def test_tornelos_calendar_is_read_by_its_count_of_marks_never_decoded(tornelo: Export) -> None:
    """Its codec cannot decode the one value kept (`TypeError`): the export takes the count of
    marks, which is the number of ended tournaments; no tournament is ever due by the clock."""
    with pytest.raises(TypeError):
        TORNELO_CALENDAR.decode(b"t3")
    tornelo.show(ended(0), NOW)
    assert value("rating_period_latest_closed") == -1  # none ended yet
    assert value("rating_period_due_open") == 0
    tornelo.show(ended(3, closing="t3", left=12), NOW)
    assert value("rating_period_latest_closed") == 3
    assert (value("rating_period_close_in_progress"), value("rating_period_close_ratings_left")) == (1, 12)
    assert value("rating_period_due_open") == 0
    tornelo.show(ended(4), NOW)
    assert value("rating_period_latest_closed") == 4
    assert value("rating_period_close_in_progress") == 0
    served = generate_latest(metrics.exposed("tornelo")).decode()
    assert 'rating_period_latest_closed{system="tornelo"} 4.0' in served


def test_the_oldest_open_tournament_is_exported_by_its_age_beside_the_alert_threshold(tornelo: Export) -> None:
    assert value("rating_period_open_alert_seconds") is None  # served from the first read, with the others
    tornelo.show(ended(0), NOW)
    assert value("rating_period_oldest_open_seconds") == 0  # none open
    assert value("rating_period_open_alert_seconds") == OPEN_ALERT
    tornelo.show(ended(2, {"t7": NOW - 600.0, "t8": NOW - 8 * 86400.0, "t9": NOW - 60.0}), NOW)
    assert value("rating_period_oldest_open_seconds") == 8 * 86400  # past the threshold: the alert's case
    tornelo.show(ended(3, {"t7": NOW - 600.0, "t9": NOW - 60.0}), NOW + 5)  # t8's end read
    assert value("rating_period_oldest_open_seconds") == 605
    tornelo.show(ended(3, {"t9": NOW + 10.0}), NOW)  # a first recording ahead of this pod's clock
    assert value("rating_period_oldest_open_seconds") == 0
    served = generate_latest(metrics.exposed("tornelo")).decode()
    assert f'rating_period_open_alert_seconds{{system="tornelo"}} {float(OPEN_ALERT)}' in served


def test_fides_workers_export_the_oldest_open_month_but_no_threshold(fide: Export) -> None:
    """A fide month is open for weeks by design: its workers export its age, not the threshold
    that the alert compares it with, so that the alert never selects a fide deployment."""
    opened = {"2026-11": NOW - 20 * 86400.0, "2026-10": NOW - 50 * 86400.0}
    fide.show(Seen({}, b"2026-09", None, 0, None, 0, opened), NOW)
    assert value("rating_period_oldest_open_seconds") == 50 * 86400
    assert value("rating_period_open_alert_seconds") is None
    assert "rating_period_open_alert_seconds" not in generate_latest(metrics.exposed("fide")).decode()
