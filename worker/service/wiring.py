"""The pipeline that `run`, `import` and `switch-over` share, wired from the settings: a Redis
store, a producer and the engine, started and stopped together."""

import os
import socket
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiokafka import AIOKafkaProducer, errors

from worker.engine.engine import Engine
from worker.rules.hundredths import Points
from worker.service.connections import close_quietly, kafka_options, make_redis
from worker.service.owner import own_prefix
from worker.settings import DEAD_LETTER_ROOM, WorkerSettings
from worker.store.redis_store import RedisStore
from worker.stream.dead_letters import DeadLetters
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
    """The producer of the worker and of every command that writes to Kafka (erase,
    replay-dead-letters): its request timeout is RATING_PRODUCER_DELIVERY_TIMEOUT_SECONDS."""
    return AIOKafkaProducer(
        **kafka_options(settings),
        acks="all",
        compression_type=compression(settings),
        # Order per key comes from sending event n+1 only after n is acknowledged, and from
        # holding a rating's next event one lease after a send of unknown outcome: the
        # idempotent producer (which some Kafka-compatible brokers lack) is an option on top.
        enable_idempotence=settings.kafka_idempotent_producer,
        request_timeout_ms=int(settings.producer_delivery_timeout_seconds * 1000),
        # A whole round of a batch's events fits one request; a dead letter is cut to fit it.
        max_batch_size=settings.kafka_max_request_bytes - DEAD_LETTER_ROOM,
        max_request_size=settings.kafka_max_request_bytes,
    )


async def start_producer(producer: AIOKafkaProducer, settings: WorkerSettings) -> None:
    """Start `producer`, retrying while Kafka is unreachable. With RATING_KAFKA_IDEMPOTENT_PRODUCER,
    a broker that refuses it (its InitProducerId answered with an error no retry cures, as some
    Kafka-compatible brokers do) stops the command at once, saying so, instead of retrying for ever."""

    async def start() -> None:
        try:
            await producer.start()
        except errors.BrokerResponseError as e:
            if settings.kafka_idempotent_producer and not e.retriable:
                raise IdempotenceRefused(
                    f"the broker refuses Kafka's idempotent producer ({type(e).__name__}: {e}): unset "
                    "RATING_KAFKA_IDEMPOTENT_PRODUCER, or use a broker that supports it (Apache Kafka does)"
                ) from e
            raise

    await retrying(KAFKA_CONNECT, start)


def dead_letters_for(producer: AIOKafkaProducer, settings: WorkerSettings) -> DeadLetters:
    """The deployment's dead letters (RATING_TOPIC_DEAD_LETTERS), sent with `producer`: the workers'
    bad games, and tornelo's bad tournament ends (`worker.stream.tournament_ends`), alike."""
    return DeadLetters(
        producer,
        settings.topic_dead_letters,
        settings.max_message_bytes,
        settings.dead_letter_alarm_per_minute,
        budget=settings.kafka_max_request_bytes,
    )


class IdempotenceRefused(Exception):
    """RATING_KAFKA_IDEMPOTENT_PRODUCER is set and the broker does not grant producer ids: a setting to
    change, reported in one line (status 2) like a prefix another system owns."""


def lease_seconds(settings: WorkerSettings) -> float:
    """How long a claim or renewal keeps a publication lease: the publication lease plus the
    delivery timeout, renewed every half delivery timeout while a request may be out, so that a
    process that dies at any moment keeps the others off for a full lease after it
    (`worker.stream.publisher`)."""
    return settings.publication_lease_seconds + settings.producer_delivery_timeout_seconds


def longest_wait(settings: WorkerSettings) -> float:
    """The longest a rating's events may wait by design for a lease (`worker.stream.consumer`,
    `waits_by_design`): another process's round is given up a publication lease after its first
    attempt, its last attempt resolved (aiokafka: within about three delivery timeouts), then its
    lease runs out (the lease plus a delivery timeout): twice the lease and four delivery timeouts."""
    return 2 * settings.publication_lease_seconds + 4 * settings.producer_delivery_timeout_seconds


@asynccontextmanager
async def pipeline_for(
    settings: WorkerSettings,
) -> AsyncIterator[tuple[Pipeline[Any], AIOKafkaProducer, RedisStore[Any]]]:
    """The pipeline (Redis store, publisher) that `run`, `import` and `switch-over` share, for the
    deployment's rating system (RATING_SYSTEM): its rules, its contract, its state in Redis."""
    redis = make_redis(settings)
    producer = make_producer(settings)
    try:
        await start_producer(producer, settings)
        await retrying(REDIS_CONNECT, redis.ping)
        await own_prefix(
            redis, settings.redis_key_prefix, settings.spec().name, write=True, parameters=settings.parameters()
        )
        periods = settings.spec().periods
        store: RedisStore[Any] = RedisStore(
            redis,
            settings.redis_key_prefix,
            process_token(),
            lease_seconds(settings),
            settings.idempotency_retention_seconds,
            settings.redis_wait_replicas,
            settings.redis_wait_timeout_ms,
            codec=settings.spec().codec,
            pending=None if periods is None else periods.pending,
            calendar_codec=settings.spec().calendar_codec,
        )
        engine = Engine(settings.spec(), Points(settings.training_rating))
        publisher = Publisher(producer, settings.topic_ratings, settings.producer_delivery_timeout_seconds)
        pipeline = Pipeline(
            engine,
            store,
            publisher,
            hold_seconds=settings.publication_lease_seconds,
            fenced=settings.kafka_idempotent_producer,
        )
        try:
            yield pipeline, producer, store
        finally:
            await pipeline.close()
    finally:
        await close_quietly(producer.stop(), redis.aclose())
