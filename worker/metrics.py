"""Every Prometheus metric the worker exports, in one place (documented in the README).

Names follow Prometheus conventions: base units (seconds), `_total` for counters.
"""

from prometheus_client import Counter, Gauge, Histogram, Info

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
    "Valid games that changed nothing, by reason (rated_false, unrated_time_control, forfeit, aborted, "
    "both_unrated, not_counted, duplicate)",
    ["reason"],
)
DEAD_LETTERS = Counter("rating_dead_letters_total", "Input records sent to the dead-letter topic", ["kind"])
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
    "From the input record's timestamp to the game's output acknowledged by Kafka",
    buckets=LATENCY_BUCKETS,
)
REDIS_SECONDS = Histogram(
    "rating_redis_seconds", "Round trip of one Redis script call, by operation", ["operation"], buckets=LATENCY_BUCKETS
)
CAS_CONFLICTS = Counter("rating_cas_conflicts_total", "Games recomputed because another process changed a state first")
RETRIES = Counter("rating_retries_total", "Redis or Kafka calls retried after a transient failure", ["operation"])
IN_FLIGHT = Gauge("rating_games_in_flight", "Games fetched and not yet committed")
LAG_RECORDS = Gauge("rating_consumer_lag_records", "Records behind the end of the partition", ["partition"])
LAG_SECONDS = Gauge(
    "rating_consumer_lag_seconds",
    "Age of the last processed record while the partition has lag, 0 when caught up",
    ["partition"],
)
PARTITIONS_ASSIGNED = Gauge("rating_partitions_assigned", "Input partitions this process holds")
REBALANCES = Counter("rating_rebalances_total", "Partition assignments received")
LAST_COMMIT = Gauge("rating_last_commit_timestamp_seconds", "Unix time of the last offset commit", ["partition"])
STORE_UNTRUSTED = Gauge(
    "rating_store_untrusted",
    "1 while the Redis store refuses work because it lost acknowledged writes (run rating-worker restore)",
)
BELOW_WATERMARK = Counter(
    "rating_games_below_watermark_total",
    "Valid input records consumed below their partition's watermark whose idempotency record was gone: "
    "a rewind (committed offsets lost, a group renamed) that would have applied them twice",
)
OFFSETS_MISSING = Counter(
    "rating_partitions_started_at_watermark_total",
    "Partitions assigned with no committed offset but a watermark in Redis: started at the watermark",
)
BUILD = Info("rating_build", "Version of the worker")
