"""The series the alerts read: there from start-up at 0, and gone with a revoked partition."""

import subprocess
import sys

from aiokafka import TopicPartition
from prometheus_client import REGISTRY, generate_latest

from worker import metrics
from worker.engine.decoder import ErrorKind
from worker.rules.categories import Category
from worker.rules.interface import Kind
from worker.stream.consumer import forget_series
from worker.stream.retry import OPERATIONS
from worker.systems.arena.rules import ArenaRules
from worker.systems.uscf_cc.rules import UscfCcRules


def value(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


def test_every_labelled_series_an_alert_reads_exists_at_0_once_prepared() -> None:
    """`increase()` sees a first increment only if the series was there before it, and an alert
    on `== 0` needs a series at all. The values come from the rules and the decoder, not from a
    list here."""
    arena = ArenaRules()
    metrics.prepare(arena, ErrorKind, OPERATIONS)
    for kind in arena.kinds:
        for category in arena.categories:
            assert value("rating_changes_published_total", kind=kind.value, category=category) is not None
    for error in ErrorKind:
        assert value("rating_dead_letters_total", kind=error.value) is not None
    for reason in arena.skips:
        assert value("rating_games_skipped_total", reason=reason.value) is not None
    for operation in OPERATIONS:
        assert value("rating_retries_total", operation=operation.label, dependency=operation.dependency) is not None
    # Untouched by this test session's unit tests: exactly 0.
    assert value("rating_changes_published_total", kind=Kind.RATING_LOST.value, category=Category.BULLET.value) == 0


def test_importing_every_worker_module_creates_no_labelled_series() -> None:
    """Nothing is registered at import: a fresh interpreter that imports every module of the worker
    has no series of a system's kinds, categories or skip reasons, nor of a dead letter's kind, nor
    of a retried operation."""
    code = (
        "import pkgutil, importlib, worker\n"
        "for m in pkgutil.walk_packages(worker.__path__, 'worker.'):\n"
        "    if m.name != 'worker.__main__': importlib.import_module(m.name)\n"
        "from prometheus_client import REGISTRY\n"
        "names = ('rating_changes_published_total', 'rating_games_skipped_total', 'rating_dead_letters_total',\n"
        "         'rating_retries_total')\n"
        "print(sum(1 for f in REGISTRY.collect() for s in f.samples if s.name in names))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "0", done.stdout + done.stderr


def test_a_deployment_has_the_series_of_its_own_system_each_labelled_with_it() -> None:
    cc = UscfCcRules()
    try:
        metrics.prepare(cc, ErrorKind, OPERATIONS)
        for kind in cc.kinds:
            assert value("rating_changes_published_total", kind=kind.value, category="correspondence") == 0
        for reason in cc.skips:
            assert value("rating_games_skipped_total", reason=reason.value) is not None
        # None of the arena's: no series of another system's kinds, categories or reasons.
        assert value("rating_changes_published_total", kind="rated_game", category="blitz") is None
        assert value("rating_changes_published_total", kind="game_credit", category="blitz") is None
        assert value("rating_games_skipped_total", reason="unrated_time_control") is None
        served = generate_latest(metrics.exposed(cc.name)).decode()
        assert 'rating_games_consumed_total{system="uscf-cc"} ' in served
        assert 'rating_games_skipped_total{reason="forfeit_unrated_winner",system="uscf-cc"} 0.0' in served
        samples = [line for line in served.splitlines() if line.startswith("rating_")]
        assert samples and all('system="uscf-cc"' in line for line in samples)
    finally:
        metrics.prepare(ArenaRules(), ErrorKind, OPERATIONS)
    assert value("rating_changes_published_total", kind="game_credit", category="correspondence") is None
    assert 'rating_games_consumed_total{system="arena"}' in generate_latest(metrics.exposed("arena")).decode()


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
