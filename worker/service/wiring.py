"""The pipeline that `run`, `import` and `switch-over` share, wired from the settings: a Redis
store, a producer and the engine, started and stopped together."""

import os
import socket
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiokafka import AIOKafkaProducer

from worker.engine.engine import Engine
from worker.rules.hundredths import Points
from worker.service.connections import close_quietly, kafka_options, make_redis
from worker.service.owner import own_prefix
from worker.settings import DEAD_LETTER_ROOM, WorkerSettings
from worker.store.redis_store import STORES, RedisStateStore
from worker.stream.pipeline import Pipeline
from worker.stream.publisher import Publisher
from worker.stream.retry import KAFKA_CONNECT, REDIS_CONNECT, retrying


def process_token() -> str:
    """Who holds a publication lease: unique per process, readable in Redis."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def compression(settings: WorkerSettings) -> str | None:
    """What every producer of the worker and its commands compresses with (RATING_KAFKA_COMPRESSION_TYPE)."""
    return None if settings.kafka_compression_type == "none" else settings.kafka_compression_type


def make_producer(settings: WorkerSettings) -> AIOKafkaProducer:
    return AIOKafkaProducer(
        **kafka_options(settings),
        acks="all",
        compression_type=compression(settings),
        # Order per key comes from sending event n+1 only after n is acknowledged, not from
        # the idempotent producer (which some Kafka-compatible brokers lack).
        enable_idempotence=False,
        request_timeout_ms=int(settings.producer_delivery_timeout_seconds * 1000),
        # A whole round of a batch's events fits one request; a dead letter is cut to fit it.
        max_batch_size=settings.kafka_max_request_bytes - DEAD_LETTER_ROOM,
        max_request_size=settings.kafka_max_request_bytes,
    )


@asynccontextmanager
async def pipeline_for(
    settings: WorkerSettings,
) -> AsyncIterator[tuple[Pipeline[Any], AIOKafkaProducer, RedisStateStore[Any]]]:
    """The pipeline (Redis store, publisher) that `run`, `import` and `switch-over` share, for the
    deployment's rating system (RATING_SYSTEM): its rules, its contract, its state in Redis."""
    redis = make_redis(settings)
    producer = make_producer(settings)
    try:
        await retrying(KAFKA_CONNECT, producer.start)
        await retrying(REDIS_CONNECT, redis.ping)
        await own_prefix(redis, settings.redis_key_prefix, settings.system, write=True)
        store = STORES[settings.system](
            redis,
            settings.redis_key_prefix,
            process_token(),
            settings.publication_lease_seconds,
            settings.idempotency_retention_seconds,
            settings.redis_wait_replicas,
            settings.redis_wait_timeout_ms,
        )
        engine = Engine(settings.rules(), Points(settings.training_rating))
        publisher = Publisher(producer, settings.topic_ratings, settings.producer_delivery_timeout_seconds)
        yield Pipeline(engine, store, publisher), producer, store
    finally:
        await close_quietly(producer.stop(), redis.aclose())
