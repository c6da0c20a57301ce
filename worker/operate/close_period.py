"""`rating-worker close-period`: close a per-period system's periods (fide: months) while the
workers keep running.

What the store keeps for it (`worker.store.keys`): the calendar (fide: the latest closed month L)
with its version, the period whose close is in progress, and each period's index of the ratings
with recorded games of it. Every batch of the workers reads the calendar with its states, and
its apply is checked against the calendar's version like a state against its seq: a mark that
falls between a batch's read and its write fails the write, and the batch is computed again, so
a game is recorded in its month before the mark or late (in the oldest open month) after it,
never both. A worker that touches a rating still holding games of a closed period closes it
first, in the same write (`worker.engine.engine`).

A close of PERIOD:
1. refuses a period that is not due yet (fide: its end plus RATING_PERIOD_GRACE_SECONDS has not
   passed) unless forced, and one the system never closes (`9999-12`): status 2, nothing done;
   with no period due by the clock (`--due` of tornelo, whose ends come by record: the quiet
   window's way to finish a close in progress), it only finishes any close in progress;
2. finishes any close in progress (a killed close is finished by running it again);
3. drains once: reads the input's end offsets and waits until the workers' watermarks reach them
   on every partition (every game published before the command started is applied); past
   RATING_CLOSE_DRAIN_TIMEOUT_SECONDS it stops with status 1, having marked nothing new;
4. marks, one at a time, each period the close marks (fide: every open month before PERIOD with
   recorded games, oldest first, then PERIOD), each only once the close of the one before it is
   finished, and closes it: its index in chunks, each rating read, closed and written under a
   check-and-set on its seq (its state and its close event in its outbox), the events published
   through the outboxes like the workers' (leases, rounds, acknowledgements, the hold after an
   attempt whose outcome is unknown: `worker.stream.pipeline`); a rating leaves the index once
   its event is acknowledged (one its next game closed already is flushed, then removed); an
   empty index finishes the close.
Two closes at once are safe: a mark is made only over the calendar version its maker read and
only when no close is in progress, and each rating is closed once, under its check-and-set.

Each step is a JSON log line (its `step`: `refused`, `nothing_due`, `finish_in_progress`,
`drain_start`, `drain_progress`, `drain_end`, `drain_timeout`, `mark`, `closing`, `chunk`,
`finished`, `failed`, then `done` with the run's `outcome`), and each run's outcome is recorded in
Redis (`worker.service.period_closes`; a line `record` if it was not), for the workers to export:
the command's pod is not scraped. A run on a prefix no command of the system has written to yet
(refused on a new deployment) records nothing: a key there would make the prefix the arena's.
"""

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from pydantic import ValidationError
from redis.asyncio import Redis

from worker import metrics
from worker.engine.engine import CloseOutcome
from worker.operate.redis_ops import connected, text, with_retry
from worker.operate.topic_scan import group_reader
from worker.rules.period_interface import Calendar, PeriodSystem
from worker.service import period_closes
from worker.service.connections import close_quietly, kafka_options
from worker.service.owner import own_prefix
from worker.service.wiring import make_producer, pipeline_for, process_token, start_producer
from worker.settings import WorkerSettings
from worker.store import keys
from worker.store.redis_store import RedisStore
from worker.store.schedule import CloseItem
from worker.stream import unreadable
from worker.stream.pipeline import Pipeline
from worker.stream.retry import KAFKA_CONNECT, KAFKA_PUBLISH, KAFKA_READ, retrying

log = logging.getLogger(__name__)

CHUNK = 500  # ratings closed per batch (one read, one apply, rounds of publication)
# Chunks closed at once: one is read and computed while the others are written and published
# (one at a time, the command waited on Redis and Kafka a third of the time: bench/close_bench.py).
LANES = 3
DRAIN_POLL_SECONDS = 0.5
DRAIN_LOG_SECONDS = 10.0  # a drain that waits says how far behind the workers are this often
END_FETCH_SECONDS = 10.0  # the fetches that find each partition's end (see `input_ends`)
# Recording the run's outcome (`period_closes.record`): one attempt, given up past this, so that a
# run that failed for want of Redis does not wait for it once more.
RECORD_SECONDS = 2.0


class CloseRefused(Exception):
    """Not closed, nothing done: a period not due, one never closed, `--init` over state (status 2)."""


class DrainTimedOut(Exception):
    """The workers did not apply the input up to its end in time: nothing marked (status 1)."""

    def __init__(self, message: str, seconds: float) -> None:
        super().__init__(message)
        self.seconds = seconds  # how long it waited


class CloseInProgress(Exception):
    """A command that would change a rating a close still reads, refused (status 2, one line)."""


@dataclass
class CloseReport:
    marked: list[str] = field(default_factory=list)  # the periods this run marked, in order
    finished: list[str] = field(default_factory=list)  # the closes it finished (its own and any in progress)
    closed: int = 0  # ratings it closed (a close event each)
    by_games: int = 0  # ratings found closed already (by their next game, or another close)
    drain_seconds: float = 0.0
    drained: bool = False  # it drained (a run with no period due does not)
    seconds: float = 0.0


@dataclass
class Status:
    calendar: Calendar
    closing: str | None
    left: int  # ratings left in the close in progress
    recorded: list[str]  # periods with recorded games not closed yet, oldest first
    due: str | None  # the latest period due by the clock
    closed_at: float | None  # when the last close finished (unix seconds)
    # A calendar kept by its marks (tornelo): the periods marked closed, in order; None for fide.
    ended: list[str] | None = None
    opened: dict[str, float] = field(default_factory=dict)  # each open period's first recording (unix seconds)


def close_group(settings: WorkerSettings) -> str:
    """The close follower's consumer group (`worker.operate.follow`): the workers' group with `-close`."""
    return f"{settings.kafka_group_id}-close"


def periods_of(settings: WorkerSettings) -> PeriodSystem[Any]:
    periods = settings.spec().periods
    if periods is None or settings.spec().calendar_codec is None:
        raise CloseRefused(f"RATING_SYSTEM={settings.system} has no periods to close: it rates each game at once")
    return periods


def up_to(periods: PeriodSystem[Any], period: str, bound: str) -> bool:
    """Whether `period` is `bound` or one before it: one a close of `bound` would close, given games
    of it (the system's order of periods, which only it knows: fide's months)."""
    return period in periods.to_mark(periods.opening, bound, (period,))


def checked_period(periods: PeriodSystem[Any], period: str) -> str:
    """`period` if the system can close it (its close line's syntax; fide refuses `9999-12`)."""
    try:
        periods.close_line.model_validate({"control": "close", "period": period})
    except ValidationError:
        raise CloseRefused(f"{period!r} is not a period that can be closed") from None
    return period


async def refuse_during_close(redis: Redis, settings: WorkerSettings, command: str) -> None:
    """Stop `command` (import, restore, switch-over, erase) while a close is in progress: it would
    change a rating whose list rating the close still reads."""
    if settings.spec().periods is None:
        return
    (closing,) = await fields(redis, settings.redis_key_prefix, "closing")
    if closing is not None:
        left = await with_retry(redis.scard, keys.index_key(settings.redis_key_prefix, closing))
        raise CloseInProgress(
            f"{command} is refused while the close of {closing} is in progress ({left} ratings left): "
            "run `rating-worker close-period --due` to finish it first"
        )


async def close_period(
    settings: WorkerSettings, period: str | None, force: bool, say: Callable[[str], None]
) -> CloseReport:
    """Close `period` (None: every due period) and every earlier open one: the module's steps; the
    run's outcome logged and recorded for the workers' metrics, whatever it is."""
    started = time.monotonic()
    periods = periods_of(settings)  # a system without periods: refused, nothing recorded
    report = CloseReport()
    outcome = period_closes.FAILED
    try:
        await _close(settings, periods, period, force, say, report)
        outcome = period_closes.CLOSED if report.marked or report.finished else period_closes.NOTHING_DUE
        if outcome == period_closes.NOTHING_DUE:
            log.info("nothing to close", extra={"step": "nothing_due", "period": period})
        return report
    except CloseRefused as e:
        outcome = period_closes.REFUSED
        log.warning("refused: %s", e, extra={"step": "refused", "period": period})
        raise
    except DrainTimedOut as e:
        outcome = period_closes.DRAIN_TIMED_OUT
        report.drain_seconds, report.drained = e.seconds, True
        raise
    except BaseException as e:  # unreachable past the retries, interrupted (CancelledError), an error
        log.error("failed (%s: %s)", type(e).__name__, e, extra={"step": "failed", "period": period})
        raise
    finally:
        report.seconds = time.monotonic() - started
        log.info(
            "close-period %s in %.1f s",
            outcome,
            report.seconds,
            extra={"step": "done", "outcome": outcome, "seconds": round(report.seconds, 3), "ratings": report.closed},
        )
        await record_outcome(settings, outcome, report)


async def _close(
    settings: WorkerSettings,
    periods: PeriodSystem[Any],
    period: str | None,
    force: bool,
    say: Callable[[str], None],
    report: CloseReport,
) -> None:
    """The module's steps, into `report`."""
    now = int(time.time())
    due = periods.latest_due(now, settings.period_grace_seconds)
    if period is None:
        if due is None:  # tornelo's ends come by record: only a close in progress to finish
            async with pipeline_for(settings) as (pipeline, _, store):
                await finish_in_progress(pipeline, store, report, say, resumed=True)
            say("close-period: no period is due by the clock")
            return
        period = due
    checked_period(periods, period)
    if not force and (due is None or not up_to(periods, period, due)):
        raise CloseRefused(
            f"{period} is not due yet (RATING_PERIOD_GRACE_SECONDS={settings.period_grace_seconds} after its end "
            "has not passed): closed now, its games still to come would be late; --force closes it all the same"
        )
    async with pipeline_for(settings) as (pipeline, _, store):
        await finish_in_progress(pipeline, store, report, say, resumed=True)
        report.drain_seconds = await drain(settings, store, say)
        report.drained = True
        await mark_through(pipeline, store, period, report, say)


async def record_outcome(
    settings: WorkerSettings, outcome: str, report: CloseReport, client: Redis | None = None
) -> None:
    """The run's (or a follower's close's) outcome recorded in Redis (`period_closes.record`): the
    counts, and the durations and ratings of a run that closed something; a failure to record it is
    logged, never raised. `client`: the follower's own, which it records every close with (a run
    connects anew: its store's client may be what failed)."""
    closed = outcome == period_closes.CLOSED
    try:
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(asyncio.timeout(RECORD_SECONDS))
            redis = client if client is not None else await stack.enter_async_context(connected(settings, ping=False))
            recorded = await period_closes.record(
                redis,
                settings.redis_key_prefix,
                settings.spec().name,
                outcome,
                seconds=report.seconds if closed else None,
                ratings=report.closed if closed else None,
                drain_seconds=report.drain_seconds if report.drained else None,
            )
        if not recorded:
            log.info(
                "the outcome %s was not recorded: RATING_REDIS_KEY_PREFIX=%s is not %s's (nothing of it there yet)",
                outcome,
                settings.redis_key_prefix,
                settings.spec().name,
                extra={"step": "record", "outcome": outcome},
            )
    except Exception as e:
        log.warning(
            "the outcome %s was not recorded for the metrics (%s: %s)",
            outcome,
            type(e).__name__,
            e,
            extra={"step": "record", "outcome": outcome},
        )


async def mark_through(
    pipeline: Pipeline[Any], store: RedisStore[Any], period: str, report: CloseReport, say: Callable[[str], None]
) -> None:
    """Mark and close, one at a time, each period a close of `period` marks (step 4), each once
    the close before it is finished (also `switch-over`'s, setting the live calendar)."""
    while True:
        snapshot = await store.read([], [], [period])  # a calendar kept by its marks: the period's
        recorded = await _recorded(store)
        months = pipeline.engine.marks(snapshot.calendar, period, recorded)
        if not months:
            return
        month = months[0]
        assert snapshot.calendar_version is not None
        calendar = pipeline.engine.marked(snapshot.calendar, month)
        marked = await store.mark(snapshot.calendar_version, calendar, month)
        if marked == 0:  # another close marked meanwhile: read the calendar again
            continue
        if marked == 1:
            report.marked.append(month)
            log.info("marked %s closed", month, extra={"period": month, "step": "mark"})
            say(f"close-period: {month} marked closed")
        await finish_in_progress(pipeline, store, report, say)


async def finish_in_progress(
    pipeline: Pipeline[Any],
    store: RedisStore[Any],
    report: CloseReport,
    say: Callable[[str], None],
    *,
    resumed: bool = False,
) -> None:
    """The close in progress, if any, finished: every rating of its index closed and published,
    then the index emptied and the close marked finished (`resumed`: one found at the start, which
    an earlier run left, rather than this run's mark)."""
    redis, prefix = store.redis, store.prefix
    while True:
        (period,) = await fields(redis, prefix, "closing")
        if period is None:
            return
        index = keys.index_key(prefix, period)
        left = await with_retry(redis.scard, index)
        if resumed:
            log.info(
                "the close of %s is in progress, %d ratings left: finishing it",
                period,
                left,
                extra={"step": "finish_in_progress", "period": period, "ratings": left},
            )
        else:
            log.info(
                "closing %s: %d ratings", period, left, extra={"step": "closing", "period": period, "ratings": left}
            )
        say(f"close-period: closing {period}: {left} ratings to close")
        await _close_index(pipeline, store, period, report)
        done = await with_retry(store.finish, period)
        if done == 1:
            report.finished.append(period)
            log.info(
                "the close of %s is finished", period, extra={"period": period, "step": "finished", "ratings": left}
            )
            say(f"close-period: {period} closed")


async def _close_index(pipeline: Pipeline[Any], store: RedisStore[Any], period: str, report: CloseReport) -> None:
    """Every rating of `period`'s index closed and published, in chunks, LANES chunks at once: each
    lane a pipeline of its own (its own rounds of publication), sharing the store and the producer.
    The chunks hold different ratings (a rating the scan returns twice is closed once), each
    closed under its own check-and-set and published through its own outbox, so the lanes never
    touch the same rating: one chunk is computed while others are written and published."""
    index = keys.index_key(store.prefix, period)
    chunks: asyncio.Queue[list[str] | None] = asyncio.Queue(maxsize=LANES)
    lanes = [pipeline] + [
        Pipeline(pipeline.engine, store, pipeline.publisher, hold_seconds=pipeline.hold_seconds, fenced=pipeline.fenced)
        for _ in range(LANES - 1)
    ]

    async def scan() -> None:
        seen: set[str] = set()
        cursor = 0
        while True:
            cursor, members = await with_retry(store.redis.sscan, index, cursor, None, CHUNK)
            fresh = sorted({text(m) for m in members}.difference(seen))
            seen.update(fresh)
            if fresh:
                await chunks.put(fresh)
            if cursor == 0:
                break
        for _ in lanes:
            await chunks.put(None)

    async def close_with(lane: Pipeline[Any]) -> None:
        while (ratings := await chunks.get()) is not None:
            await _close_chunk(lane, store, period, ratings, report)

    tasks = [asyncio.create_task(scan()), *(asyncio.create_task(close_with(lane)) for lane in lanes)]
    try:
        await asyncio.gather(*tasks)  # the first failure as it is (not in a group), the others stopped
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for lane in lanes[1:]:
            await lane.close()


async def _close_chunk(
    pipeline: Pipeline[Any], store: RedisStore[Any], period: str, ratings: list[str], report: CloseReport
) -> None:
    """Close `ratings` for `period` (those closed already: their outboxes flushed), wait until every
    event of theirs is acknowledged, then take them out of the index."""
    planned, _ = await pipeline.run([CloseItem(period, key) for key in ratings])  # returns once published
    closed = sum(1 for p in planned if isinstance(p.outcome, CloseOutcome) and p.outcome.update is not None)
    report.closed += closed
    report.by_games += len(ratings) - closed
    await with_retry(store.redis.srem, keys.index_key(store.prefix, period), *ratings)
    log.info(
        "closed %d ratings of %s (%d closed already)",
        closed,
        period,
        len(ratings) - closed,
        extra={"period": period, "step": "chunk", "ratings": len(ratings)},
    )


async def _recorded(store: RedisStore[Any]) -> set[str]:
    """The periods with recorded games (an index)."""
    return set(map(text, await with_retry(store.redis.smembers, keys.indexed_key(store.prefix))))


async def fields(redis: Redis, prefix: str, *names: str) -> list[str | None]:
    """Fields of the store's `periods` hash (see `worker.store.keys`), None where absent."""
    values = await with_retry(redis.hmget, keys.periods_key(prefix), list(names))
    return [None if v is None else text(v) for v in values]


async def drain(
    settings: WorkerSettings, store: RedisStore[Any], say: Callable[[str], None], *, forever: bool = False
) -> float:
    """Wait until the workers have applied every input record published before now: on every
    partition, their watermarks in Redis or their group's committed offset reach the input's end
    offset (the watermarks are gone after a restore; the committed offsets after a group was
    renamed); the seconds it took. Past RATING_CLOSE_DRAIN_TIMEOUT_SECONDS: `DrainTimedOut`, or
    with `forever` (the follower, which must not skip an end) an error logged, the wait exported in
    `rating_close_drain_waiting_seconds` from then on, and the wait goes on."""
    started = time.monotonic()
    ends = await input_ends(settings)
    deadline = started + settings.close_drain_timeout_seconds
    log.info(
        "draining: waiting until the workers have applied %s up to its end offsets",
        settings.topic_games,
        extra={"step": "drain_start", "partitions": len(ends)},
    )
    said = timed_out = False
    next_log = started
    async with group_reader(settings) as group:
        while True:
            marks = await with_retry(store.watermarks, settings.topic_games)
            behind = {}
            for p, end in ends.items():
                done = marks.get(p, 0)
                if done < end:
                    done = max(
                        done, await retrying(KAFKA_READ, group.committed, TopicPartition(settings.topic_games, p)) or 0
                    )
                if done < end:
                    behind[p] = (done, end)
            now = time.monotonic()
            if not behind:
                metrics.CLOSE_DRAIN_WAITING.set(0)
                seconds = now - started
                log.info(
                    "drained in %.1f s",
                    seconds,
                    extra={"step": "drain_end", "partitions": len(ends), "seconds": round(seconds, 3)},
                )
                return seconds
            records = sum(e - w for w, e in behind.values())
            if now >= next_log:
                log.info(
                    "draining: %d partitions behind, %d records",
                    len(behind),
                    records,
                    extra={"step": "drain_progress", "partitions": len(behind), "behind": records},
                )
                next_log = now + DRAIN_LOG_SECONDS
            if now > deadline and forever:
                metrics.CLOSE_DRAIN_WAITING.set(now - started)
                if not timed_out:
                    listed = ", ".join(f"partition {p} at {w} of {e}" for p, (w, e) in sorted(behind.items()))
                    log.error(
                        "drain past RATING_CLOSE_DRAIN_TIMEOUT_SECONDS=%g: %s; still waiting",
                        settings.close_drain_timeout_seconds,
                        listed,
                        extra={"step": "drain_timeout", "partitions": len(behind), "behind": records},
                    )
                    timed_out = True
            elif now > deadline:
                listed = ", ".join(f"partition {p} at {w} of {e}" for p, (w, e) in sorted(behind.items()))
                log.error(
                    "drain timed out: %s",
                    listed,
                    extra={"step": "drain_timeout", "partitions": len(behind), "behind": records},
                )
                raise DrainTimedOut(
                    f"the workers did not apply the input up to its end within RATING_CLOSE_DRAIN_TIMEOUT_SECONDS="
                    f"{settings.close_drain_timeout_seconds:g} ({listed}); nothing new was marked: run it again once "
                    "they have caught up",
                    now - started,
                )
            if not said:
                say(f"close-period: waiting for the workers to apply the input up to its end ({len(behind)} behind)")
                said = True
            await asyncio.sleep(DRAIN_POLL_SECONDS)


async def input_ends(settings: WorkerSettings) -> dict[int, int]:
    """The input's end offsets, partition by partition: the broker's `end_offsets`, raised to the
    highwater a fetch from there reports (the same on Apache Kafka; some Kafka-compatible brokers
    answer `end_offsets` short)."""
    consumer = AIOKafkaConsumer(**kafka_options(settings), enable_auto_commit=False)
    try:
        await retrying(KAFKA_CONNECT, consumer.start)
        await retrying(KAFKA_READ, consumer.topics)
        topic = settings.topic_games
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        consumer.assign(tps)
        ends: dict[TopicPartition, int] = await retrying(KAFKA_READ, consumer.end_offsets, tps)
        for tp in tps:
            consumer.seek(tp, ends[tp])
        unknown = {tp for tp in tps if ends[tp] > 0}
        deadline = time.monotonic() + END_FETCH_SECONDS
        while unknown and time.monotonic() < deadline:
            try:
                await consumer.getmany(*unknown, timeout_ms=500, max_records=1)
            except Exception as e:
                if not unreadable.client_cannot_read(e):
                    raise
            for tp in list(unknown):
                highwater = consumer.highwater(tp)
                if highwater is not None:
                    ends[tp] = max(ends[tp], highwater)
                    unknown.discard(tp)
        return {tp.partition: ends[tp] for tp in tps}
    finally:
        await close_quietly(consumer.stop())


async def status(settings: WorkerSettings) -> Status:
    """What `close-period --status` prints."""
    periods = periods_of(settings)
    codec = settings.spec().calendar_codec
    assert codec is not None
    prefix = settings.redis_key_prefix
    async with connected(settings) as redis:
        calendar, closing, closed_at = await fields(redis, prefix, "calendar", "closing", "closed_at")
        recorded = sorted(map(text, await with_retry(redis.smembers, keys.indexed_key(prefix))))
        left = await with_retry(redis.scard, keys.index_key(prefix, closing)) if closing else 0
        opened = {text(k): float(v) for k, v in (await with_retry(redis.hgetall, keys.opened_key(prefix))).items()}
        ended = await marked_periods(redis, prefix) if codec.partial else None
    return Status(
        calendar if codec.partial else codec.decode((calendar or "").encode()),
        closing,
        left,
        [p for p in recorded if ended is None or p not in ended],
        periods.latest_due(int(time.time()), settings.period_grace_seconds),
        float(closed_at) if closed_at else None,
        ended,
        opened,
    )


async def marked_periods(redis: Redis, prefix: str) -> list[str]:
    """A calendar kept by its marks: every period marked closed, in the order of the marks."""
    places = await with_retry(redis.hgetall, keys.marked_key(prefix))
    return [text(p) for p, _ in sorted(places.items(), key=lambda item: int(item[1]))]


class NotClosedInTime(Exception):
    """An operator's close published, not closed by the follower within --timeout (status 1)."""


async def operator_close(
    settings: WorkerSettings, period: str, wait: bool, timeout: float, say: Callable[[str], None]
) -> int:
    """`close-period TOURNAMENT_ID` of a system whose periods end by a record (tornelo): publish the
    end record `{"event_id": "operator/{id}/{unix_ms}", "tournament_id", "finished_at": now}` on
    the tournament topic, acknowledged by the broker, so that every end is on the topic; then
    (unless not `wait`) wait until the follower has marked it and finished its close: its offset.
    Past `timeout`: `NotClosedInTime`, saying what is pending."""
    checked_period(periods_of(settings), period)
    prefix = settings.redis_key_prefix
    async with connected(settings) as redis:
        await own_prefix(redis, prefix, settings.spec().name, write=True, parameters=settings.parameters())
        now_ms = int(time.time() * 1000)
        finished_at = datetime.fromtimestamp(now_ms / 1000, UTC).isoformat(timespec="milliseconds")
        record = {
            "event_id": f"operator/{period}/{now_ms}",
            "tournament_id": period,
            "finished_at": finished_at.replace("+00:00", "Z"),
        }
        producer = make_producer(settings)
        await start_producer(producer, settings)
        try:
            sent = await retrying(
                KAFKA_PUBLISH,
                producer.send_and_wait,
                settings.topic_tournaments,
                json.dumps(record).encode(),
                period.encode(),
            )
        finally:
            await close_quietly(producer.stop())
        say(f"close-period: the end of {period} published ({record['event_id']}, offset {sent.offset})")
        if not wait:
            return int(sent.offset)
        deadline = time.monotonic() + timeout
        while True:
            # The mark first: a mark made between the two reads sets `closing` too, and is then seen.
            place = await with_retry(redis.hget, keys.marked_key(prefix), period)
            (closing,) = await fields(redis, prefix, "closing")
            if place is not None and closing != period:
                say(f"close-period: {period} closed")
                return int(sent.offset)
            if time.monotonic() >= deadline:
                if place is None:
                    pending = "not marked ended yet (is `close-period --follow` running? it reads the record in turn)"
                else:
                    left = await with_retry(redis.scard, keys.index_key(prefix, period))
                    pending = f"marked ended, its close in progress with {left} ratings left"
                raise NotClosedInTime(
                    f"{period} was not closed within --timeout {timeout:g} s: {pending}; its end record is at offset "
                    f"{sent.offset} of {settings.topic_tournaments} and stays there: the follower closes it"
                )
            await asyncio.sleep(DRAIN_POLL_SECONDS)


async def init(settings: WorkerSettings, period: str) -> None:
    """`--init PERIOD`: the latest closed period set on a deployment with no state yet (a mark over
    the calendar of nothing closed, finished at once: its index is empty); nothing published.
    Refused once any rating has state or a period is closed."""
    periods = periods_of(settings)
    checked_period(periods, period)
    prefix = settings.redis_key_prefix
    async with connected(settings) as redis:
        await own_prefix(redis, prefix, settings.spec().name, write=True, parameters=settings.parameters())
        (marks,) = await fields(redis, prefix, "marks")
        if marks is not None:
            raise CloseRefused(f"--init is refused: periods are closed already ({marks} marks made)")
        if await with_retry(_any_state, redis, prefix):
            raise CloseRefused(f"--init is refused: ratings have state under {prefix!r} (it is for a new deployment)")
        store = _store(settings, redis)
        if await with_retry(store.mark, 0, periods.marked(periods.opening, period), period) != 1:
            raise CloseRefused("--init is refused: another command closed a period meanwhile")
        await with_retry(store.finish, period)


async def _any_state(redis: Redis, prefix: str) -> bool:
    async for _ in redis.scan_iter(match=f"{keys.state_key(prefix, '')}*", count=1000):
        return True
    return False


def _store(settings: WorkerSettings, redis: Redis) -> RedisStore[Any]:
    """The store of a command that marks and reads the calendar only (no states written)."""
    spec = settings.spec()
    periods = spec.periods
    assert periods is not None
    return RedisStore(
        redis,
        settings.redis_key_prefix,
        process_token(),
        1.0,
        settings.idempotency_retention_seconds,
        codec=spec.codec,
        pending=periods.pending,
        calendar_codec=spec.calendar_codec,
    )
