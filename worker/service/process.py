"""`rating-worker run`: the streaming worker, wired from its settings; and the way every
command starts and stops.

Kafka in (game-finished), per-player serialized updates on Redis state, rating changes out.

Stopping (SIGTERM or SIGINT), whatever the worker is doing:
1. before it consumes (connecting, joining the group, while Kafka or Redis is unreachable):
   it stops at once, exit status 0: nothing is in flight;
2. while it consumes: it stops fetching, and the batch in flight is finished, published and
   committed within RATING_SHUTDOWN_GRACE_SECONDS, then exit status 0; if the grace runs out
   (an outage), the batch is abandoned uncommitted (redelivered later, deduplicated): status 1;
3. then the clients are closed, all within one CLOSE_SECONDS budget (`worker.service.connections`; a
   frozen broker never answers a leave-group request); a second signal skips what is left of 2.
So a stop takes at most RATING_SHUTDOWN_GRACE_SECONDS + CLOSE_SECONDS (and the interpreter's exit), dependencies
or not.
"""

import asyncio
import logging
import platform
import signal
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from worker import metrics
from worker.engine.decoder import ErrorKind
from worker.service import memory_trace, period_closes
from worker.service.connections import addresses, begin_closing, close_quietly, kafka_options
from worker.service.health import serve_http, watch_dependencies
from worker.service.owner import PrefixOwned
from worker.service.wiring import IdempotenceRefused, dead_letters_for, longest_wait, pipeline_for
from worker.settings import WorkerSettings
from worker.store.redis_store import RedisStore
from worker.stream import retry
from worker.stream.consumer import RatingConsumer, WatermarkAhead
from worker.stream.health import Health
from worker.stream.retry import KAFKA_JOIN, PERMANENT_KAFKA_ERRORS, retrying

log = logging.getLogger(__name__)
T = TypeVar("T")


def run_command(
    settings: WorkerSettings,
    command: Callable[[], Awaitable[T]],
    announce: Callable[[str], None] | None = None,
    *,
    forever: retry.Failing | None = None,
) -> T:
    """Run a one-shot command: its retries give up after RATING_COMMAND_RETRY_SECONDS
    (`retry.Unreachable`), and SIGTERM or SIGINT cancel it at once (asyncio.CancelledError).
    `announce` is told, once per dependency, when the command starts waiting for it. `forever`: a
    long-running command's (the close follower's) retries never give up, as the worker's, counted
    in that `Failing` (its health watch reads it)."""

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)
        if forever is not None:
            with retry.policy(None, addresses(settings), forever):
                return await command()
        with retry.policy(settings.command_retry_seconds, addresses(settings), announce=announce):
            return await command()

    return asyncio.run(main())


@dataclass
class _Progress:
    consuming: bool = False  # the consumer loop runs: a stop lets its batch finish
    drained: bool = False  # the consumer loop returned: only the clients are left to close
    abandoned: bool = False  # the grace ran out with a batch in flight


async def serve(settings: WorkerSettings) -> int:
    """`rating-worker run` until stopped (see the module's docstring); the exit status."""
    loop = asyncio.get_running_loop()
    if settings.tracemalloc_frames > 0:
        memory_trace.start(settings.tracemalloc_frames, Path(settings.tracemalloc_dir))
    stopping = asyncio.Event()
    progress = _Progress()
    failing = retry.Failing()  # this process's: its retry loops count in it, its health watch reads it
    with retry.policy(None, addresses(settings), failing):
        work = asyncio.create_task(_work(settings, stopping, progress, failing))
    signals = 0

    def abandon() -> None:
        if not progress.drained and not work.done():
            progress.abandoned = True
            work.cancel()

    def on_signal() -> None:
        nonlocal signals
        signals += 1
        stopping.set()
        if signals > 1 or not progress.consuming:
            work.cancel()
        elif signals == 1:
            log.info("stopping: finishing the batch in flight (grace %.0f s)", settings.shutdown_grace_seconds)
            loop.call_later(settings.shutdown_grace_seconds, abandon)

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    try:
        await asyncio.wait({work})
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    if work.cancelled():
        if progress.abandoned:
            log.error(
                "shutdown grace of %.0f s ran out: the batch in flight was abandoned uncommitted",
                settings.shutdown_grace_seconds,
            )
            return 1
        log.info("stopped before consuming anything")
        return 0
    error = work.exception()
    if isinstance(error, PERMANENT_KAFKA_ERRORS):
        log.error("stopping: Kafka refuses a request for good (%s: %s)", type(error).__name__, error)
        return 1
    if isinstance(error, PrefixOwned | IdempotenceRefused):
        raise error  # a setting to change: the command line says it in one line, status 2
    if isinstance(error, WatermarkAhead):
        log.error("stopping: %s", error)
        return 1
    return work.result()


async def _work(settings: WorkerSettings, stopping: asyncio.Event, progress: _Progress, failing: retry.Failing) -> int:
    rules = settings.rules()
    metrics.prepare(rules, ErrorKind, retry.OPERATIONS, periodic=settings.spec().periodic)
    metrics.BUILD.info({"version": version("arena-rating-worker"), "python": platform.python_version()})
    health = Health(stall_seconds=settings.stall_seconds)
    metrics.STALL_THRESHOLD.set(settings.stall_seconds)
    exposed = metrics.exposed(rules.name)
    server = await serve_http(health, exposed, settings.metrics_port) if settings.metrics_port else None
    try:
        async with pipeline_for(settings) as (pipeline, producer, store):
            consumer = AIOKafkaConsumer(
                **kafka_options(settings),
                group_id=settings.kafka_group_id,
                group_instance_id=settings.kafka_group_instance_id,
                enable_auto_commit=False,
                # A new group starts from the beginning: a rating service must not skip games.
                # A group that lost its offsets starts at the watermarks instead (worker.stream.consumer).
                auto_offset_reset="earliest",
                session_timeout_ms=settings.kafka_session_timeout_ms,
                heartbeat_interval_ms=settings.kafka_heartbeat_interval_ms,
                max_partition_fetch_bytes=settings.max_partition_fetch_bytes,
                fetch_max_wait_ms=settings.kafka_fetch_max_wait_ms,
            )
            dead_letters = dead_letters_for(producer, settings)
            worker = RatingConsumer(
                consumer,
                pipeline,
                dead_letters,
                settings.batch_size,
                settings.max_message_bytes,
                health,
                future_allowance_seconds=settings.future_allowance_seconds,
                max_wait=longest_wait(settings),
            )
            consumer.subscribe([settings.topic_games], listener=worker.listener())
            try:
                await retrying(KAFKA_JOIN, consumer.start)
                await _run_consumer(worker, store, producer, health, failing, stopping, progress, settings)
            finally:
                begin_closing()  # the consumer, then the producer and Redis: one budget for all
                await close_quietly(consumer.stop())
    finally:
        if server is not None:
            server.close()
    log.info("stopped cleanly; %s", _games_summary(worker.totals))
    return 0


def _games_summary(totals: Counter[str]) -> str:
    """What this process did with the games it consumed, for its last log line."""
    games = sum(totals.values())
    if not games:
        return "no game consumed"
    counts = ", ".join(f"{verdict.replace('_', ' ')} {n}" for verdict, n in sorted(totals.items()))
    return f"{games} game{'s' if games != 1 else ''} consumed: {counts}"


async def _run_consumer(
    worker: RatingConsumer,
    store: RedisStore[Any],
    producer: AIOKafkaProducer,
    health: Health,
    failing: retry.Failing,
    stopping: asyncio.Event,
    progress: _Progress,
    settings: WorkerSettings,
) -> None:
    # Redis's check runs the store's guard: a loss of this process's writes is found within
    # a check interval even while no game arrives.
    watching = asyncio.create_task(watch_dependencies(health, failing, producer.client.fetch_all_metadata, store.check))
    # A per-period system's closes, which `close-period` records in Redis, exported as metrics.
    closes = period_closes.watch_for(settings, store.redis)
    watching_closes = None if closes is None else asyncio.create_task(closes)
    progress.consuming = True
    log.info("consuming %s as group %s", settings.topic_games, settings.kafka_group_id)
    try:
        await worker.run(stopping)
        progress.drained = True
    finally:
        watching.cancel()
        if watching_closes is not None:
            watching_closes.cancel()
