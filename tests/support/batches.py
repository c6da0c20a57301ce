"""Input as other producers write it, for the tests: batches compressed by another client, and
records whose header keys are bytes that are not UTF-8 (which Kafka's protocol allows and
aiokafka cannot read).

- `produce_compressed`: confluent-kafka (librdkafka, a client independent of aiokafka) with
  `compression.type` gzip, snappy, lz4 or zstd.
- `produce_raw_batch`: one record batch built by aiokafka's own encoder with placeholder header
  keys, then the placeholders replaced by the wanted bytes and the batch's CRC recomputed, sent
  in a plain Produce request.
- `batch_codecs`: the codec of each record batch stored in a partition, read from the batches'
  own attributes in a plain Fetch request.
"""

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

from aiokafka import AIOKafkaClient, TopicPartition
from aiokafka.protocol.fetch import FetchRequest
from aiokafka.protocol.produce import ProduceRequest
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.util import calc_crc32c
from confluent_kafka import Producer

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CRC_AT, ATTRIBUTES_AT = 17, 21  # in a record batch v2: its CRC, then what the CRC covers
NOT_UTF8 = b"\xff\xfe"  # the header key of the audit's reproduction


def produce_compressed(
    bootstrap: str, topic: str, partition: int, values: Sequence[bytes], codec: str, linger_ms: int = 200
) -> None:
    """`values` to one partition, in order, in batches compressed with `codec` by confluent-kafka."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": codec,
            "linger.ms": linger_ms,
            "acks": "all",
            "enable.idempotence": False,
            "max.in.flight.requests.per.connection": 1,  # in order
        }
    )
    failures: list[str] = []

    def delivered(error: object, _message: object) -> None:
        if error is not None:
            failures.append(str(error))

    for value in values:
        producer.produce(topic, value=value, partition=partition, on_delivery=delivered)
    left = producer.flush(30)
    assert left == 0 and not failures, f"{left} records not delivered; errors: {failures[:3]}"


@dataclass(frozen=True)
class RawRecord:
    value: bytes | None
    key: bytes | None = None
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)  # keys as bytes, UTF-8 or not


def raw_batch(records: Sequence[RawRecord]) -> bytes:
    """One uncompressed record batch v2 of `records`, header keys written as the bytes given."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    placeholders: dict[bytes, bytes] = {}
    for delta, record in enumerate(records):
        headers = []
        for key, value in record.headers:
            try:
                headers.append((key.decode(), value))
            except UnicodeDecodeError:
                # A key of the same length made of bytes no other part of the test's batch holds.
                placeholder = bytes([1 + len(placeholders)]) * len(key)
                placeholders[placeholder] = key
                headers.append((placeholder.decode(), value))
        builder.append(delta, timestamp=None, key=record.key, value=record.value, headers=headers)
    raw = bytes(builder.build())
    for placeholder, key in placeholders.items():
        assert raw.count(placeholder) == 1, "a placeholder header key is not unique in the batch"
        raw = raw.replace(placeholder, key)
    return raw[:CRC_AT] + struct.pack(">I", calc_crc32c(raw[ATTRIBUTES_AT:])) + raw[ATTRIBUTES_AT:]


async def produce_raw_batch(bootstrap: str, topic: str, partition: int, records: Sequence[RawRecord]) -> int:
    """`records` as one batch on the partition, acknowledged by all replicas; its base offset."""
    client = AIOKafkaClient(bootstrap_servers=bootstrap)
    await client.bootstrap()
    try:
        await client.force_metadata_update()
        leader = client.cluster.leader_for_partition(TopicPartition(topic, partition))
        request = ProduceRequest(None, -1, 10_000, [(topic, [(partition, raw_batch(records))])])
        response = await client.send(leader, request)
        ((_, ((_, error, offset, *_),)),) = response.topics
        assert error == 0, f"the broker refused the batch: error {error}"
        return int(offset)
    finally:
        await client.close()


async def batch_codecs(bootstrap: str, topic: str, partition: int) -> list[int]:
    """The codec (`CODECS`' numbers) of each record batch of the partition, from its beginning."""
    client = AIOKafkaClient(bootstrap_servers=bootstrap)
    await client.bootstrap()
    codecs: list[int] = []
    try:
        await client.force_metadata_update()
        leader = client.cluster.leader_for_partition(TopicPartition(topic, partition))
        offset = 0
        while True:
            # Some brokers answer a fetch that may not wait with no partition at all: it waits up to 0.5 s.
            request = FetchRequest(500, 1, 1 << 20, 0, [(topic, [(partition, offset, 1 << 20)])])
            response = await client.send(leader, request)
            if not response.topics:
                return codecs
            ((_, ((_, error, highwater, *data),)),) = response.topics
            assert error == 0, f"the broker refused the fetch: error {error}"
            raw: bytes = data[-1] or b""
            at = 0
            while at + ATTRIBUTES_AT + 2 <= len(raw):
                base, length = struct.unpack_from(">qi", raw, at)
                if at + 12 + length > len(raw):
                    break
                (attributes,) = struct.unpack_from(">h", raw, at + ATTRIBUTES_AT)
                (last_delta,) = struct.unpack_from(">i", raw, at + ATTRIBUTES_AT + 2)
                codecs.append(attributes & 0x07)
                offset = base + last_delta + 1
                at += 12 + length
            if offset >= highwater or at == 0:
                return codecs
    finally:
        await client.close()
