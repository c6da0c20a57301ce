"""tornelo's tournament ends (`worker.stream.tournament_ends`): a record of the tournament topic is
an end, or bad input refused exactly as a bad game is (docs/systems/tornelo.md, "Tournament ends"):
the game decoder's error kinds and messages, strict types, unknown fields ignored, the key not
read; its dead letter the record's key, value and headers, then the five error headers that a bad
game's letter has, `source.topic` naming the tournament topic. Also the records as the client
hands them over from a batch compressed with each codec, and beside a header key that is not
UTF-8 (read past by `worker.stream.unreadable`, as the game input is)."""

import json
import struct
from typing import Any

import pytest
from aiokafka import ConsumerRecord, TopicPartition
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from schemas.tournament_finished import TournamentFinished
from tests.support.batches import NOT_UTF8, RawRecord, raw_batch
from worker.engine.decoder import BadInput, ErrorKind, decode_game
from worker.stream import unreadable
from worker.stream.dead_letters import ERROR_HEADERS, DeadLetter, DeadLetters, Source, dead_letter_record
from worker.stream.record_batch import batches
from worker.stream.tournament_ends import decode_end, read_ends

TOPIC = "arena.tournament.finished.v1"
MAX_BYTES = 1024  # RATING_MAX_MESSAGE_BYTES in these tests
BUDGET = 1 << 20
END = {"event_id": "te-1", "tournament_id": "T1", "finished_at": "2026-11-29T21:44:51Z"}
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def encoded(value: dict[str, Any]) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


GOOD = encoded(END)


def record(
    value: bytes | None,
    key: bytes | None = b"T1",
    headers: Any = (),
    offset: int = 7,
    topic: str = TOPIC,
) -> ConsumerRecord:
    size = -1 if value is None else len(value)
    return ConsumerRecord(topic, 0, offset, 1_764_452_691_000, 0, key, value, None, 2, size, headers)


def rejected(value: bytes | None, **fields: Any) -> DeadLetter:
    got = decode_end(record(value, **fields), MAX_BYTES)
    assert isinstance(got, DeadLetter), got
    return got


# A good end.


@pytest.mark.parametrize("key", [b"T1", None, b"another key", b"\xff\xfe"])
def test_a_good_end_is_read_whatever_its_key(key: bytes | None) -> None:
    end = decode_end(record(GOOD, key=key), MAX_BYTES)
    assert end == TournamentFinished(event_id="te-1", tournament_id="T1", finished_at="2026-11-29T21:44:51Z")


def test_unknown_fields_are_ignored_a_control_key_too_and_the_longest_event_id_is_an_operators() -> None:
    operators = "operator/" + "T" * 128 + "/1764452691000"
    value = encoded({**END, "event_id": operators, "name": "Arena Cup", "rounds": 9, "control": "close"})
    end = decode_end(record(value), MAX_BYTES)
    assert isinstance(end, TournamentFinished)
    assert (end.event_id, end.tournament_id) == (operators, "T1")


def test_finished_at_is_kept_verbatim_and_never_judged_against_the_records_timestamp() -> None:
    # Informational: a year after the record's timestamp is no reason to refuse it (a game would be, for fide).
    later = decode_end(record(encoded({**END, "finished_at": "2027-11-29T21:44:51.123+05:30"})), MAX_BYTES)
    assert isinstance(later, TournamentFinished) and later.finished_at == "2027-11-29T21:44:51.123+05:30"


# Each kind of bad input, as the game input's.


SCHEMA, JSON = ErrorKind.INVALID_SCHEMA, ErrorKind.INVALID_JSON
BAD: dict[str, tuple[bytes | None, ErrorKind, str]] = {
    "too_large": (
        b" " * (MAX_BYTES - len(GOOD)) + GOOD + b" ",
        ErrorKind.TOO_LARGE,
        "value is 1025 bytes, the maximum",
    ),
    "not_utf8": (b'{"event_id": "\xff"}', ErrorKind.INVALID_ENCODING, "not UTF-8: byte 14 (0xff)"),
    "not_json": (b"{not json", JSON, "key must be a string at line 1 column 2"),
    "cut_short": (GOOD[:-2], JSON, "EOF while parsing"),
    "empty": (b"", JSON, "EOF while parsing a value at line 1 column 0"),
    "tombstone": (None, JSON, "EOF while parsing a value at line 1 column 0"),
    "array": (b"[]", SCHEMA, "value: Input should be an object"),
    "bad_id": (encoded({**END, "tournament_id": "bad/id"}), SCHEMA, "tournament_id: String should match pattern"),
    "strict": (encoded({**END, "tournament_id": 7}), SCHEMA, "tournament_id: Input should be a valid string"),
    "null_id": (encoded({**END, "tournament_id": None}), SCHEMA, "tournament_id: Input should be a valid string"),
    "empty_event_id": (encoded({**END, "event_id": ""}), SCHEMA, "event_id: String should have at least 1 character"),
    "long_event_id": (encoded({**END, "event_id": "x" * 161}), SCHEMA, "event_id: String should have at most 160"),
    "no_offset": (encoded({**END, "finished_at": "2026-11-29T21:44:51"}), SCHEMA, "finished_at: "),
    "missing": (encoded({"event_id": "te-1", "tournament_id": "T1"}), SCHEMA, "finished_at: Field required"),
    "close_line": (b'{"control":"close","period":"T1"}', SCHEMA, "event_id: Field required"),
}


@pytest.mark.parametrize(("value", "kind", "message"), list(BAD.values()), ids=list(BAD))
def test_each_bad_record_is_refused_with_the_game_inputs_kind_and_a_one_line_message(
    value: bytes | None, kind: ErrorKind, message: str
) -> None:
    letter = rejected(value)
    assert letter.error.kind is kind
    assert letter.error.message.startswith(message), letter.error.message
    assert "\n" not in letter.error.message


@pytest.mark.parametrize(
    "value",
    [
        b"x" * (MAX_BYTES + 1),
        b"\xff" * 10,
        b'{"a": "\xc3"}',
        b"{not json",
        b'{"event_id": "te-1",',
        b"",
        b"7",
        b"null",
        b'"a string"',
    ],
)
def test_a_value_bad_before_any_field_is_read_gets_the_bad_games_very_kind_and_message(value: bytes) -> None:
    """The classification is the game decoder's own, not a copy: where no field is read yet, the
    end and the game are refused alike, word for word."""
    with pytest.raises(BadInput) as game:
        decode_game(value, MAX_BYTES)
    end = rejected(value)
    assert (end.error.kind, end.error.message) == (game.value.kind, game.value.message)


# Numbers longer than Python's ints take (over 4300 digits), as the game decoder reads them.


def test_a_huge_number_in_an_unknown_field_is_ignored() -> None:
    value = GOOD[:-1] + b', "extra": ' + b"9" * 5000 + b', "later": [1, {"n": -' + b"9" * 5000 + b"}]}"
    end = decode_end(record(value), 1 << 20)
    assert isinstance(end, TournamentFinished) and end.tournament_id == "T1"


def test_a_huge_number_as_the_tournament_id_is_invalid_schema_not_invalid_json() -> None:
    value = GOOD.replace(b'"T1"', b"9" * 5000)
    letter = decode_end(record(value), 1 << 20)
    assert isinstance(letter, DeadLetter)
    assert letter.error.kind is ErrorKind.INVALID_SCHEMA
    assert letter.error.message.startswith("tournament_id: "), letter.error.message
    assert "9999" not in letter.error.message


def test_cut_json_after_a_huge_number_is_invalid_json_at_the_column_of_the_original_text() -> None:
    def cut(number: bytes) -> DeadLetter:
        letter = decode_end(record(GOOD[:-1] + b', "extra": ' + number + b', "x": "abc'), 1 << 20)
        assert isinstance(letter, DeadLetter) and letter.error.kind is ErrorKind.INVALID_JSON
        return letter

    huge, small = cut(b"9" * 5000).error.message, cut(b"9").error.message
    assert huge.startswith("EOF while parsing") and "out of range" not in huge
    assert int(huge.rsplit(" column ", 1)[1]) == int(small.rsplit(" column ", 1)[1]) + 4999


# The dead letter: the record whole, and a bad game's headers.


def test_the_letter_keeps_the_record_as_it_came() -> None:
    headers = [("trace", b"t-1"), ("empty", b""), ("trace", b"again"), ("error.kind", b"the producer's own")]
    value = b" " * MAX_BYTES + GOOD  # too large: the letter still holds the whole value (the record's)
    letter = rejected(value, key=b"\x00key", headers=headers, offset=41)
    assert letter.source == Source(TOPIC, 0, 41, b"\x00key", value, 1_764_452_691_000, tuple(headers))
    assert rejected(None, key=None, headers=None).source == Source(TOPIC, 0, 7, None, None, 1_764_452_691_000, ())


@pytest.mark.parametrize(
    "value",
    [b"{not json", None, b"\xff", encoded({**END, "tournament_id": 7}), b"y" * (3 * MAX_BYTES)],
    ids=["invalid_json", "tombstone", "invalid_encoding", "invalid_schema", "too_large"],
)
def test_a_bad_end_is_dead_lettered_with_exactly_the_headers_a_bad_game_gets(value: bytes | None) -> None:
    """The same bytes with the same headers on the games topic, refused by the game decoder and
    made a letter by the consumer's way (`worker.stream.consumer`), give the same dead letter:
    key, value (a too large one cut to RATING_MAX_MESSAGE_BYTES), the original headers (one named
    like an error header renamed `original.<name>`) and the five error headers, all but
    `source.topic`, which names each one's own topic."""
    headers = (("trace", b"t-1"), ("source.topic", b"forged"), ("error.truncated", b""), ("trace", b"2"))
    end = rejected(value, headers=headers)
    with pytest.raises(BadInput) as refused:
        decode_game(b"" if value is None else value, MAX_BYTES)
    game = DeadLetter(Source("games", 0, 7, b"T1", value, 1_764_452_691_000, headers), refused.value)
    if refused.value.kind is not ErrorKind.INVALID_SCHEMA:  # a schema error names each model's own field
        assert (end.error.kind, end.error.message) == (game.error.kind, game.error.message)
    end_key, end_value, end_headers = dead_letter_record(end, MAX_BYTES, BUDGET)
    game_key, game_value, game_headers = dead_letter_record(game, MAX_BYTES, BUDGET)
    assert (end_key, end_value) == (game_key, game_value) == (b"T1", None if value is None else value[:MAX_BYTES])
    assert [name for name, _ in end_headers] == [name for name, _ in game_headers]
    assert [name for name, _ in end_headers][-5:] == list(ERROR_HEADERS)
    errors = dict(end_headers[-5:])
    assert errors["error.kind"] == str(end.error.kind).encode()
    assert errors["source.topic"] == TOPIC.encode()
    assert (errors["source.partition"], errors["source.offset"]) == (b"0", b"7")
    assert end_headers[:4] == [
        ("trace", b"t-1"),
        ("original.source.topic", b"forged"),
        ("original.error.truncated", b""),
        ("trace", b"2"),
    ]
    different = [(e, g) for e, g in zip(end_headers, game_headers, strict=True) if e != g]
    if refused.value.kind is ErrorKind.INVALID_SCHEMA:
        assert [e[0] for e, _ in different] == ["error.message", "source.topic"]
    else:
        assert different == [(("source.topic", TOPIC.encode()), ("source.topic", b"games"))]


async def test_a_fetch_of_good_ends_gives_them_in_order_and_sends_nothing() -> None:
    nowhere = DeadLetters(producer=None, topic="dlq", max_bytes=MAX_BYTES, alarm_per_minute=10)
    second = encoded({**END, "event_id": "te-2", "tournament_id": "T2"})
    ends = await read_ends([record(GOOD), record(second, offset=8)], nowhere)  # a send would fail: no producer
    assert [(e.event_id, e.tournament_id) for e in ends] == [("te-1", "T1"), ("te-2", "T2")]
    assert not nowhere.recent  # no dead letter counted


# Records as the client hands them over: from compressed batches, and around a header key that is not UTF-8.


def batch(values: list[bytes | None], codec: str) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=CODECS[codec],
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 22,
    )
    for delta, value in enumerate(values):
        builder.append(delta, timestamp=1_764_452_691_000, key=b"T1", value=value, headers=[("h", b"\x00\xff")])
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 0, 100)  # the broker assigns the base offset
    return bytes(raw)


@pytest.mark.parametrize("codec", list(CODECS))
def test_ends_from_a_batch_compressed_with_each_codec_read_as_uncompressed_ones(codec: str) -> None:
    values: list[bytes | None] = [GOOD, b"{not json", None, encoded({**END, "tournament_id": "T2", "more": "x" * 500})]
    way = unreadable.passage(TopicPartition(TOPIC, 0), 100, batches(batch(values, codec)))
    assert way is not None and not way.unreadable
    read = [decode_end(r, MAX_BYTES) for r in way.readable]
    assert [r.offset for r in way.readable] == [100, 101, 102, 103]
    assert [e.tournament_id for e in read if isinstance(e, TournamentFinished)] == ["T1", "T2"]
    letters = [e for e in read if isinstance(e, DeadLetter)]
    assert [(d.source.offset, d.error.kind) for d in letters] == [(101, "invalid_json"), (102, "invalid_json")]
    assert all(d.source.headers == (("h", b"\x00\xff"),) for d in letters)


def test_the_ends_around_a_header_key_that_is_not_utf8_are_read_and_it_is_left_to_the_way_past() -> None:
    raw = raw_batch(
        [
            RawRecord(GOOD, b"T1", [(b"ok", b"1")]),
            RawRecord(encoded({**END, "tournament_id": "T2"}), b"T2", [(NOT_UTF8, b"x"), (b"ok", b"2")]),
            RawRecord(encoded({**END, "tournament_id": "T3"}), b"T3"),
        ]
    )
    way = unreadable.passage(TopicPartition(TOPIC, 0), 0, batches(raw))
    assert way is not None
    assert [(u.offset, u.headers) for u in way.unreadable] == [(1, (("ok", b"2"),))]
    assert "\\xff\\xfe" in way.unreadable[0].message
    read = [decode_end(r, MAX_BYTES) for r in way.readable]
    assert [e.tournament_id for e in read if isinstance(e, TournamentFinished)] == ["T1", "T3"]
