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

# An hour into December (RATING_PERIOD_GRACE_SECONDS's default): November is not due yet, October is.
NOW = int(datetime(2026, 12, 1, 0, 30, tzinfo=UTC).timestamp())
GRACE = 3600


def value(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


def seen(calendar: bytes, closes: dict[str, float] | None = None, closing: str | None = None, left: int = 0) -> Seen:
    return Seen(closes or {}, calendar, closing, left, None if closing else 1_790_000_000.0)


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
