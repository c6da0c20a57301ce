"""The series the alerts read: there from start-up at 0, and gone with a revoked partition."""

from aiokafka import TopicPartition
from prometheus_client import REGISTRY

from worker import metrics
from worker.engine.decoder import ErrorKind
from worker.rules.categories import Category
from worker.rules.system import Kind, Skip
from worker.stream.consumer import forget_series


def value(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


def test_every_labelled_series_an_alert_reads_exists_at_0_from_import() -> None:
    """`increase()` sees a first increment only if the series was there before it, and an alert
    on `== 0` needs a series at all. The values come from the enums, not from a list here."""
    for kind in Kind:
        for category in Category:
            assert value("rating_changes_published_total", kind=kind.value, category=category.value) is not None
    for error in ErrorKind:
        assert value("rating_dead_letters_total", kind=error.value) is not None
    for reason in Skip:
        assert value("rating_games_skipped_total", reason=reason.value) is not None
    # Untouched by this test session's unit tests: exactly 0.
    assert value("rating_changes_published_total", kind=Kind.RATING_LOST.value, category=Category.BULLET.value) == 0


def test_a_revoked_partition_leaves_no_series_behind() -> None:
    kept, revoked = "97", "98"
    for gauge in metrics.PER_PARTITION:
        gauge.labels(kept).set(5)
        gauge.labels(revoked).set(5)
    forget_series([TopicPartition("games", int(revoked)), TopicPartition("games", 99)])  # 99: never sampled
    for name in (
        "rating_consumer_lag_records",
        "rating_consumer_lag_seconds",
        "rating_partition_stall_seconds",
        "rating_last_commit_timestamp_seconds",
    ):
        assert value(name, partition=revoked) is None, name
        assert value(name, partition=kept) == 5, name
    forget_series([TopicPartition("games", int(kept))])
