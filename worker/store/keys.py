"""Every Redis key the worker uses, in one place (documented in docs/architecture.md, "Redis layout").

`{prefix}` is RATING_REDIS_KEY_PREFIX; `{rating}` is `{player_id}/{category}`. Ids cannot
contain ":" or "/", so no key of one kind can collide with another or with another rating.
"""

STATE = "s:"  # {prefix}s:{rating} -> the rating's state (string, see worker.store.state_codec)
OUTBOX = "o:"  # {prefix}o:{rating} -> list of encoded events written but not yet acknowledged by Kafka
LEASE = "l:"  # {prefix}l:{rating} -> the token of the process allowed to flush that outbox (expires)
# {prefix}g:{game_id} -> the game's facts digest (hex), expires after the retention: the legacy
# layout of the idempotency records, read always and written while `records` (below) is `both`
GAME = "g:"
# {prefix}r:{bucket} -> hash: 10 bytes of a game id's hash -> its facts digest and expiry hour: the
# compact layout of the idempotency records (see worker.store.records)
RECORDS = "r:"
# {prefix}w:{topic} -> hash: input partition -> the offset below which every record is applied
# (or recorded, or dead-lettered); written with the batch's last apply (see worker.store.redis_store)
WATERMARK = "w:"
# {prefix}store -> hash: `epoch` (raised by each restore) and `writes` (raised by each apply that
# writes): a store that went back in time has lower values than a worker saw (see worker.store.redis_store);
# `records` (`both` or `compact`) and `record_bits`: the layout of the idempotency records, and
# `sweep_next`, `sweep_pass`: where the sweep of expired records stands (see worker.store.records)
STORE = "store"
# {prefix}system -> the rating system that owns the prefix (RATING_SYSTEM), written by the first
# command that writes there; a prefix with keys but without it predates it and is the arena's
SYSTEM = "system"
# {prefix}parameters -> the owning system's parameters this prefix's ratings are computed with (tornelo's
# `RATING_TORNELO_K` and `RATING_TORNELO_BONUS_FACTOR`, in the canonical text its spec's `parameters`
# gives), written beside `system` by the first command that writes there, and by `switch-over` (the new
# values a rebuild was made with); a command started with other values stops at start
# (see worker.service.owner); absent for a system that records none
PARAMETERS = "parameters"
# {prefix}untrusted -> why the store refuses work until `rating-worker restore` runs (no expiry)
UNTRUSTED = "untrusted"
# {prefix}seen:{token} -> the store's `writes` as this process saw it after its last apply;
# only this process writes it, so that a loss of its writes shows whatever others wrote since
SEEN = "seen:"
# {prefix}unreadable:{topic}:{partition} -> an operator's instruction to the worker holding that input
# partition paused at a record the Kafka client cannot read: `pass {offset}` (written by
# `rating-worker dead-letter-unreadable`), replaced by the worker's `done {offset}: {what it did}`
# (expires after a day), which the command reads and removes (see worker.stream.unreadable)
UNREADABLE = "unreadable:"
# A per-period system's closes (see worker.operate.close_period):
# {prefix}periods -> hash: `calendar` (what is closed: fide the latest closed month L, encoded by the
# system's calendar codec), `marks` (how many marks were made: a batch that read another count is
# computed again), `closing` (the period marked whose index is not empty yet), `closed_at` (unix
# seconds of the last close finished)
PERIODS = "periods"
# {prefix}closes -> hash: what the runs of `rating-worker close-period` came to, for the workers'
# metrics (see worker.service.period_closes): a count per outcome (`closed`, `nothing_due`, ...), and
# `seconds`, `ratings` (of the last run that closed something) and `drain_seconds` (of the last drain)
CLOSES = "closes"
# {prefix}i:{period} -> set: the ratings with recorded games of the period (added to by the apply that
# records a game; a rating leaves it once its close event is acknowledged)
INDEX = "i:"
# {prefix}indexed -> set: the periods that have an index
INDEXED = "indexed"
# {prefix}opened -> hash: each indexed period's first recording (unix seconds), for the age of the
# oldest open one (`close-period --status`, `rating_period_oldest_open_seconds`)
OPENED = "opened"
# {prefix}marked -> hash: a period -> its place in the order of the marks (0 first), kept for good;
# only for a system whose calendar is read by its marks (tornelo: the ended tournaments, which only
# grow; `CalendarCodec.partial`), so that a batch reads the marks of its own periods, not all
MARKED = "marked"


def state_key(prefix: str, rating: str) -> str:
    return f"{prefix}{STATE}{rating}"


def outbox_key(prefix: str, rating: str) -> str:
    return f"{prefix}{OUTBOX}{rating}"


def lease_key(prefix: str, rating: str) -> str:
    return f"{prefix}{LEASE}{rating}"


def game_key(prefix: str, game_id: str) -> str:
    return f"{prefix}{GAME}{game_id}"


def watermark_key(prefix: str, topic: str) -> str:
    return f"{prefix}{WATERMARK}{topic}"


def store_key(prefix: str) -> str:
    return f"{prefix}{STORE}"


def untrusted_key(prefix: str) -> str:
    return f"{prefix}{UNTRUSTED}"


def system_key(prefix: str) -> str:
    return f"{prefix}{SYSTEM}"


def parameters_key(prefix: str) -> str:
    return f"{prefix}{PARAMETERS}"


def unreadable_key(prefix: str, topic: str, partition: int) -> str:
    return f"{prefix}{UNREADABLE}{topic}:{partition}"


def periods_key(prefix: str) -> str:
    return f"{prefix}{PERIODS}"


def closes_key(prefix: str) -> str:
    return f"{prefix}{CLOSES}"


def index_key(prefix: str, period: str) -> str:
    return f"{prefix}{INDEX}{period}"


def indexed_key(prefix: str) -> str:
    return f"{prefix}{INDEXED}"


def opened_key(prefix: str) -> str:
    return f"{prefix}{OPENED}"


def marked_key(prefix: str) -> str:
    return f"{prefix}{MARKED}"
