"""What `rating-worker close-period` leaves in Redis for the metrics, and the workers' export of it.

close-period runs as a one-shot pod (fide: an hourly CronJob's) that no Prometheus scrapes. So each
run records its outcome in the store (`record`, into `{prefix}closes`: `worker.store.keys`), and so
does tornelo's close follower (`close-period --follow`) for each tournament it closes; the workers
of a per-period system export it (`watch`): every WATCH_INTERVAL seconds they read it, with the
calendar and the close in progress (`{prefix}periods` and the size of the closing period's index)
and the open periods' first recordings (`{prefix}opened`), and set the `rating_period_*` metrics
(`worker.metrics`), so that a scrape never waits on Redis. Every pod exports the same values; the
alerts aggregate them per deployment.

A calendar kept as one value (fide's latest closed month) is read whole; one kept by its marks
(tornelo's ended tournaments, `CalendarCodec.partial`) is never read whole (it only grows): its
count of marks is the number exported, and of the open periods only those not marked ended are
open (a tournament marked, its close in progress, is the close's to report).
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError

from worker import metrics
from worker.engine.spec import CalendarCodec
from worker.rules.period_interface import PeriodSystem
from worker.settings import WorkerSettings
from worker.store import keys

log = logging.getLogger(__name__)

# Prometheus scrapes every 15 s (the PodMonitor's interval): a read every 5 s keeps the values
# within a third of that, for two or three round trips of small commands per pod (the third: a
# calendar kept by its marks, the marks of the open periods).
WATCH_INTERVAL = 5.0
READ_SECONDS = 2.0  # a read slower than this is given up (Redis slow or away): the values stay as they were

CLOSED, NOTHING_DUE, REFUSED, DRAIN_TIMED_OUT, FAILED = metrics.CLOSE_OUTCOMES
# The fields of `{prefix}closes` beside the count of each outcome: the duration of the last run
# that closed something and the ratings it closed; the duration of the last drain.
SECONDS, RATINGS, DRAIN_SECONDS = "seconds", "ratings", "drain_seconds"


# Counts the outcome ARGV[2] in KEYS[2] and sets the fields and values that follow it, only if the
# prefix is the system ARGV[1]'s (its owner key KEYS[1]): a run on a prefix nobody claimed yet
# (refused before any command wrote there), or another system's, writes nothing there, which
# would make it look like the arena's (`worker.service.owner`). 1 if it counted it.
_RECORD = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
return 1
"""


async def record(
    redis: Redis,
    prefix: str,
    system: str,
    outcome: str,
    *,
    seconds: float | None = None,
    ratings: int | None = None,
    drain_seconds: float | None = None,
) -> bool:
    """Count one close-period run's `outcome` and keep the values given, in one atomic step, if
    `prefix` is `system`'s; whether it did."""
    given = [
        str(part)
        for name, value in ((SECONDS, seconds), (RATINGS, ratings), (DRAIN_SECONDS, drain_seconds))
        if value is not None
        for part in (name, value)
    ]
    done = await redis.eval(_RECORD, 2, keys.system_key(prefix), keys.closes_key(prefix), system, outcome, *given)
    return bool(done)


@dataclass(frozen=True)
class Seen:
    """One read of the store."""

    closes: dict[str, float]  # `{prefix}closes`: the count of each outcome, the last durations and ratings
    calendar: bytes  # as the system's calendar codec keeps it (b"": nothing closed)
    closing: str | None  # the period whose close is in progress
    left: int  # ratings left in its index
    closed_at: float | None  # unix seconds of the last close finished
    marks: int = 0  # how many marks were made (a calendar kept by its marks: its size)
    # Each open period's first recording (unix seconds): `{prefix}opened`, less (a calendar kept by
    # its marks) the periods marked already, whose close is in progress.
    opened: dict[str, float] = field(default_factory=dict)


async def read(redis: Redis, prefix: str, *, partial: bool = False) -> Seen:
    """The store's record of the closes; `partial`: the calendar is kept by its marks (tornelo)."""
    async with redis.pipeline(transaction=False) as pipe:
        pipe.hgetall(keys.closes_key(prefix))
        pipe.hmget(keys.periods_key(prefix), ["calendar", "closing", "closed_at", "marks"])
        pipe.hgetall(keys.opened_key(prefix))
        closes, (calendar, closing, closed_at, marks), first = await pipe.execute()
    period = None if closing is None else _text(closing)
    left = 0 if period is None else int(await redis.scard(keys.index_key(prefix, period)))
    opened = {_text(k): float(v) for k, v in first.items()}
    if partial and opened:
        # Only the open periods' own marks: `{prefix}marked` keeps every mark ever made.
        names = sorted(opened)
        places = await redis.hmget(keys.marked_key(prefix), names)
        opened = {name: opened[name] for name, place in zip(names, places, strict=True) if place is None}
    return Seen(
        {_text(k): float(v) for k, v in closes.items()},
        b"" if calendar is None else calendar if isinstance(calendar, bytes) else calendar.encode(),
        period,
        left,
        None if closed_at is None else float(closed_at),
        0 if marks is None else int(marks),
        opened,
    )


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


@dataclass
class Export:
    """The metrics of a per-period system's closes, set from reads of the store (`show`)."""

    periods: PeriodSystem[Any]
    codec: CalendarCodec
    grace_seconds: int  # RATING_PERIOD_GRACE_SECONDS: when a period is due
    # RATING_TOURNAMENT_OPEN_ALERT_SECONDS, exported by a system whose periods end by a record
    # (tornelo) only; None: not exported.
    open_alert_seconds: int | None = None
    counted: dict[str, float] = field(default_factory=dict)  # each outcome's count as exported

    def show(self, seen: Seen, now: int) -> None:
        """Set every metric from `seen` at `now` (unix seconds), and serve them from the first."""
        # A calendar kept by its marks is never read whole: its size, the count of marks, is its number.
        calendar = self.codec.from_marks(seen.marks, {}) if self.codec.partial else self.codec.decode(seen.calendar)
        number = self.codec.number(calendar)
        metrics.PERIOD_LATEST_CLOSED.set(-1 if number is None else number)
        due = self.periods.latest_due(now, self.grace_seconds)
        # A close of the due period would mark something: it is not marked closed yet.
        metrics.PERIOD_DUE_OPEN.set(0 if due is None or not self.periods.to_mark(calendar, due, ()) else 1)
        metrics.PERIOD_CLOSE_IN_PROGRESS.set(0 if seen.closing is None else 1)
        metrics.PERIOD_RATINGS_LEFT.set(seen.left)
        metrics.PERIOD_LAST_CLOSED.set(seen.closed_at or 0)
        metrics.PERIOD_CLOSE_SECONDS.set(seen.closes.get(SECONDS, 0))
        metrics.PERIOD_RATINGS_CLOSED.set(seen.closes.get(RATINGS, 0))
        metrics.PERIOD_DRAIN_SECONDS.set(seen.closes.get(DRAIN_SECONDS, 0))
        metrics.PERIOD_OLDEST_OPEN.set(max(0.0, now - min(seen.opened.values())) if seen.opened else 0)
        if self.open_alert_seconds is not None:
            metrics.PERIOD_OPEN_ALERT.set(self.open_alert_seconds)
        for outcome in metrics.CLOSE_OUTCOMES:
            self._count(outcome, seen.closes.get(outcome, 0.0))
        metrics.show_periods(by_record=self.open_alert_seconds is not None)

    def _count(self, outcome: str, count: float) -> None:
        """The counter of `outcome` brought to the store's count. Made at that count (not from 0:
        a pod's start is no increase); made again if the store's count went down (the record was
        deleted), which Prometheus reads as a counter reset."""
        before = self.counted.get(outcome)
        if before is None or count < before:
            with contextlib.suppress(KeyError):  # none made yet
                metrics.PERIOD_CLOSES.remove(outcome)
            metrics.PERIOD_CLOSES.labels(outcome).inc(count)
        elif count > before:
            metrics.PERIOD_CLOSES.labels(outcome).inc(count - before)
        self.counted[outcome] = count


def watch_for(settings: WorkerSettings, redis: Redis) -> Coroutine[Any, Any, None] | None:
    """The workers' watch of the closes (`watch`), or None for a system without periods to close."""
    spec = settings.spec()
    if spec.periods is None or spec.calendar_codec is None:
        return None
    export = Export(
        spec.periods,
        spec.calendar_codec,
        settings.period_grace_seconds,
        settings.tournament_open_alert_seconds if spec.ends_by_record else None,
    )
    return watch(redis, settings.redis_key_prefix, export)


async def watch(redis: Redis, prefix: str, export: Export) -> None:
    """Read the store every WATCH_INTERVAL and export what it holds; a read that fails or is slow
    leaves the values as they were (the next read sets them)."""
    while True:
        try:
            async with asyncio.timeout(READ_SECONDS):
                seen = await read(redis, prefix, partial=export.codec.partial)
        except (RedisError, OSError, TimeoutError) as e:
            log.debug("the closes' record not read (%s: %s); their metrics keep their values", type(e).__name__, e)
        except Exception:  # a value that does not read: the metrics stop moving, the worker goes on
            log.warning("the closes' record not read; their metrics keep their values", exc_info=True)
        else:
            export.show(seen, int(time.time()))
        await asyncio.sleep(WATCH_INTERVAL)
