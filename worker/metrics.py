"""Every Prometheus metric the worker exports, in one place, each label with the values it takes.

docs/metrics.md is generated from this module (`rating-worker docs`; `--check` fails when the
page is stale). Names follow Prometheus conventions: base units (seconds), `_total` for counters.

The values of some labels are not this module's to know: a dead letter's error kind (the
decoder's) and a rating system's kinds of change, categories and skip reasons. They are passed in
(`label_values`, `prepare`), so that this module imports nothing else of the worker, and nothing
here depends on which system runs. So are the retried operations (`worker.stream.retry`), each
with the dependency it talks to.

Every series carries a `system` label, the deployment's rating system (RATING_SYSTEM): it is
added as the metrics are served (`exposed`), not kept in each metric, since one process runs one
system. The series of a fixed label set are created at 0 at start-up (`prepare`), for the
deployment's system only: its kinds, categories and skip reasons; and the retried operations'.
No labelled series is created at import.
"""

import itertools
from collections.abc import Iterable, Iterator
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import REGISTRY, Collector

# The values of a label: a fixed set, or (a str) what any value is, for an open set.
LabelValues = tuple[str, ...] | str

# Buckets from 1 ms to 30 s: a healthy batch takes tens of milliseconds, an outage seconds;
# fine around the 50 ms latency target, so that percentiles read from them mean something.
LATENCY_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.0075,
    0.01,
    0.015,
    0.02,
    0.03,
    0.04,
    0.05,
    0.075,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)

GAMES_CONSUMED = Counter("rating_games_consumed_total", "Input records consumed, bad ones included")
GAMES_RATED = Counter("rating_games_rated_total", "Games that changed at least one rating (published an event)")
GAMES_SKIPPED = Counter(
    "rating_games_skipped_total",
    "Valid games that changed nothing, by reason (not_counted: an unrated player's loss before his count starts)",
    ["reason"],
)
DEAD_LETTERS = Counter(
    "rating_dead_letters_total", "Input records sent to the dead-letter topic, by their error.kind header", ["kind"]
)
DEAD_LETTER_FLOOD = Gauge(
    "rating_dead_letter_flood", "1 while more dead letters than RATING_DEAD_LETTER_ALARM_PER_MINUTE arrived in a minute"
)
CHANGES_PUBLISHED = Counter(
    "rating_changes_published_total",
    "Rating changes published and acknowledged, first publications only",
    ["kind", "category"],
)
EVENTS_SENT = Counter("rating_events_sent_total", "Output records acknowledged by Kafka, re-publications included")
PROCESSING_SECONDS = Histogram(
    "rating_batch_processing_seconds", "From a batch fetched to its offsets committed", buckets=LATENCY_BUCKETS
)
END_TO_END_SECONDS = Histogram(
    "rating_end_to_end_seconds",
    "A rated game from its input record's timestamp to its output acknowledged by Kafka",
    buckets=LATENCY_BUCKETS,
)
# The three script calls of `worker.store.redis_store`: a batch's read, its apply, and the
# acknowledgement of a publication round.
REDIS_OPERATIONS: tuple[str, ...] = ("read", "apply", "ack")
REDIS_SECONDS = Histogram(
    "rating_redis_seconds", "Round trip of one Redis script call, by operation", ["operation"], buckets=LATENCY_BUCKETS
)
CAS_CONFLICTS = Counter("rating_cas_conflicts_total", "Games recomputed because another process changed a state first")
# Its `operation` and `dependency` values are those of `worker.stream.retry.OPERATIONS`; that
# module imports this one, so `prepare` is given them (and creates each pair's series at 0), and
# the docs generator (`worker.docs`) reads them there.
RETRIES = Counter(
    "rating_retries_total",
    "Redis or Kafka calls retried after a transient failure, by operation and the dependency it talks to",
    ["operation", "dependency"],
)
PUBLICATIONS_UNCERTAIN = Counter(
    "rating_publications_uncertain_total",
    "Attempts to send a round of events (or erase's tombstones) whose outcome is unknown (a timeout, a cut "
    "connection): they may still reach the broker, so their ratings' next events wait one publication lease",
)
PUBLICATIONS_WAITING = Gauge(
    "rating_publications_waiting",
    "Ratings whose events wait to be published: held one publication lease after a send of unknown outcome, "
    "or waiting for another process's lease; the offsets of their batches are committed once they are sent",
)
IN_FLIGHT = Gauge("rating_games_in_flight", "Games fetched and not yet committed")
ANY_PARTITION = "any input partition's number (`0`, `1`, ...)"
LAG_RECORDS = Gauge(
    "rating_consumer_lag_records",
    "Records behind the end of the partition: its end (the broker's end offset, or the highwater of the worker's "
    "fetches if higher) minus the committed offset; sampled every second, only for partitions this process owns",
    ["partition"],
)
LAG_SECONDS = Gauge(
    "rating_consumer_lag_seconds",
    "While the partition has lag, the age of the oldest record not yet committed (of the last committed one when "
    "none is in flight); 0 when caught up",
    ["partition"],
)
STALL_SECONDS = Gauge(
    "rating_partition_stall_seconds",
    "How long the partition has had records waiting with no commit while Kafka and Redis answer, from the later "
    "of its oldest waiting record first seen and its last commit; 0 without lag or while a dependency is away. "
    "/livez fails above rating_stall_threshold_seconds",
    ["partition"],
)
STALL_THRESHOLD = Gauge(
    "rating_stall_threshold_seconds", "RATING_STALL_SECONDS: the stall at which /livez fails and the pod is restarted"
)
PARTITIONS_ASSIGNED = Gauge("rating_partitions_assigned", "Input partitions this process holds")
REBALANCES = Counter("rating_rebalances_total", "Partition assignments received")
LAST_COMMIT = Gauge("rating_last_commit_timestamp_seconds", "Unix time of the last offset commit", ["partition"])
PAUSED_AT = Gauge(
    "rating_partition_paused_at_offset",
    "Present while the input partition is paused at this offset: the Kafka client cannot read the record there "
    "(`rating-worker dead-letter-unreadable` has it dead-lettered); the other partitions go on",
    ["partition"],
)
# The series of one input partition, removed when the partition is revoked: a pod reports only
# the partitions it owns, so that sums over pods count each partition once.
PER_PARTITION: tuple[Gauge, ...] = (LAG_RECORDS, LAG_SECONDS, STALL_SECONDS, LAST_COMMIT, PAUSED_AT)
STORE_UNTRUSTED = Gauge(
    "rating_store_untrusted",
    "1 while the Redis store refuses work because it lost acknowledged writes (run rating-worker restore)",
)
BELOW_WATERMARK = Counter(
    "rating_games_below_watermark_total",
    "Valid input records consumed below their partition's watermark whose idempotency record was gone: "
    "a rewind (committed offsets lost, a group renamed) that would have applied them twice; taken as duplicates",
)
OFFSETS_MISSING = Counter(
    "rating_partitions_started_at_watermark_total",
    "Partitions assigned with no committed offset but a watermark in Redis: started at the watermark",
)
BUILD = Info("rating_build", "Version of the worker")

# A per-period system's closes (fide's months, tornelo's tournaments): registered only in the workers
# of such a system (`prepare`, `show_periods`), so that no other deployment has their series. `rating-worker
# close-period` runs as a one-shot pod that no Prometheus scrapes (tornelo's follower, which is
# scraped, records its closes the same way, for the same metrics): it records its outcome in Redis,
# and every worker exports that record, with the calendar and the close in progress, read every few
# seconds (`worker.service.period_closes`): every pod shows the same values, a scrape never waits
# on Redis. Those read from Redis are registered at the first read, with the values read, so that
# no pod shows a 0 it does not mean (nor a counter that jumps from 0 to the store's count).
# The outcomes of a close-period run (of PERIOD or --due; --init and --status are not closes).
CLOSE_OUTCOMES: tuple[str, ...] = ("closed", "nothing_due", "refused", "drain_timed_out", "failed")
PERIOD_LATE_GAMES = Counter(
    "rating_period_games_late",
    "Games recorded late by this process: their period was closed already, so they went to the oldest open "
    "one (fide: a game of the latest closed month L or earlier, recorded in L + 1)",
    registry=None,
)
PERIOD_CLOSES = Counter(
    "rating_period_closes",
    "close-period runs, by outcome, as they recorded it in Redis: closed (it marked or finished a close), "
    "nothing_due (nothing to close), refused (a period not due or never closed), drain_timed_out, failed "
    "(Kafka or Redis unreachable past the retries, interrupted, an error)",
    ["outcome"],
    registry=None,
)
PERIOD_LATEST_CLOSED = Gauge(
    "rating_period_latest_closed",
    "The latest closed period as a number that grows with each mark (fide: the month L as months since "
    "0000-01, year x 12 + month - 1; tornelo: how many tournaments have ended); -1 while none is closed",
    registry=None,
)
PERIOD_DUE_OPEN = Gauge(
    "rating_period_due_open",
    "1 while the latest period due by the clock (its end plus RATING_PERIOD_GRACE_SECONDS passed; fide: last "
    "month, from an hour into this one) is not marked closed; 0 once it is (always 0 for tornelo, whose "
    "tournaments end by their end records, not by the clock)",
    registry=None,
)
PERIOD_CLOSE_IN_PROGRESS = Gauge(
    "rating_period_close_in_progress",
    "1 while a close is in progress (its period marked, its ratings not all closed and published); import, "
    "restore, switch-over and erase are refused meanwhile",
    registry=None,
)
PERIOD_RATINGS_LEFT = Gauge(
    "rating_period_close_ratings_left",
    "Ratings left to close in the close in progress (its index); 0 when none is in progress",
    registry=None,
)
PERIOD_LAST_CLOSED = Gauge(
    "rating_period_last_closed_timestamp_seconds",
    "Unix time the last close finished (every rating of its period closed and published); 0 before any",
    registry=None,
)
PERIOD_CLOSE_SECONDS = Gauge(
    "rating_period_last_close_seconds",
    "How long the last close-period run that closed something took, its drain included",
    registry=None,
)
PERIOD_DRAIN_SECONDS = Gauge(
    "rating_period_last_drain_seconds",
    "How long the last drain of close-period took (until the workers applied the input up to its end), "
    "one that timed out included",
    registry=None,
)
PERIOD_RATINGS_CLOSED = Gauge(
    "rating_period_last_close_ratings",
    "Ratings closed by the last close-period run that closed something (a close event each; those the workers "
    "closed first, at their next game, not counted)",
    registry=None,
)
PERIOD_OLDEST_OPEN = Gauge(
    "rating_period_oldest_open_seconds",
    "Age of the oldest open period: the time since the first game recorded in it, of the periods with recorded "
    "games whose close has not begun (tornelo: not marked ended; fide: not finished closing); 0 when none is open",
    registry=None,
)
# Not read from Redis: the setting, in the workers of a system whose periods end by a record (tornelo)
# only, so that the alert that compares the two selects no other deployment (a fide month is open for weeks).
PERIOD_OPEN_ALERT = Gauge(
    "rating_period_open_alert_seconds",
    "RATING_TOURNAMENT_OPEN_ALERT_SECONDS (tornelo's workers only): the age of the oldest open tournament "
    "(rating_period_oldest_open_seconds) past which RatingTournamentOpenTooLong fires, an end never published",
    registry=None,
)
# The close follower's own (`rating-worker close-period --follow`, tornelo's), registered only in it
# (`show_follower`): it runs as a Deployment, scraped like the workers.
CLOSE_ENDS_READ = Counter(
    "rating_close_ends_read",
    "End records the close follower read from the tournament topic (bad ones, dead-lettered, included; a record "
    "read again after a restart counted again)",
    registry=None,
)
CLOSE_ENDS_LAG = Gauge(
    "rating_close_ends_lag_records",
    "End records on the tournament topic past the close follower's position (not read yet)",
    registry=None,
)
CLOSE_DRAIN_WAITING = Gauge(
    "rating_close_drain_waiting_seconds",
    "How long the close follower's drain has waited for the workers, once past RATING_CLOSE_DRAIN_TIMEOUT_SECONDS "
    "(it keeps waiting: it never skips an end); 0 otherwise",
    registry=None,
)
FOLLOWER: tuple[MetricWrapperBase, ...] = (CLOSE_ENDS_READ, CLOSE_ENDS_LAG, CLOSE_DRAIN_WAITING)

# Read from Redis by the workers (`show_periods` registers them); the late games are this process's own.
FROM_STORE: tuple[MetricWrapperBase, ...] = (
    PERIOD_CLOSES,
    PERIOD_LATEST_CLOSED,
    PERIOD_DUE_OPEN,
    PERIOD_CLOSE_IN_PROGRESS,
    PERIOD_RATINGS_LEFT,
    PERIOD_LAST_CLOSED,
    PERIOD_CLOSE_SECONDS,
    PERIOD_DRAIN_SECONDS,
    PERIOD_RATINGS_CLOSED,
    PERIOD_OLDEST_OPEN,
)
PERIODIC: tuple[MetricWrapperBase, ...] = (PERIOD_LATE_GAMES, *FROM_STORE, PERIOD_OPEN_ALERT)
_shown: set[MetricWrapperBase] = set()  # those of PERIODIC registered in the default registry

# Every label of every metric above with its values, but those given to `label_values` (a dead
# letter's error kind; a system's kinds, categories and skip reasons) and `worker.stream.retry`'s
# (see RETRIES). An Info metric's labels are the keys it is given (`worker.service.process`).
LABEL_VALUES: dict[MetricWrapperBase, dict[str, LabelValues]] = {
    REDIS_SECONDS: {"operation": REDIS_OPERATIONS},
    LAG_RECORDS: {"partition": ANY_PARTITION},
    LAG_SECONDS: {"partition": ANY_PARTITION},
    LAST_COMMIT: {"partition": ANY_PARTITION},
    STALL_SECONDS: {"partition": ANY_PARTITION},
    PAUSED_AT: {"partition": ANY_PARTITION},
    BUILD: {"version": "the package's version", "python": "the Python version"},
    PERIOD_CLOSES: {"outcome": CLOSE_OUTCOMES},
}


def label_values(
    *, error_kinds: Iterable[str], kinds: Iterable[str], categories: Iterable[str], skips: Iterable[str]
) -> dict[MetricWrapperBase, dict[str, LabelValues]]:
    """`LABEL_VALUES` with the values given: the dead letters' error kinds (the decoder's
    `ErrorKind`), and the kinds of change, categories and skip reasons of one rating system (the
    deployment's, for `prepare`) or of every system (the docs page)."""
    return {
        GAMES_SKIPPED: {"reason": tuple(map(str, skips))},
        DEAD_LETTERS: {"kind": tuple(map(str, error_kinds))},
        CHANGES_PUBLISHED: {"kind": tuple(map(str, kinds)), "category": tuple(map(str, categories))},
        **LABEL_VALUES,
    }


class SystemLabels(Protocol):
    """What the metrics need of a rating system (a `worker.rules.interface.RatingSystem` is one)."""

    @property
    def categories(self) -> Iterable[str]: ...

    @property
    def kinds(self) -> Iterable[str]: ...

    @property
    def skips(self) -> Iterable[str]: ...


class RetriedOperation(Protocol):
    """What the metrics need of a retried call (a `worker.stream.retry.Operation` is one)."""

    @property
    def label(self) -> str: ...

    @property
    def dependency(self) -> str: ...


def prepare(
    system: SystemLabels, error_kinds: Iterable[str], retried: Iterable[RetriedOperation], *, periodic: bool = False
) -> None:
    """Create each series of a fixed label set of `system` (and of the dead letters' `error_kinds`)
    at 0 (an alert on `increase()` or `== 0` sees a counter that never moved, and the first
    increment is an increase it can see), and remove any other (another system's, if a process
    prepared one before: the tests); and the retries' series of each of the `retried` operations
    (`worker.stream.retry.OPERATIONS`), with its dependency. A `periodic` system's workers also
    count late games (at 0); the metrics read from Redis wait for `show_periods`; any other
    process has none of PERIODIC."""
    for metric in list(_shown):
        REGISTRY.unregister(metric)
        _shown.discard(metric)
    if periodic:
        _show(PERIOD_LATE_GAMES)
    for operation in retried:
        RETRIES.labels(operation.label, operation.dependency)
    values = label_values(error_kinds=error_kinds, kinds=system.kinds, categories=system.categories, skips=system.skips)
    for metric, labels in values.items():
        if metric in PERIODIC:  # their series are the store's, made at the values read (`show_periods`)
            continue
        fixed = [v for v in labels.values() if isinstance(v, tuple)]
        if len(fixed) < len(labels):  # an open set (a partition's number), or an Info metric's keys
            continue
        wanted = list(itertools.product(*fixed))
        for combination in wanted:
            metric.labels(*combination)
        names = list(labels)
        present = {tuple(s.labels[n] for n in names) for family in metric.collect() for s in family.samples}
        for combination in present - set(wanted):
            metric.remove(*combination)


def show_periods(*, by_record: bool = False) -> None:
    """Serve the metrics read from Redis (FROM_STORE), once the first read has set them; and, for a
    system whose periods end by a record (`by_record`: tornelo), the open tournaments' alert threshold."""
    for metric in FROM_STORE:
        _show(metric)
    if by_record:
        _show(PERIOD_OPEN_ALERT)


def show_follower() -> None:
    """Serve the close follower's own metrics (FOLLOWER), in its process only."""
    for metric in FOLLOWER:
        _show(metric)


def _show(metric: MetricWrapperBase) -> None:
    if metric not in _shown:
        REGISTRY.register(metric)
        _shown.add(metric)


class _WithSystem(Collector):
    """Every sample of the default registry with the `system` label first."""

    def __init__(self, system: str) -> None:
        self.system = system

    def collect(self) -> Iterator[Metric]:
        for metric in REGISTRY.collect():
            labelled = Metric(metric.name, metric.documentation, metric.type, metric.unit)
            labelled.samples = [s._replace(labels={"system": self.system, **s.labels}) for s in metric.samples]
            yield labelled


def exposed(system: str) -> CollectorRegistry:
    """What /metrics serves (`worker.service.health`): the default registry, each sample labelled
    with `system` (the deployment's, RATING_SYSTEM)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_WithSystem(system))
    return registry
