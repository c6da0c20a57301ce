"""Reading a topic to its current end, from its beginning or given offsets: restore, rebuild, switch-over;
and the workers' group read (or committed to) without joining it (`group_reader`).

A record the Kafka client cannot hand over (a header key that is not UTF-8, data that does not
decompress: `worker.stream.unreadable`) stops no scan: its partition is read alone up to it, then
from its stored bytes through the batch that holds it; the records the client could have read
come as usual, and each unreadable one is left out with one warning naming topic, partition and
offset, as `run` dead-letters it (`invalid_encoding`) once an operator has its worker go past it.
"""

import contextlib
import logging
from collections.abc import AsyncIterator

from aiokafka import AIOKafkaClient, AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.errors import KafkaError

from worker.service.connections import close_quietly, kafka_options
from worker.settings import WorkerSettings
from worker.stream import unreadable
from worker.stream.retry import KAFKA_CONNECT, KAFKA_READ, retrying

log = logging.getLogger(__name__)
FETCH_TIMEOUT_MS = 500
ISOLATE_RECORDS = 10_000  # records of one partition read alone at a time, after a fetch the client could not read


@contextlib.asynccontextmanager
async def group_reader(settings: WorkerSettings, group: str | None = None) -> AsyncIterator[AIOKafkaConsumer]:
    """A started consumer with the workers' group id (or `group`: the close follower's) that never
    joins the group: `committed` needs no membership, and a commit of partitions assigned by hand
    is one a group with members refuses."""
    consumer = AIOKafkaConsumer(
        **kafka_options(settings), group_id=group or settings.kafka_group_id, enable_auto_commit=False
    )
    try:
        await retrying(KAFKA_CONNECT, consumer.start)
        yield consumer
    finally:
        await close_quietly(consumer.stop())


async def scan(
    settings: WorkerSettings, topic: str, start: dict[int, int] | None = None
) -> AsyncIterator[list[ConsumerRecord]]:
    """Batches of `topic`'s records, partition by partition as fetched, up to each partition's end,
    from the offsets in `start` (partition -> offset; the beginning for any other partition).

    No consumer group: nothing is committed. The end of a partition is its highwater as the
    fetches report it, not `end_offsets()` (wrong on some Kafka-compatible brokers); records
    produced while the scan runs may or may not be included.
    """
    consumer = AIOKafkaConsumer(**kafka_options(settings), enable_auto_commit=False, auto_offset_reset="earliest")
    raw: AIOKafkaClient | None = None  # for the stored bytes of records the consumer cannot hand over
    try:
        await retrying(KAFKA_CONNECT, consumer.start)
        await retrying(KAFKA_READ, consumer.topics)
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*[tp for tp in tps if tp.partition not in (start or {})])
        for tp in tps:
            if start and tp.partition in start:
                consumer.seek(tp, start[tp.partition])
        read_to = {tp: await consumer.position(tp) for tp in tps}  # what has been handed on
        pending = set(tps)
        while pending:
            try:
                fetched = await consumer.getmany(*pending, timeout_ms=FETCH_TIMEOUT_MS)
            except Exception as e:
                if not unreadable.client_cannot_read(e):
                    raise
                found = await unreadable.isolate(consumer, {tp: read_to[tp] for tp in sorted(pending)}, ISOLATE_RECORDS)
                fetched = found.records
                for tp, stuck in found.stuck.items():
                    if raw is None:
                        raw = AIOKafkaClient(**kafka_options(settings))
                        await retrying(KAFKA_CONNECT, raw.bootstrap)
                    way = await _read_past(raw, tp, stuck)
                    fetched[tp] = fetched.get(tp, []) + way.readable
                    consumer.seek(tp, way.end)
                    read_to[tp] = way.end
            for tp, batch in fetched.items():
                if batch:
                    read_to[tp] = max(read_to[tp], batch[-1].offset + 1)
                    yield batch
            for tp in list(pending):
                highwater = consumer.highwater(tp)
                if highwater is not None and await consumer.position(tp) >= highwater:
                    pending.discard(tp)
    finally:
        await close_quietly(consumer.stop(), *([raw.close()] if raw is not None else []))


async def _read_past(client: AIOKafkaClient, tp: TopicPartition, stuck: unreadable.Stuck) -> unreadable.Passage:
    """The partition's records from `stuck`'s offset through the batch holding the unreadable one
    (read from their bytes), each unreadable one named in a warning."""
    way = await retrying(KAFKA_READ, unreadable.read_passage, client, tp, stuck.offset)
    if way is None:
        raise KafkaError(
            f"{tp.topic} partition {tp.partition} offset {stuck.offset}: the Kafka client cannot read on from there "
            f"({stuck.error}), and the broker returns no record there either"
        )
    for u in way.unreadable:
        log.warning(
            "%s partition %d offset %d: %s; left out, as `run` dead-letters it (invalid_encoding) once "
            "`rating-worker dead-letter-unreadable` has its worker go past it",
            tp.topic,
            tp.partition,
            u.offset,
            u.message,
            extra={"partition": tp.partition, "offset": u.offset},
        )
    return way
