"""Reading a topic to its current end, from its beginning or given offsets: restore, rebuild, switch-over."""

from collections.abc import AsyncIterator

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from worker.service.connections import close_quietly, kafka_options
from worker.settings import WorkerSettings
from worker.stream.retry import KAFKA_CONNECT, KAFKA_READ, retrying

FETCH_TIMEOUT_MS = 500


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
    try:
        await retrying(KAFKA_CONNECT, consumer.start)
        await retrying(KAFKA_READ, consumer.topics)
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*[tp for tp in tps if tp.partition not in (start or {})])
        for tp in tps:
            if start and tp.partition in start:
                consumer.seek(tp, start[tp.partition])
        pending = set(tps)
        while pending:
            for batch in (await consumer.getmany(*pending, timeout_ms=FETCH_TIMEOUT_MS)).values():
                yield batch
            for tp in list(pending):
                highwater = consumer.highwater(tp)
                if highwater is not None and await consumer.position(tp) >= highwater:
                    pending.discard(tp)
    finally:
        await close_quietly(consumer.stop())
