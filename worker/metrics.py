"""Every Prometheus metric the worker exports, in one place (documented in the README)."""

from prometheus_client import Counter, Gauge

GAMES_CONSUMED = Counter("rating_games_consumed_total", "Input records consumed, bad ones included")
GAMES_APPLIED = Counter("rating_games_rated_total", "Games that changed at least one rating")
GAMES_SKIPPED = Counter("rating_games_skipped_total", "Valid games that changed nothing, by reason", ["reason"])
DEAD_LETTERS = Counter("rating_dead_letters_total", "Input records sent to the dead-letter topic", ["kind"])
DEAD_LETTER_FLOOD = Gauge(
    "rating_dead_letter_flood", "1 while more dead letters than RATING_DEAD_LETTER_ALARM_PER_MINUTE arrived in a minute"
)
EVENTS_PUBLISHED = Counter("rating_events_published_total", "Rating events acknowledged by Kafka (re-publications too)")
CAS_CONFLICTS = Counter("rating_cas_conflicts_total", "Games recomputed because another process changed a state first")
