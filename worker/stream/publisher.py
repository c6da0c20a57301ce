"""Publication of rating events (and erase's tombstones), acknowledged by Kafka (acks=all).

Outboxes are sent in rounds (see `worker.stream.pipeline`): round r holds the r-th unconfirmed
event of every claimed rating, so event n+1 of a key is sent only after event n was
acknowledged. A round is grouped by partition (murmur2 of the key, as every Kafka client
partitions) and sent with `send_batch`, one produce request per partition rather than one
`send()` per event.

**Attempts whose outcome is unknown.** A failed attempt (a timeout, a cut connection) may still
have reached the broker, or may reach it later: aiokafka gives up on a request after its request
timeout and closes the connection, but bytes already on their way (held by a slow link or a
proxy) can still arrive. The same holds for a request aiokafka resent by itself after a
connection error, inside an attempt that then succeeded. `attempt` waits until the client has
resolved every batch of the attempt (delivered, refused or given up on), so that when it returns
or raises, the client holds no request of it any more, and it says whether a request of it was
given up on. `deliver` repeats attempts until the round is acknowledged, renewing the leases
before each new one, and says when the last uncertain attempt was abandoned: the caller then
sends no later event of those keys for one publication lease (`worker.stream.pipeline`).

**How long an attempt may take** (`attempt_bound`). aiokafka sends a batch once the broker's
connection has no request in flight (at most one request timeout), gives up on a request after
its request timeout, and resends a batch after a connection error only while the batch is younger
than the request timeout: every request of an attempt is resolved within three request timeouts
of its start. Leases are claimed and renewed for the publication lease plus this bound, so that
a process that dies during an attempt keeps every other writer off its ratings until a full lease
has passed since any request of it could still be in the client's hands.
"""

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import DefaultPartitioner

from worker import metrics
from worker.stream.retry import KAFKA_PUBLISH, REDIS_CLAIM, retrying

log = logging.getLogger(__name__)

PRODUCE_API_KEY = 0  # the Kafka protocol's Produce request
# aiokafka's backoff before it resends a batch (its retry_backoff_ms), and slack for the event loop.
RESEND_SLACK_SECONDS = 1.0


def attempt_bound(delivery_timeout: float) -> float:
    """The longest an attempt to send a round may keep a request in the client's hands (see the
    module's docstring): a wait for the connection, the request, and one resend, each within the
    request timeout (RATING_PRODUCER_DELIVERY_TIMEOUT_SECONDS)."""
    return 3 * delivery_timeout + RESEND_SLACK_SECONDS


class _GivenUp:
    """Counts the produce requests the client gave up on (a timeout, a broken connection),
    including those it then resent by itself, which the caller is never told of.
    It wraps the client's `send`, through which aiokafka's sender sends every request."""

    def __init__(self, producer: AIOKafkaProducer) -> None:
        self.count = 0
        client = producer.client
        send = client.send

        async def watched(node_id: int, request: Any, **options: Any) -> Any:
            try:
                return await send(node_id, request, **options)
            except BaseException:
                if getattr(request, "API_KEY", None) == PRODUCE_API_KEY:
                    self.count += 1
                raise

        client.send = watched


@dataclass(frozen=True, slots=True)
class Delivered:
    """A round acknowledged by Kafka: the keys it was delivered for (those whose lease was lost
    during retries were dropped from it) and when the last attempt whose outcome is unknown was
    abandoned (time.monotonic(); None if every attempt was clean)."""

    keys: frozenset[bytes]
    uncertain_at: float | None


class Publisher:
    def __init__(self, producer: AIOKafkaProducer, topic: str, delivery_timeout: float) -> None:
        self.producer = producer
        self.topic = topic
        self.delivery_timeout = delivery_timeout
        self.partitioner = DefaultPartitioner()
        self._given_up = _GivenUp(producer) if producer is not None else None

    async def deliver(
        self, records: Mapping[bytes, bytes | None], renew: Callable[[list[bytes]], Awaitable[list[bytes]]]
    ) -> Delivered:
        """Send one round (at most one record per key; a None value is a tombstone) until Kafka
        acknowledges it. Before each attempt after the first, `renew` renews the keys' leases and
        returns those that were lost: they are sent no more (another process holds them now)."""
        round_ = dict(records)
        uncertain_at: float | None = None

        async def attempt() -> None:
            nonlocal round_, uncertain_at
            if uncertain_at is not None:
                lost = set(await retrying(REDIS_CLAIM, renew, list(round_)))
                round_ = {k: v for k, v in round_.items() if k not in lost}
                if not round_:
                    return
            try:
                clean = await self.attempt(round_)
            except BaseException as e:
                uncertain_at = time.monotonic()
                metrics.PUBLICATIONS_UNCERTAIN.inc()
                if not isinstance(e, asyncio.CancelledError):
                    log.warning(
                        "a publication of %d records was not acknowledged (%s: %s): it may still reach the broker, "
                        "so their keys' next events wait one publication lease from now",
                        len(round_),
                        type(e).__name__,
                        e,
                    )
                raise
            if not clean:
                uncertain_at = time.monotonic()
                metrics.PUBLICATIONS_UNCERTAIN.inc()
                log.warning(
                    "the Kafka client resent a request of %d records after giving up on it: the first may still "
                    "reach the broker, so their keys' next events wait one publication lease from now",
                    len(round_),
                )

        await retrying(KAFKA_PUBLISH, attempt)
        return Delivered(frozenset(round_), uncertain_at)

    async def attempt(self, records: Mapping[bytes, bytes | None]) -> bool:
        """One attempt to send a round (`send`)."""
        return await self.send(list(records.items()))

    async def send(self, records: Sequence[tuple[bytes, bytes | None]]) -> bool:
        """One attempt: send the records and wait until the client has resolved every batch.
        Raises the first failure once all are resolved; returns False if a request of it was
        given up on and resent by the client (its first copy may still arrive)."""
        given_up = self._given_up
        before = given_up.count if given_up is not None else 0
        partitions = sorted(await self.producer.partitions_for(self.topic))
        by_partition: dict[int, list[tuple[bytes, bytes | None]]] = defaultdict(list)
        for key, value in records:
            by_partition[self.partitioner(key, partitions, partitions)].append((key, value))
        futures: list[asyncio.Future[Any]] = []
        async with asyncio.timeout(attempt_bound(self.delivery_timeout)):
            try:
                for partition, batch_records in by_partition.items():
                    batch = self.producer.create_batch()
                    for key, value in batch_records:
                        if batch.append(key=key, value=value, timestamp=None) is None:
                            futures.append(await self.producer.send_batch(batch, self.topic, partition=partition))
                            batch = self.producer.create_batch()
                            batch.append(key=key, value=value, timestamp=None)
                    futures.append(await self.producer.send_batch(batch, self.topic, partition=partition))
            finally:
                # Every batch handed over is waited for, also when a later one could not be: its
                # outcome is what the caller needs, and no failure goes unretrieved.
                outcomes = await asyncio.gather(*futures, return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return given_up is None or given_up.count == before
