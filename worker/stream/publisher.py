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
connection error, inside an attempt that then succeeded. An attempt ends only when the client has
resolved every batch of it (delivered, refused or given up on: aiokafka resolves a batch's future
after its last request, and sends it no more), however long that takes, so that when it returns
or raises, the client holds no request of it; and it says whether a request of it was given up
on. `deliver` repeats attempts until the round is acknowledged and says when the last uncertain
attempt was abandoned: the caller then sends no later event of those keys for one publication
lease (`worker.stream.pipeline`).

**Leases kept while a request may be out.** While any request of the round may be in the
client's hands, its leases are renewed every half delivery timeout (and before each new attempt),
each renewal for the publication lease plus the delivery timeout (`lease_seconds` in
`worker.service.wiring`). So if this process dies at any moment, its leases run at least one
publication lease past it: no other writer sends a later event of those ratings before a request
of it could be late by a whole lease. A round still not acknowledged one publication lease after
its first attempt is given up (`Delivered.given_up`): no new attempt, and so no more renewals once
the last one is resolved, so that a process cut off from the broker does not keep its ratings from
the others for ever. (A renewal that Redis does not answer in time is skipped: during a Redis
outage the leases run out from their last renewal.)
"""

import asyncio
import logging
import struct
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import NodeNotReadyError

from worker import metrics
from worker.stream.retry import KAFKA_PUBLISH, REDIS_CLAIM, retrying

log = logging.getLogger(__name__)

PRODUCE_API_KEY = 0  # the Kafka protocol's Produce request

# renew(keys) -> the keys whose lease is not ours (the others are renewed).
Renew = Callable[[list[bytes]], Awaitable[list[bytes]]]


class _GivenUp:
    """Counts the produce requests the client gave up on once sent (a timeout, a broken
    connection), including those it then resent by itself, which the caller is never told of.
    It wraps the client's `send`, through which aiokafka's sender sends every request. Every
    produce request of the producer counts (dead letters share it): it errs on the side of a
    hold too many."""

    def __init__(self, producer: AIOKafkaProducer) -> None:
        self.count = 0
        client = producer.client
        send = client.send

        async def watched(node_id: int, request: Any, **options: Any) -> Any:
            try:
                return await send(node_id, request, **options)
            except NodeNotReadyError:
                raise  # nothing was sent
            except BaseException:
                if getattr(request, "API_KEY", None) == PRODUCE_API_KEY:
                    self.count += 1
                raise

        client.send = watched


class _GaveUp(Exception):
    """The round is still not acknowledged one publication lease after its first attempt."""


@dataclass(frozen=True, slots=True)
class Delivered:
    """What became of a round: the keys Kafka acknowledged; those given up (not acknowledged a
    lease after the first attempt: their leases are ours until `lease_until`); those whose lease
    was lost during the retries (sent no more); and when the last attempt whose outcome is unknown
    was abandoned (time.monotonic(); None if every attempt was clean)."""

    keys: frozenset[bytes]
    given_up: frozenset[bytes] = frozenset()
    lost: frozenset[bytes] = frozenset()
    uncertain_at: float | None = None
    lease_until: float = 0.0  # monotonic: when the leases of `given_up` run out, at the latest


class Publisher:
    def __init__(self, producer: AIOKafkaProducer, topic: str, delivery_timeout: float) -> None:
        self.producer = producer
        self.topic = topic
        self.delivery_timeout = delivery_timeout
        self._given_up = _GivenUp(producer) if producer is not None else None

    async def deliver(
        self, records: Mapping[bytes, bytes | None], renew: Renew, renewed_at: float, lease: float
    ) -> Delivered:
        """Send one round (at most one record per key; a None value is a tombstone) until Kafka
        acknowledges it, keeping its leases renewed (see the module's docstring). `renewed_at`:
        when its leases were last claimed or renewed (time.monotonic(), taken before the call);
        `lease`: RATING_PUBLICATION_LEASE_SECONDS; `renew` renews the leases and returns the keys
        whose lease is not ours."""
        round_ = dict(records)
        lost: set[bytes] = set()
        uncertain_at: float | None = None
        started = time.monotonic()
        every = self.delivery_timeout / 2
        last = renewed_at

        async def keep(bounded: bool) -> None:
            """Renew the round's leases: retried as any call, or, while an attempt is out
            (`bounded`), tried once within half a delivery timeout."""
            nonlocal last
            at = time.monotonic()
            if bounded:
                try:
                    async with asyncio.timeout(every):
                        gone = await renew(list(round_))
                except Exception as e:  # Redis away: the leases run out from their last renewal
                    log.debug("leases not renewed during a publication (%s: %s)", type(e).__name__, e)
                    return
            else:
                gone = await retrying(REDIS_CLAIM, renew, list(round_))
            last = at
            if gone:
                lost.update(gone)
                for key in gone:
                    round_.pop(key, None)

        async def tick() -> None:
            if time.monotonic() - last >= every:
                await keep(bounded=True)

        async def attempt() -> None:
            nonlocal uncertain_at
            if uncertain_at is not None and time.monotonic() - started >= lease:
                raise _GaveUp
            if uncertain_at is not None or time.monotonic() - last >= every:
                await keep(bounded=False)
                if not round_:
                    return
            try:
                clean = await self.attempt(round_, tick, every)
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

        try:
            await retrying(KAFKA_PUBLISH, attempt)
        except _GaveUp:
            log.error(
                "a publication of %d records was not acknowledged within a publication lease (%.0f s): given up for "
                "now; their leases run out, and they are tried again after that",
                len(round_),
                lease,
            )
            return Delivered(frozenset(), frozenset(round_), frozenset(lost), uncertain_at, last + lease + 2 * every)
        return Delivered(frozenset(round_), frozenset(), frozenset(lost), uncertain_at)

    async def attempt(
        self,
        records: Mapping[bytes, bytes | None],
        tick: Callable[[], Awaitable[None]] | None = None,
        every: float = 0.0,
    ) -> bool:
        """One attempt to send a round (`send`), calling `tick` every `every` seconds until the
        client has resolved every batch of it."""
        sending = asyncio.ensure_future(self.send(list(records.items())))
        try:
            while tick is not None:
                done, _ = await asyncio.wait({sending}, timeout=every)
                if done:
                    break
                await tick()
            return await sending
        finally:
            sending.cancel()

    async def send(self, records: Sequence[tuple[bytes, bytes | None]]) -> bool:
        """One attempt: send the records and wait until the client has resolved every batch.
        Raises the first failure once all are resolved; returns False if a request of it was
        given up on and resent by the client (its first copy may still arrive)."""
        given_up = self._given_up
        before = given_up.count if given_up is not None else 0
        partitions = sorted(await self.producer.partitions_for(self.topic))
        by_partition: dict[int, list[tuple[bytes, bytes | None]]] = defaultdict(list)
        for key, value in records:
            by_partition[partition_of(key, partitions)].append((key, value))
        futures: list[asyncio.Future[Any]] = []
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
            # Every batch handed over is waited for, however long the client takes (it resolves
            # each once it sends it no more), also when a later one could not be handed over.
            outcomes = await asyncio.shield(asyncio.gather(*futures, return_exceptions=True))
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return given_up is None or given_up.count == before


_WORD = struct.Struct("<I")
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 of a key (the Java client's `Utils.murmur2`, aiokafka's `murmur2`), its
    4-byte words read at once: the same values, about three times as fast as aiokafka's, whose
    every byte is a few Python operations (tests/unit/stream/test_partition.py compares them)."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    whole = length & ~3
    for (word,) in _WORD.iter_unpack(data[:whole]):
        k = (word * _M) & _MASK
        h = ((h * _M) & _MASK) ^ (((k ^ (k >> 24)) * _M) & _MASK)
    extra = length - whole
    if extra:
        if extra == 3:
            h ^= data[whole + 2] << 16
        if extra >= 2:
            h ^= data[whole + 1] << 8
        h = ((h ^ data[whole]) * _M) & _MASK
    h = ((h ^ (h >> 13)) * _M) & _MASK
    return h ^ (h >> 15)


def partition_of(key: bytes, partitions: Sequence[int]) -> int:
    """The partition Kafka's default partitioner gives a key (`partitions` sorted by id), as
    aiokafka's `DefaultPartitioner` and the Java client compute it."""
    return partitions[(murmur2(key) & 0x7FFFFFFF) % len(partitions)]
