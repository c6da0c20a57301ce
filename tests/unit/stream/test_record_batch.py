"""The reader of stored record batches (`worker.stream.record_batch`) and the way past an
unreadable record (`worker.stream.unreadable.passage`), on batches built by aiokafka's own encoder
(an independent writer of the format), with every codec."""

import struct

from aiokafka import TopicPartition
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.util import calc_crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.batches import NOT_UTF8, RawRecord, raw_batch
from worker.stream import unreadable
from worker.stream.record_batch import RawBatch, batches

TP = TopicPartition("games", 3)
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

Written = tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]


def built(records: list[Written], codec: str = "none", base: int = 0, timestamp: int = 1_700_000_000_000) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=CODECS[codec],
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 22,
    )
    for delta, (key, value, headers) in enumerate(records):
        builder.append(delta, timestamp=timestamp + 7 * delta, key=key, value=value, headers=headers)
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 0, base)  # the broker assigns the base offset
    return bytes(raw)


def read(data: bytes) -> list[RawBatch]:
    return list(batches(data))


def test_every_codec_reads_back_what_aiokafka_wrote() -> None:
    records: list[Written] = [
        (b"k1", b'{"game_id":"g1"}', [("trace", b"t-1"), ("empty", b"")]),
        (None, b"second", []),
        (b"k3", None, [("x", b"\x00\xff")]),
    ]
    for codec in CODECS:
        (batch,) = read(built(records, codec, base=40))
        assert batch.problem is None, (codec, batch.problem)
        assert (batch.base_offset, batch.last_offset, batch.control) == (40, 42, False)
        got = [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers) for r in batch.records]
        assert got == [
            (40, 1_700_000_000_000, 0, b"k1", b'{"game_id":"g1"}', ((b"trace", b"t-1"), (b"empty", b""))),
            (41, 1_700_000_000_007, 0, None, b"second", ()),
            (42, 1_700_000_000_014, 0, b"k3", None, ((b"x", b"\x00\xff"),)),
        ], codec


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.none() | st.binary(max_size=40),
            st.none() | st.binary(max_size=300),
            st.lists(st.tuples(st.text(max_size=12), st.binary(max_size=20)), max_size=3),
        ),
        min_size=1,
        max_size=20,
    ),
    st.sampled_from(sorted(CODECS)),
)
def test_any_records_read_back_as_written(records: list[Written], codec: str) -> None:
    (batch,) = read(built(records, codec, base=5))
    assert batch.problem is None
    assert [(r.offset, r.key, r.value) for r in batch.records] == [(5 + i, k, v) for i, (k, v, _) in enumerate(records)]
    assert [r.headers for r in batch.records] == [tuple((k.encode(), v) for k, v in h) for _, _, h in records]
    assert all(not r.bad_header_keys() for r in batch.records)


def test_a_header_key_that_is_not_utf8_is_read_and_named() -> None:
    raw = raw_batch([RawRecord(b"a"), RawRecord(b"b", b"k", [(b"ok", b"1"), (NOT_UTF8, b"v")]), RawRecord(b"c")])
    (batch,) = read(raw)
    assert batch.problem is None
    assert [r.bad_header_keys() for r in batch.records] == [[], [NOT_UTF8], []]
    assert batch.records[1].headers == ((b"ok", b"1"), (NOT_UTF8, b"v"))


def test_a_corrupt_crc_an_unknown_codec_and_an_old_format_are_problems_with_the_raw_bytes() -> None:
    good = built([(b"k", b"v", [])], base=7)
    corrupt = good[:-1] + bytes([good[-1] ^ 0xFF])
    (batch,) = read(corrupt)
    assert batch.problem is not None and "CRC" in batch.problem and batch.raw == corrupt
    assert (batch.base_offset, batch.last_offset, batch.records) == (7, 7, ())

    unknown = bytearray(good)
    (attributes,) = struct.unpack_from(">h", unknown, 21)
    struct.pack_into(">h", unknown, 21, attributes | 0x05)
    struct.pack_into(">I", unknown, 17, calc_crc32c(bytes(unknown[21:])))
    (batch,) = read(bytes(unknown))
    assert batch.problem == "compression codec 5 is not one Kafka defines"

    old = bytearray(good)
    old[16] = 1
    (batch,) = read(bytes(old))
    assert batch.problem == "message format v1 is not read here"


def test_lz4_data_that_does_not_decompress_is_a_problem() -> None:
    raw = bytearray(built([(b"k", b"v" * 200, [])], "lz4"))
    raw[70:80] = b"\x00" * 10
    struct.pack_into(">I", raw, 17, calc_crc32c(bytes(raw[21:])))
    (batch,) = read(bytes(raw))
    assert batch.problem is not None and batch.problem.startswith("its lz4 data does not decompress"), batch.problem


def test_a_fetch_ending_in_a_partial_batch_gives_the_whole_ones() -> None:
    first, second = built([(None, b"1", [])], base=0), built([(None, b"2", [])], base=1)
    assert [b.base_offset for b in read(first + second[:-3])] == [0]
    assert [b.base_offset for b in read(first + second)] == [0, 1]


def test_a_log_append_time_batch_gives_each_record_the_batch_timestamp() -> None:
    raw = bytearray(built([(None, b"1", []), (None, b"2", [])], base=0))
    (attributes,) = struct.unpack_from(">h", raw, 21)
    struct.pack_into(">h", raw, 21, attributes | 0x08)
    struct.pack_into(">q", raw, 35, 1_800_000_000_000)  # the max timestamp: the broker's append time
    struct.pack_into(">I", raw, 17, calc_crc32c(bytes(raw[21:])))
    (batch,) = read(bytes(raw))
    assert [(r.timestamp, r.timestamp_type) for r in batch.records] == [(1_800_000_000_000, 1)] * 2


def test_a_passage_hands_on_the_readable_records_and_stops_after_the_batch_of_the_unreadable_one() -> None:
    first = built([(None, b"g0", []), (None, b"g1", [])], base=0)
    bad = [RawRecord(b"g2"), RawRecord(b"g3", b"key", [(b"t", b"1"), (NOT_UTF8, b"v")]), RawRecord(b"g4")]
    middle = bytearray(raw_batch(bad))
    struct.pack_into(">q", middle, 0, 2)
    last = built([(None, b"g5", [])], base=5)
    stored = read(first + bytes(middle) + last)

    way = unreadable.passage(TP, 1, stored)
    assert way is not None
    assert (way.start, way.end) == (1, 5)
    assert [(r.topic, r.partition, r.offset, r.value) for r in way.readable] == [
        ("games", 3, 1, b"g1"),
        ("games", 3, 2, b"g2"),
        ("games", 3, 4, b"g4"),
    ]
    (u,) = way.unreadable
    assert (u.offset, u.key, u.value, u.headers) == (3, b"key", b"g3", (("t", b"1"),))
    assert "'\\xff\\xfe'" in u.message and "not UTF-8" in u.message
    assert way.describe() == (
        "1 unreadable record dead-lettered (offset 3), 3 readable records around it handed on; offsets 1-4 done"
    )
    assert unreadable.passage(TP, 5, stored) is not None
    assert unreadable.passage(TP, 6, stored) is None


def test_a_batch_that_cannot_be_read_passes_as_one_dead_letter_of_its_bytes() -> None:
    good = built([(b"k", b"v", []), (b"k", b"w", [])], base=10)
    corrupt = good[:-1] + bytes([good[-1] ^ 0xFF])
    way = unreadable.passage(TP, 11, read(corrupt))
    assert way is not None and way.readable == [] and (way.start, way.end) == (11, 12)
    (u,) = way.unreadable
    assert (u.offset, u.key, u.value) == (11, None, corrupt)
    assert u.message.startswith("the record batch at offsets 10-11 cannot be read: its CRC does not match")


def test_hex_escaping_keeps_utf8_and_escapes_the_rest() -> None:
    assert unreadable.hex_escaped(NOT_UTF8) == "'\\xff\\xfe'"
    assert unreadable.hex_escaped(b"ok\xc3") == "'ok\\xc3'"
    assert unreadable.hex_escaped("é".encode()) == "'é'"
    assert unreadable.hex_escaped(None) == "null"
