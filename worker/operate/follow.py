"""`rating-worker close-period --follow`: a system whose periods end by a record (tornelo: a
tournament's end on RATING_TOPIC_TOURNAMENTS) has them closed by this follower, a long-running
process (one replica), with the consumer group `{RATING_KAFKA_GROUP_ID}-close`.

It reads the end records in order (the topic has one partition) and, for each fetch:
1. dead-letters a bad record (the game input's error kinds and headers) and goes on;
2. drains once for every end record of the fetch: waits until the workers have applied every game
   published before the records were read (`close_period.drain`). It never gives up: past
   RATING_CLOSE_DRAIN_TIMEOUT_SECONDS it logs, sets `rating_close_drain_waiting_seconds` (an alert
   fires on it) and keeps waiting;
3. marks each tournament ended, one at a time in the order of the records, and closes it: FIDE's
   routine (`close_period.mark_through`: the mark over the calendar version read, the index
   closed in chunks under check-and-set, published through the outboxes, emptied as the events
   are acknowledged);
4. only then commits the records.
A follower killed anywhere reads the records again from the last commit: an ended tournament is
not marked again, the close in progress is finished first, a rating closed already is only
removed from the index. Two followers at once (a rebalance, a stalled pod), or an operator's
close beside one, are safe for the same reasons as two `close-period` runs: a mark is made only
over the calendar version its maker read and with no close in progress, each rating is closed
once under its check-and-set, and each close event is published from its rating's outbox.

Each close's outcome is recorded in Redis as `close-period`'s runs record theirs, for the workers'
metrics; the follower serves its own on RATING_METRICS_PORT (ends read, drain wait, lag).
"""

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.errors import KafkaError

from schemas.tournament_finished import TournamentFinished
from worker import metrics
from worker.operate.close_period import (
    CloseReport,
    close_group,
    drain,
    finish_in_progress,
    mark_through,
    periods_of,
    record_outcome,
)
from worker.service import period_closes
from worker.service.connections import begin_closing, close_quietly, kafka_options
from worker.service.health import serve_http, watch_dependencies
from worker.service.process import run_command
from worker.service.wiring import dead_letters_for, pipeline_for
from worker.settings import WorkerSettings
from worker.store.redis_store import RedisStore
from worker.stream import retry
from worker.stream.health import Health
from worker.stream.pipeline import Pipeline
from worker.stream.retry import KAFKA_JOIN, KAFKA_READ, retrying
from worker.stream.tournament_ends import read_ends

log = logging.getLogger(__name__)

FETCH_MS = 1000  # a fetch waits this long for end records before the follower polls again
COMMIT_SECONDS = 10.0  # a commit not answered by then is given up (see `_commit`)
MAX_POLL_INTERVAL_MS = 24 * 3600 * 1000  # a day between two fetches (a drain, a close) keeps the partition


def serve(settings: WorkerSettings, say: Callable[[str], None]) -> int:
    """The follower as a process: its retries never give up (like `rating-worker run`'s), SIGTERM or
    SIGINT stop it at once (safe anywhere: the records not committed are read again), /metrics,
    /livez and /readyz on RATING_METRICS_PORT. Exit status 0 once stopped."""
    periods_of(settings)  # a system without periods: refused before anything starts
    failing = retry.Failing()
    try:
        run_command(settings, lambda: follow(settings, say, failing), forever=failing)
    except asyncio.CancelledError:
        log.info("the close follower stopped")
    return 0


# Told of each end the follower took: the end, and what its close did (the demo prints it).
Closed = Callable[[TournamentFinished, CloseReport], None]


async def follow(
    settings: WorkerSettings,
    say: Callable[[str], None],
    failing: retry.Failing | None = None,
    closed: Closed | None = None,
) -> None:
    """Follow the end records until cancelled."""
    periods_of(settings)
    metrics.show_follower()
    health = Health(stall_seconds=settings.stall_seconds)
    exposed = metrics.exposed(settings.spec().name)
    server = await serve_http(health, exposed, settings.metrics_port) if settings.metrics_port else None
    try:
        await _follow(settings, say, health, failing or retry.Failing(), closed)
    finally:
        if server is not None:
            server.close()


async def _follow(
    settings: WorkerSettings, say: Callable[[str], None], health: Health, failing: retry.Failing, closed: Closed | None
) -> None:
    async with pipeline_for(settings) as (pipeline, producer, store):
        consumer = AIOKafkaConsumer(
            settings.topic_tournaments,
            **kafka_options(settings),
            group_id=close_group(settings),
            enable_auto_commit=False,
            auto_offset_reset="earliest",  # a new follower reads every end ever published
            session_timeout_ms=settings.kafka_session_timeout_ms,
            heartbeat_interval_ms=settings.kafka_heartbeat_interval_ms,
            fetch_max_wait_ms=settings.kafka_fetch_max_wait_ms,  # as the workers': an end is read at once
            # A drain may wait as long as the workers lag, and never gives up: the group must not
            # take the partition away between two fetches meanwhile (aiokafka's default: 5 minutes).
            max_poll_interval_ms=MAX_POLL_INTERVAL_MS,
        )
        dead_letters = dead_letters_for(producer, settings)
        watching: asyncio.Task[None] | None = None
        try:
            await retrying(KAFKA_JOIN, consumer.start)
            # Its one partition is not watched for stalls: a drain waits by design.
            health.assigned(set(), time.monotonic())
            watching = asyncio.create_task(
                watch_dependencies(health, failing, producer.client.fetch_all_metadata, store.check)
            )
            report = CloseReport()
            await finish_in_progress(pipeline, store, report, say, resumed=True)
            say(f"close-period: following {settings.topic_tournaments} as {close_group(settings)}")
            while True:
                fetched = await retrying(KAFKA_READ, lambda: consumer.getmany(timeout_ms=FETCH_MS))
                records = sorted((r for rs in fetched.values() for r in rs), key=lambda r: (r.partition, r.offset))
                await _lag(consumer)
                if not records:
                    continue
                metrics.CLOSE_ENDS_READ.inc(len(records))
                ends = await read_ends(records, dead_letters)
                if ends:
                    await _close_ends(settings, pipeline, store, ends, say, closed)
                await _commit(consumer, records)
        finally:
            if watching is not None:
                watching.cancel()
            begin_closing()
            await close_quietly(consumer.stop())


async def _close_ends(
    settings: WorkerSettings,
    pipeline: Pipeline[Any],
    store: RedisStore[Any],
    ends: list[TournamentFinished],
    say: Callable[[str], None],
    closed: Closed | None,
) -> None:
    """One drain for every end of a fetch, then each tournament marked and closed in order, each
    close's outcome recorded for the workers' metrics."""
    waited = await drain(settings, store, say, forever=True)
    for end in ends:
        started = time.monotonic()
        report = CloseReport(drain_seconds=waited, drained=True)
        outcome = period_closes.FAILED
        try:
            await mark_through(pipeline, store, end.tournament_id, report, say)
            outcome = period_closes.CLOSED if report.marked or report.finished else period_closes.NOTHING_DUE
        finally:
            report.seconds = time.monotonic() - started + waited
            log.info(
                "end of %s (%s): %s",
                end.tournament_id,
                end.event_id,
                outcome,
                extra={"step": "done", "period": end.tournament_id, "outcome": outcome, "ratings": report.closed},
            )
            await record_outcome(settings, outcome, report, store.redis)
        if closed is not None:
            closed(end, report)
        waited = 0.0  # the drain served every end of the fetch


async def _commit(consumer: AIOKafkaConsumer, records: list[ConsumerRecord[Any, Any]]) -> None:
    """Commit past `records`, once, not retried: a commit refused (the partition moved to another
    follower in a rebalance, this one left the group during a long drain, the coordinator away) is
    left as it is, and so is one not answered within COMMIT_SECONDS. The records are read again, by
    this follower or the partition's next owner, and found done. (A retried refusal would keep the
    follower from fetching, and so from rejoining the group, for good.)"""
    offsets = {TopicPartition(r.topic, r.partition): r.offset + 1 for r in records}
    try:
        async with asyncio.timeout(COMMIT_SECONDS):  # aiokafka waits for a coordinator it lost, unbounded
            await consumer.commit(offsets)
    except (KafkaError, TimeoutError) as e:
        log.warning("end records not committed (%s: %s): they are read again, and found done", type(e).__name__, e)


async def _lag(consumer: AIOKafkaConsumer) -> None:
    """`rating_close_ends_lag_records`: end records on the topic past the follower's position, as
    its last fetch saw the topic's end (not read yet; those being closed are the drain's and the
    close's metrics). It holds while a drain or a close runs: no fetch is made meanwhile."""
    lag = 0
    for tp in consumer.assignment():
        highwater = consumer.highwater(tp)
        if highwater is not None:
            lag += max(0, highwater - await consumer.position(tp))
    metrics.CLOSE_ENDS_LAG.set(lag)
