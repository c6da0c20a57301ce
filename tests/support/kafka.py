"""Producing to and reading back from the broker, for the tests: records, committed offsets, partition ends."""

import asyncio
import time
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: dict[str, str]


async def produce(bootstrap: str, topic: str, values: list[bytes], keys: list[bytes | None] | None = None) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
    await producer.start()
    try:
        futures = []
        for i, value in enumerate(values):
            key = None if keys is None else keys[i]
            futures.append(await producer.send(topic, value, key=key))
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def read_topic(bootstrap: str, topic: str, expect: int, timeout: float = 60.0, idle: float = 1.5) -> list[Record]:
    """Every record of `topic`, once at least `expect` arrived and none came for `idle` seconds."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    try:
        await consumer.topics()  # fetches the metadata of every topic
        partitions = consumer.partitions_for_topic(topic) or set()
        consumer.assign([TopicPartition(topic, p) for p in sorted(partitions)])
        await consumer.seek_to_beginning()
        records: list[Record] = []
        deadline = time.monotonic() + timeout
        last = time.monotonic()
        while time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=200)
            for tp, batch in batches.items():
                for r in batch:
                    headers = {k: v.decode() for k, v in (r.headers or ())}
                    records.append(Record(tp.partition, r.offset, r.key, r.value, headers))
                last = time.monotonic()
            if len(records) >= expect and time.monotonic() - last > idle:
                break
        return records
    finally:
        await consumer.stop()


async def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        out = {}
        for p in range(partitions):
            out[p] = await consumer.committed(TopicPartition(topic, p)) or 0
        return out
    finally:
        await consumer.stop()


def ends(records: list[Record]) -> dict[int, int]:
    """Per partition, the offset after its last record (the broker's end_offsets() is wrong on tansu)."""
    end: dict[int, int] = {}
    for r in records:
        end[r.partition] = max(end.get(r.partition, 0), r.offset + 1)
    return end
