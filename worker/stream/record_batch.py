"""Kafka's record batches (message format v2) read from their bytes, for the records that the
Kafka client cannot hand over (`worker.stream.unreadable`).

aiokafka decodes every header key as UTF-8 while it iterates a batch, so one record with a key
that is not (the protocol allows any bytes) makes the whole batch unreadable through it, the
records before it in the same fetch included. This reader takes header keys as bytes, and says
of each record whether the client could read it; it decompresses with aiokafka's own codecs
(gzip, snappy, lz4, zstd). A batch it cannot read whole (a CRC that does not match, a codec
unknown or data that does not decompress, an older message format, bytes that do not parse)
is returned with its reason and its raw bytes instead of records.

Format (Kafka's `DefaultRecordBatch`): base offset int64, length int32, partition leader epoch
int32, magic int8, CRC uint32 (CRC-32C of everything after it), attributes int16 (codec in bits
0-2, timestamp type bit 3, transactional bit 4, control bit 5), last offset delta int32, base and
max timestamps int64, producer id int64, producer epoch int16, base sequence int32, record count
int32, then the records (compressed together, after the count, when a codec is set). A record:
length, attributes int8, timestamp delta, offset delta, key, value (each a varint length, -1
for null, then the bytes), header count, then per header a key and a value the same way.
"""

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from aiokafka import codec
from aiokafka.record.util import calc_crc32c

HEADER = struct.Struct(">qiibIhiqqqhii")  # a batch's fields up to the record count (61 bytes)
LENGTH_END = 12  # base offset and length: the batch's length counts the bytes after them
CRC_END = 21  # the CRC covers the bytes from here (the attributes) to the end of the batch
CODEC_MASK, LOG_APPEND_TIME, CONTROL = 0x07, 0x08, 0x20
CODECS = {1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


class Malformed(ValueError):
    """Bytes that do not parse as the format says."""


@dataclass(frozen=True, slots=True)
class RawRecord:
    offset: int
    timestamp: int  # ms
    timestamp_type: int  # 0 CreateTime, 1 LogAppendTime (as aiokafka numbers them)
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[bytes | None, bytes | None], ...]  # keys as bytes, as stored

    def bad_header_keys(self) -> list[bytes | None]:
        """The header keys the Kafka client cannot read: null, or not UTF-8."""
        bad = []
        for key, _ in self.headers:
            try:
                if key is None:
                    raise UnicodeError
                key.decode("utf-8")
            except UnicodeError:
                bad.append(key)
        return bad


@dataclass(frozen=True, slots=True)
class RawBatch:
    base_offset: int
    last_offset: int
    control: bool  # a transaction marker: no input record
    records: tuple[RawRecord, ...]
    problem: str | None = None  # why its records cannot be read (then `records` is empty)
    raw: bytes = b""  # the batch's bytes, kept only when it has a problem

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


def batches(data: bytes) -> Iterator[RawBatch]:
    """The whole batches of a fetch response's records (a partial last batch, which a fetch may
    end with, is left out)."""
    at = 0
    while at + LENGTH_END <= len(data):
        base, length = struct.unpack_from(">qi", data, at)
        end = at + LENGTH_END + length
        if length < 0 or end > len(data):
            return
        yield _batch(base, memoryview(data)[at:end])
        at = end


def _batch(base: int, raw: memoryview) -> RawBatch:
    magic = raw[16] if len(raw) > 16 else -1
    if magic != 2 or len(raw) < HEADER.size:
        # Message format v0 or v1 (Kafka before 0.11) keeps one offset per (wrapper) message.
        return RawBatch(base, base, False, (), f"message format v{magic} is not read here", bytes(raw))
    (_, _, _, _, crc, attributes, last_delta, first_ts, max_ts, _, _, _, count) = HEADER.unpack_from(raw)
    last = base + last_delta

    def failed(problem: str) -> RawBatch:
        return RawBatch(base, last, False, (), problem, bytes(raw))

    if calc_crc32c(bytes(raw[CRC_END:])) != crc:
        return failed("its CRC does not match its bytes (corrupt)")
    if attributes & CONTROL:
        return RawBatch(base, last, True, ())
    body = bytes(raw[HEADER.size :])
    kind = attributes & CODEC_MASK
    if kind:
        name = CODECS.get(kind)
        if name is None:
            return failed(f"compression codec {kind} is not one Kafka defines")
        try:
            body = _decompress(name, body)
        except Exception as e:  # each codec's library raises its own errors
            return failed(f"its {name} data does not decompress ({type(e).__name__}: {e})")
    log_append = bool(attributes & LOG_APPEND_TIME)
    try:
        records = tuple(_records(body, count, base, first_ts, max_ts if log_append else None))
    except (Malformed, IndexError, struct.error) as e:
        return failed(f"its records do not parse ({e or type(e).__name__})")
    return RawBatch(base, last, False, records)


def _decompress(name: str, data: bytes) -> bytes:
    decompressed: bytes
    if name == "gzip":
        decompressed = codec.gzip_decode(data)
    elif name == "snappy":
        decompressed = codec.snappy_decode(data)
    elif name == "lz4":
        decompressed = codec.lz4_decode(data)
    else:
        decompressed = codec.zstd_decode(data)
    return bytes(decompressed)


def _records(body: bytes, count: int, base: int, first_ts: int, log_append_ts: int | None) -> Iterator[RawRecord]:
    at = 0
    for _ in range(count):
        length, at = _varint(body, at)
        end = at + length
        if length < 0 or end > len(body):
            raise Malformed(f"a record of {length} bytes overruns its batch")
        at += 1  # the record's attributes: unused
        ts_delta, at = _varint(body, at)
        offset_delta, at = _varint(body, at)
        key, at = _bytes(body, at)
        value, at = _bytes(body, at)
        header_count, at = _varint(body, at)
        if header_count < 0:
            raise Malformed(f"a record has {header_count} headers")
        headers = []
        for _ in range(header_count):
            header_key, at = _bytes(body, at)
            header_value, at = _bytes(body, at)
            headers.append((header_key, header_value))
        if at != end:
            raise Malformed("a record's fields do not add up to its length")
        if log_append_ts is None:
            yield RawRecord(base + offset_delta, first_ts + ts_delta, 0, key, value, tuple(headers))
        else:
            yield RawRecord(base + offset_delta, log_append_ts, 1, key, value, tuple(headers))


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """A zigzag-encoded variable-length integer at `at`, and where the next field starts."""
    shift = value = 0
    while True:
        if at >= len(data):
            raise Malformed("a number runs past the end of its batch")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), at
        shift += 7
        if shift > 63:
            raise Malformed("a number longer than 64 bits")


def _bytes(data: bytes, at: int) -> tuple[bytes | None, int]:
    length, at = _varint(data, at)
    if length < 0:
        return None, at
    if at + length > len(data):
        raise Malformed("a field runs past the end of its record")
    return data[at : at + length], at + length
