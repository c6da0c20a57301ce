"""Records the Kafka client cannot hand over, and the way past them.

aiokafka's `getmany` raises, instead of returning records, when a batch it fetched holds a record
it cannot decode: a header key that is not UTF-8 (Kafka's protocol allows any bytes; aiokafka
decodes every key as UTF-8 while it iterates the batch), data that does not decompress, a
CRC that does not match. It does so again on every call, the records before it in the same fetch
are not handed over, and those of other partitions drained in the same call are lost to the
caller. Measured with aiokafka 0.14 on a `\\xff\\xfe` header key in the middle of a batch: the
records before it come one at a time (`max_records=1`), the position then stops at it; a seek
past it raises again (the client decodes its whole batch from the start), so the records after
it in the same batch cannot come through the client at all.

So, for the worker (`worker.stream.consumer`) and the topic scans of `rebuild` and `restore`
(`worker.operate.topic_scan`):

1. `isolate`: each partition is read alone from where the caller had got to; a partition that
   still fails is read a record at a time, so that every record before the unreadable one is
   handed over, and is left positioned at it (`Stuck`). Nothing is skipped: the other
   partitions' records come back to be processed as usual.
2. `fetch_raw` and `passage`: the partition's bytes from that offset, read by this project's own
   reader (`worker.stream.record_batch`), up to the end of the batch that holds the first
   unreadable record: the records the client could have read (to be processed as usual) and
   the unreadable ones (to be dead-lettered `invalid_encoding`, original key and value, the
   header keys that are not UTF-8 hex-escaped in `error.message`).

The worker pauses a stuck partition and does step 2 only on an operator's instruction
(`rating-worker dead-letter-unreadable`, through Redis: `instruct` and `report`): a record the
client cannot read is not always bad (a codec library missing from the image is fixed by a
new image), so the way past it is an operator's choice, taken by the worker that holds the
partition, inside its consumer group, where Kafka accepts its commits.
"""

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from aiokafka import AIOKafkaClient, AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.errors import CorruptRecordException, KafkaError, UnsupportedCodecError
from aiokafka.protocol.fetch import FetchRequest
from redis.asyncio import Redis

from worker.store import keys
from worker.stream.record_batch import RawBatch, RawRecord, batches

log = logging.getLogger(__name__)

# How long a partition read alone may wait for its records: they are on the broker, which answers
# a fetch at once when it has records (the wait applies to an idle partition), and the first
# fetch after the seeks brings every partition of a broker. One that misses it is read by the next
# `getmany` as usual; 0.5 s per idle partition holds the others up for a few seconds at most, once.
ISOLATE_TIMEOUT_MS = 500
# The raw read of one partition from one offset: Kafka returns at least the whole first batch
# even when it is larger (KIP-74), so this bounds only how many batches after it come along.
RAW_FETCH_BYTES = 1024 * 1024
RAW_FETCH_WAIT_MS = 500  # some brokers answer a fetch that may not wait with nothing at all
INSTRUCTION_TTL_SECONDS = 86400  # a report waits a day for the command that asked for it

PASS = "pass"
DONE = "done"


def client_cannot_read(error: BaseException) -> bool:
    """Whether `getmany` raised `error` over a record it could not decode (as opposed to a request
    the broker refused, or the consumer stopped): the Kafka errors of a record's bytes, and any
    error that is not a Kafka error (UnicodeDecodeError of a header key, a codec library's own)."""
    if isinstance(error, (UnsupportedCodecError, CorruptRecordException)):
        return True
    return isinstance(error, Exception) and not isinstance(error, KafkaError)


@dataclass(frozen=True, slots=True)
class Stuck:
    """A partition the client cannot read on from `offset` (its position now)."""

    offset: int
    error: str  # the client's error, in one line


@dataclass
class Isolated:
    records: dict[TopicPartition, list[ConsumerRecord]] = field(default_factory=dict)
    stuck: dict[TopicPartition, Stuck] = field(default_factory=dict)


async def isolate(
    consumer: AIOKafkaConsumer,
    starts: dict[TopicPartition, int],
    max_records: int,
    timeout_ms: int = ISOLATE_TIMEOUT_MS,
) -> Isolated:
    """After `getmany` raised over a record it could not read (`client_cannot_read`): each of
    `starts`' partitions is positioned at its start (where its caller had got to) and read
    alone. A partition that fails again is read from its start a record at a time, up to
    `max_records`, and is `stuck` if it fails before then: positioned at the record it cannot
    read, every record before it in `records`."""
    found = Isolated()
    for tp, offset in starts.items():
        consumer.seek(tp, offset)
    for tp, offset in starts.items():
        try:
            got = await consumer.getmany(tp, timeout_ms=timeout_ms, max_records=max_records)
        except Exception as e:
            if not client_cannot_read(e):
                raise
            consumer.seek(tp, offset)
            records, error = await _one_at_a_time(consumer, tp, max_records, timeout_ms)
            if records:
                found.records[tp] = records
            if error is not None:
                found.stuck[tp] = Stuck(await consumer.position(tp), one_line(error))
            continue
        if got.get(tp):
            found.records[tp] = got[tp]
    return found


async def _one_at_a_time(
    consumer: AIOKafkaConsumer, tp: TopicPartition, max_records: int, timeout_ms: int
) -> tuple[list[ConsumerRecord], BaseException | None]:
    records: list[ConsumerRecord] = []
    while len(records) < max_records:
        try:
            got = await consumer.getmany(tp, timeout_ms=timeout_ms, max_records=1)
        except Exception as e:
            if not client_cannot_read(e):
                raise
            return records, e
        if not got.get(tp):
            return records, None  # it did not fail again this time
        records += got[tp]
    return records, None


def one_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {' '.join(str(error).split())}"


async def fetch_raw(client: AIOKafkaClient, tp: TopicPartition, offset: int) -> bytes:
    """The partition's stored batches from the one holding `offset`, as bytes (b"" if none came)."""
    await client.force_metadata_update()
    leader = client.cluster.leader_for_partition(tp)
    if leader is None or leader < 0:
        raise KafkaError(f"no leader known for {tp.topic} partition {tp.partition}")
    request = FetchRequest(
        RAW_FETCH_WAIT_MS, 1, RAW_FETCH_BYTES, 0, [(tp.topic, [(tp.partition, offset, RAW_FETCH_BYTES)])]
    )
    response = await client.send(leader, request)
    for _, partitions in response.topics:
        for partition, error_code, _highwater, *data in partitions:
            if partition != tp.partition:
                continue
            if error_code:
                raise KafkaError(f"fetching {tp.topic} partition {tp.partition} at {offset}: error code {error_code}")
            raw: bytes = data[-1] or b""
            return raw
    return b""


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A record (or a whole batch) the client cannot hand over, as its dead letter copies it."""

    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[tuple[str, bytes], ...]  # those whose key is UTF-8 (the others are in `message`)
    message: str


@dataclass
class Passage:
    """From `start` to `end` (exclusive) of one partition: what the client could have read, in
    order, and what it cannot."""

    start: int
    end: int
    readable: list[ConsumerRecord] = field(default_factory=list)
    unreadable: list[Unreadable] = field(default_factory=list)

    def describe(self) -> str:
        offsets = ", ".join(str(u.offset) for u in self.unreadable)
        n = len(self.unreadable)
        return (
            f"{n} unreadable record{'s' if n != 1 else ''} dead-lettered (offset{'s' if n != 1 else ''} {offsets}), "
            f"{len(self.readable)} readable record{'s' if len(self.readable) != 1 else ''} around "
            f"{'them' if n != 1 else 'it'} handed on; offsets {self.start}-{self.end - 1} done"
        )


def passage(tp: TopicPartition, start: int, stored: Iterable[RawBatch]) -> Passage | None:
    """The records from `start` through the batch holding the first unreadable one (all the
    batches given, if none is); None if none reaches `start`."""
    way = Passage(start, start)
    for batch in stored:
        if batch.next_offset <= start:
            continue
        way.end = batch.next_offset
        if batch.problem is not None:
            first = max(batch.base_offset, start)
            way.unreadable.append(
                Unreadable(
                    first,
                    None,
                    batch.raw,
                    0,
                    (),
                    f"the record batch at offsets {batch.base_offset}-{batch.last_offset} cannot be read: "
                    f"{batch.problem}; the value is the whole batch as stored (its records from offset {first} on "
                    "were not handed on)",
                ),
            )
            return way
        for record in batch.records:
            if record.offset < start:
                continue
            bad = record.bad_header_keys()
            if bad:
                way.unreadable.append(_unreadable(record, bad))
            else:
                way.readable.append(_consumer_record(tp, record))
        if way.unreadable:
            return way
    return way if way.end > start else None


def hex_escaped(key: bytes | None) -> str:
    """A header key as text: its UTF-8, each byte that is not UTF-8 as \\xNN; None as `null`."""
    if key is None:
        return "null"
    return "'" + key.decode("utf-8", "backslashreplace") + "'"


def _unreadable(record: RawRecord, bad: Sequence[bytes | None]) -> Unreadable:
    kept = tuple((k.decode(), v or b"") for k, v in record.headers if k is not None and k not in bad)
    names = ", ".join(hex_escaped(k) for k in bad)
    plural = "s" if len(bad) != 1 else ""
    message = (
        f"header key{plural} {names} {'are' if plural else 'is'} not UTF-8: the Kafka client cannot read the record "
        f"(its {len(kept)} other header{'s' if len(kept) != 1 else ''} kept)"
    )
    return Unreadable(record.offset, record.key, record.value, record.timestamp, kept, message)


def _consumer_record(tp: TopicPartition, record: RawRecord) -> ConsumerRecord:
    headers = tuple((k.decode(), v) for k, v in record.headers if k is not None)
    return ConsumerRecord(
        tp.topic,
        tp.partition,
        record.offset,
        record.timestamp,
        record.timestamp_type,
        record.key,
        record.value,
        None,
        -1 if record.key is None else len(record.key),
        -1 if record.value is None else len(record.value),
        headers,
    )


async def read_passage(client: AIOKafkaClient, tp: TopicPartition, start: int) -> Passage | None:
    """`passage` of the partition's stored bytes from `start`."""
    return passage(tp, start, batches(await fetch_raw(client, tp, start)))


# --- The operator's instruction, through Redis (`rating-worker dead-letter-unreadable`).


async def instruct(redis: "Redis", prefix: str, tp: TopicPartition, offset: int) -> None:
    """Ask the worker paused at `offset` of `tp` to take its way past (kept until one does)."""
    await redis.set(keys.unreadable_key(prefix, tp.topic, tp.partition), f"{PASS} {offset}")


async def instructed(redis: "Redis", prefix: str, paused: dict[TopicPartition, int]) -> list[TopicPartition]:
    """Of the `paused` partitions (-> their offset), those an operator asked to pass at that offset."""
    ordered = sorted(paused)
    values = await redis.mget([keys.unreadable_key(prefix, tp.topic, tp.partition) for tp in ordered])
    return [tp for tp, value in zip(ordered, values, strict=True) if value == f"{PASS} {paused[tp]}".encode()]


async def report(redis: "Redis", prefix: str, tp: TopicPartition, offset: int, what: str) -> None:
    await redis.set(
        keys.unreadable_key(prefix, tp.topic, tp.partition), f"{DONE} {offset}: {what}", ex=INSTRUCTION_TTL_SECONDS
    )


async def reported(redis: "Redis", prefix: str, tp: TopicPartition, offset: int) -> str | None:
    """The worker's report on the instruction at `offset`, once it is done (then removed)."""
    key = keys.unreadable_key(prefix, tp.topic, tp.partition)
    value = await redis.get(key)
    text = value.decode(errors="replace") if isinstance(value, bytes) else value
    done = f"{DONE} {offset}: "
    if text is None or not text.startswith(done):
        return None
    await redis.delete(key)
    return str(text[len(done) :])
