"""Publication of rating events and dead letters, acknowledged by Kafka (acks=all).

Outboxes are sent in rounds (see `worker.stream.pipeline`): round r holds the r-th unconfirmed
event of every claimed rating, so event n+1 of a key is sent only after event n was
acknowledged. A round is
grouped by partition (murmur2 of the key, as every Kafka client partitions) and sent with
`send_batch`, one produce request per partition rather than one `send()` per event.
"""

import asyncio
from collections import defaultdict
from collections.abc import Sequence

from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import DefaultPartitioner

from worker.stream.retry import KAFKA_PUBLISH, retrying


class Publisher:
    def __init__(self, producer: AIOKafkaProducer, topic: str, delivery_timeout: float) -> None:
        self.producer = producer
        self.topic = topic
        self.delivery_timeout = delivery_timeout
        self.partitioner = DefaultPartitioner()

    async def send(self, records: Sequence[tuple[bytes, bytes]]) -> None:
        """Send one round (at most one event per key) and wait until Kafka acknowledges all of it."""
        await retrying(KAFKA_PUBLISH, self._send, records)

    async def _send(self, records: Sequence[tuple[bytes, bytes]]) -> None:
        partitions = sorted(await self.producer.partitions_for(self.topic))
        by_partition: dict[int, list[tuple[bytes, bytes]]] = defaultdict(list)
        for key, value in records:
            by_partition[self.partitioner(key, partitions, partitions)].append((key, value))
        futures = []
        for partition, batch_records in by_partition.items():
            batch = self.producer.create_batch()
            for key, value in batch_records:
                if batch.append(key=key, value=value, timestamp=None) is None:
                    futures.append(await self.producer.send_batch(batch, self.topic, partition=partition))
                    batch = self.producer.create_batch()
                    batch.append(key=key, value=value, timestamp=None)
            futures.append(await self.producer.send_batch(batch, self.topic, partition=partition))
        async with asyncio.timeout(self.delivery_timeout):
            await asyncio.gather(*futures)
