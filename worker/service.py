"""`rating-worker run`: the streaming worker, wired from its settings.

Kafka in (game-finished), per-player serialized updates on Redis state, rating changes out.
SIGTERM or SIGINT stops fetching; the batch in flight is finished, published and committed
within RATING_SHUTDOWN_GRACE_SECONDS, then the process exits 0. If the grace runs out (an
outage), the batch is abandoned uncommitted (it will be redelivered and deduplicated) and
the exit status is 1.
"""

import asyncio
import logging
import os
import platform
import signal
import socket
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from worker import metrics
from worker.connections import kafka_options, make_redis
from worker.consume import RatingConsumer
from worker.dead_letter import DeadLetters
from worker.engine import Engine
from worker.health import Health, serve_http, watch_dependencies
from worker.pipeline import Pipeline
from worker.publish import Publisher
from worker.retry import retrying
from worker.rules.arena import ArenaRules
from worker.settings import WorkerSettings
from worker.store import RedisStore

log = logging.getLogger(__name__)

# Output batches up to 1 MiB: a whole round of a batch's events fits in one request.
PRODUCER_MAX_BATCH_BYTES = 1024 * 1024


def process_token() -> str:
    """Who holds a publication lease: unique per process, readable in Redis."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def make_producer(settings: WorkerSettings) -> AIOKafkaProducer:
    return AIOKafkaProducer(
        **kafka_options(settings),
        acks="all",
        # Order per key comes from sending event n+1 only after n is acknowledged, not from
        # the idempotent producer (which some Kafka-compatible brokers lack).
        enable_idempotence=False,
        request_timeout_ms=int(settings.producer_delivery_timeout_seconds * 1000),
        max_batch_size=PRODUCER_MAX_BATCH_BYTES,
        max_request_size=PRODUCER_MAX_BATCH_BYTES + 65536,
    )


@asynccontextmanager
async def pipeline_for(settings: WorkerSettings) -> AsyncIterator[tuple[Pipeline, AIOKafkaProducer]]:
    """The pipeline (Redis store, publisher) that `run` and `import` share, started and stopped."""
    redis = make_redis(settings)
    producer = make_producer(settings)
    await retrying("connecting to Kafka", producer.start)
    try:
        store = RedisStore(
            redis,
            settings.redis_key_prefix,
            process_token(),
            settings.publication_lease_seconds,
            settings.idempotency_retention_seconds,
            settings.redis_wait_replicas,
            settings.redis_wait_timeout_ms,
        )
        await retrying("connecting to Redis", redis.ping)
        engine = Engine(ArenaRules(), settings.training_rating)
        publisher = Publisher(producer, settings.topic_ratings, settings.producer_delivery_timeout_seconds)
        yield Pipeline(engine, store, publisher), producer
    finally:
        await producer.stop()
        await redis.aclose()


async def serve(settings: WorkerSettings) -> int:
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    metrics.BUILD.info({"version": version("arena-rating-worker"), "python": platform.python_version()})
    health = Health(stall_seconds=settings.stall_seconds)
    server = await serve_http(health, settings.metrics_port) if settings.metrics_port else None
    async with pipeline_for(settings) as (pipeline, producer):
        consumer = AIOKafkaConsumer(
            **kafka_options(settings),
            group_id=settings.kafka_group_id,
            group_instance_id=settings.kafka_group_instance_id,
            enable_auto_commit=False,
            # A new group starts from the beginning: a rating service must not skip games.
            auto_offset_reset="earliest",
            session_timeout_ms=settings.kafka_session_timeout_ms,
            heartbeat_interval_ms=settings.kafka_heartbeat_interval_ms,
            max_partition_fetch_bytes=settings.max_partition_fetch_bytes,
            fetch_max_wait_ms=settings.kafka_fetch_max_wait_ms,
        )
        dead_letters = DeadLetters(
            producer, settings.topic_dead_letters, settings.max_message_bytes, settings.dead_letter_alarm_per_minute
        )
        worker = RatingConsumer(
            consumer, pipeline, dead_letters, settings.batch_size, settings.max_message_bytes, health
        )
        consumer.subscribe([settings.topic_games], listener=worker.listener())
        await retrying("joining the consumer group", consumer.start)
        watching = asyncio.create_task(
            watch_dependencies(health, producer.client.fetch_all_metadata, pipeline.store.redis.ping)
        )
        log.info("consuming %s as group %s", settings.topic_games, settings.kafka_group_id)
        running = asyncio.create_task(worker.run(stopping))
        try:
            await _until_stopped(running, stopping, settings.shutdown_grace_seconds)
        finally:
            watching.cancel()
            await consumer.stop()
            if server is not None:
                server.close()
        if running.cancelled():
            log.error(
                "shutdown grace of %.0f s ran out: the batch in flight was abandoned uncommitted",
                settings.shutdown_grace_seconds,
            )
            return 1
        running.result()
    log.info("stopped cleanly: %s", {str(k): n for k, n in worker.totals.items()})
    return 0


async def _until_stopped(running: "asyncio.Task[None]", stopping: asyncio.Event, grace: float) -> None:
    stop_wait = asyncio.create_task(stopping.wait())
    await asyncio.wait([running, stop_wait], return_when=asyncio.FIRST_COMPLETED)
    stop_wait.cancel()
    if running.done():
        return  # it failed: the caller raises its error
    log.info("stopping: finishing the batch in flight (grace %.0f s)", grace)
    try:
        await asyncio.wait_for(asyncio.shield(running), grace)
    except TimeoutError:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
