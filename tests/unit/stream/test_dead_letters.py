"""Dead letters (`worker.stream.dead_letters`).

A dead letter's record: the original key, value and headers, then the five error headers
(contract, "Bad input"), cut to fit the producer's budget (value, then original headers, then
key) with an `error.truncated` header saying what was cut.

The dead-letter flood alarm: a count over a sliding minute, with time passed in."""

import logging

import pytest

from worker.engine.decoder import BadInput, ErrorKind
from worker.stream.dead_letters import (
    ERROR_HEADERS,
    TRUNCATED_HEADER,
    DeadLetter,
    DeadLetters,
    Headers,
    Source,
    dead_letter_record,
    record_size,
)

MAX_BYTES = 65536
BUDGET = 1024 * 1024
KB = 1024


def letter(
    key: bytes | None = b"game-1",
    value: bytes | None = b"{not json",
    headers: tuple[tuple[str, bytes], ...] = (),
    kind: ErrorKind = ErrorKind.INVALID_JSON,
    message: str = "expected value at line 1 column 2",
) -> DeadLetter:
    return DeadLetter(Source("games", 3, 1234, key, value, 1_700_000_000_000, headers), BadInput(kind, message))


def error_headers(d: DeadLetter) -> Headers:
    return [
        ("error.kind", str(d.error.kind).encode()),
        ("error.message", d.error.message.encode()),
        ("source.topic", b"games"),
        ("source.partition", b"3"),
        ("source.offset", b"1234"),
    ]


def names(headers: Headers) -> list[str]:
    return [name for name, _ in headers]


def note(headers: Headers) -> str:
    found = [v for k, v in headers if k == TRUNCATED_HEADER]
    assert len(found) == 1, names(headers)
    return found[0].decode()


# (a) headers: the original ones first, unchanged or renamed; then the five error headers.


def test_original_headers_come_first_unchanged_then_the_five_error_headers_in_order() -> None:
    original = (("trace-id", b"abc"), ("content-type", b"application/json"), ("empty", b""), ("trace-id", b"dup"))
    d = letter(headers=original)
    key, value, headers = dead_letter_record(d, MAX_BYTES, BUDGET)
    assert headers == [*original, *error_headers(d)]
    assert names(headers)[-5:] == list(ERROR_HEADERS)
    assert (key, value) == (b"game-1", b"{not json")


@pytest.mark.parametrize("name", [*ERROR_HEADERS, TRUNCATED_HEADER])
def test_an_original_header_named_like_an_error_header_is_renamed_original_name(name: str) -> None:
    d = letter(headers=(("before", b"1"), (name, b"forged by the producer"), ("after", b"2")))
    _, _, headers = dead_letter_record(d, MAX_BYTES, BUDGET)
    assert headers == [
        ("before", b"1"),
        (f"original.{name}", b"forged by the producer"),
        ("after", b"2"),
        *error_headers(d),
    ]
    # Each error header appears once, with the worker's value, and no truncation is claimed.
    for error_name, error_value in error_headers(d):
        assert [v for k, v in headers if k == error_name] == [error_value]
    assert TRUNCATED_HEADER not in names(headers)


def test_a_header_only_resembling_an_error_header_keeps_its_name() -> None:
    original = (("Error.Kind", b"x"), ("error.kind.extra", b"y"), ("original.error.kind", b"z"))
    _, _, headers = dead_letter_record(letter(headers=original), MAX_BYTES, BUDGET)
    assert headers[:3] == list(original)


# (b) a too_large value is cut to RATING_MAX_MESSAGE_BYTES (the contract), with no note.


def test_a_too_large_value_is_cut_to_max_bytes() -> None:
    value = bytes(range(256)) * 400  # 102,400 bytes, not UTF-8
    d = letter(value=value, kind=ErrorKind.TOO_LARGE, message=f"value is {len(value)} bytes, the maximum is 65536")
    key, cut, headers = dead_letter_record(d, MAX_BYTES, BUDGET)
    assert cut == value[:MAX_BYTES]
    assert key == b"game-1"
    assert headers == error_headers(d)
    assert TRUNCATED_HEADER not in names(headers)


def test_only_a_too_large_value_is_cut_to_max_bytes() -> None:
    value = b"x" * (MAX_BYTES + 10)  # over max_bytes, but dead-lettered for another reason
    _, kept, _ = dead_letter_record(letter(value=value), MAX_BYTES, BUDGET)
    assert kept == value


# (c) over the budget: value cut first, then original headers dropped, then key cut.


def test_a_huge_value_alone_is_cut_to_fit_and_the_note_says_how_much_was_kept() -> None:
    value = b"v" * (2 * BUDGET)
    original = (("trace-id", b"abc"),)
    d = letter(value=value, headers=original)
    key, cut, headers = dead_letter_record(d, MAX_BYTES, BUDGET)
    assert record_size(key, cut, headers) <= BUDGET
    assert cut is not None and 0 < len(cut) < len(value) and value.startswith(cut)
    assert len(cut) > BUDGET - 4 * KB  # only what does not fit is cut
    assert key == b"game-1"
    assert headers[:6] == [*original, *error_headers(d)]
    assert note(headers) == f"value: first {len(cut)} of {len(value)} bytes kept"
    assert names(headers) == ["trace-id", *ERROR_HEADERS, TRUNCATED_HEADER]


def test_original_headers_that_leave_no_room_go_first_and_the_value_keeps_the_room_left() -> None:
    value = b"v" * (BUDGET // 2)
    original = (("big-1", b"h" * BUDGET), ("big-2", b"h" * 10))
    d = letter(value=value, headers=original)
    key, cut, headers = dead_letter_record(d, MAX_BYTES, BUDGET)
    assert record_size(key, cut, headers) <= BUDGET
    assert key == b"game-1"  # the key is cut last: here it is kept whole
    assert cut == value  # the headers alone did not fit: dropped, the value fits whole
    assert names(headers) == [*ERROR_HEADERS, TRUNCATED_HEADER]
    assert headers[:5] == error_headers(d)
    assert note(headers) == "2 original headers dropped"


def test_a_huge_value_beside_small_headers_is_cut_and_the_headers_kept() -> None:
    value = b"v" * (2 * BUDGET)
    original = (("trace", b"t" * 100),)
    d = letter(value=value, headers=original)
    key, cut, headers = dead_letter_record(d, MAX_BYTES, BUDGET)
    assert record_size(key, cut, headers) <= BUDGET
    assert cut is not None and value.startswith(cut) and len(cut) > BUDGET - 4 * KB
    assert headers[0] == ("trace", b"t" * 100)
    assert note(headers) == f"value: first {len(cut)} of {len(value)} bytes kept"


def test_huge_key_value_and_headers_all_three_are_cut_in_order_and_the_record_fits() -> None:
    key = b"k" * (2 * BUDGET)
    value = b"v" * BUDGET
    d = letter(key=key, value=value, headers=(("big", b"h" * BUDGET),))
    cut_key, cut_value, headers = dead_letter_record(d, MAX_BYTES, BUDGET)
    assert record_size(cut_key, cut_value, headers) <= BUDGET
    assert cut_value == b""
    assert cut_key is not None and 0 < len(cut_key) < len(key) and key.startswith(cut_key)
    assert len(cut_key) > BUDGET - 4 * KB
    assert headers[:5] == error_headers(d)
    assert note(headers) == (
        f"value: first 0 of {len(value)} bytes kept; 1 original headers dropped; "
        f"key: first {len(cut_key)} of {len(key)} bytes kept"
    )  # the key alone is over the budget: the headers and the value go, then the key is cut


def test_a_huge_key_alone_is_cut_and_a_null_value_stays_null() -> None:
    key = b"k" * (2 * BUDGET)
    d = letter(key=key, value=None)
    cut_key, value, headers = dead_letter_record(d, MAX_BYTES, BUDGET)
    assert value is None
    assert record_size(cut_key, value, headers) <= BUDGET
    assert cut_key is not None and key.startswith(cut_key)
    assert note(headers) == f"key: first {len(cut_key)} of {len(key)} bytes kept"


def test_huge_original_headers_alone_are_dropped_and_the_record_fits() -> None:
    original = tuple((f"h{i}", b"x" * (100 * KB)) for i in range(20))  # ~2 MB of headers
    d = letter(headers=original)
    key, value, headers = dead_letter_record(d, MAX_BYTES, BUDGET)
    assert record_size(key, value, headers) <= BUDGET
    assert key == b"game-1"
    assert names(headers) == [*ERROR_HEADERS, TRUNCATED_HEADER]
    assert "20 original headers dropped" in note(headers)


@pytest.mark.parametrize("budget", [4096, 10_000, 65_536, 300_000, BUDGET])
def test_whatever_the_budget_the_record_fits_it_and_what_is_kept_is_a_prefix(budget: int) -> None:
    key, value = b"k" * 500_000, bytes(range(256)) * 4000
    original = (("a", b"1" * 200_000), ("error.kind", b"forged"))
    d = letter(key=key, value=value, headers=original, kind=ErrorKind.INVALID_ENCODING, message="not UTF-8: byte 128")
    cut_key, cut_value, headers = dead_letter_record(d, MAX_BYTES, budget)
    assert record_size(cut_key, cut_value, headers) <= budget
    assert cut_key is not None and key.startswith(cut_key)
    assert cut_value is not None and value.startswith(cut_value)
    assert error_headers(d) == [h for h in headers if h[0] in ERROR_HEADERS]
    assert TRUNCATED_HEADER in names(headers)


def test_a_record_exactly_at_the_budget_is_unchanged_and_one_byte_less_cuts_it() -> None:
    d = letter(value=b"v" * 50_000, headers=(("trace-id", b"abc"),))
    full = dead_letter_record(d, MAX_BYTES, BUDGET)
    size = record_size(*full)
    assert dead_letter_record(d, MAX_BYTES, size) == full
    key, value, headers = dead_letter_record(d, MAX_BYTES, size - 1)
    assert record_size(key, value, headers) <= size - 1
    assert value is not None and len(value) < 50_000
    assert TRUNCATED_HEADER in names(headers)


def test_a_record_under_the_budget_has_no_truncated_header() -> None:
    d = letter(value=b"v" * 500_000, key=b"k" * 100_000, headers=(("h", b"x" * 100_000),))
    key, value, headers = dead_letter_record(d, MAX_BYTES, BUDGET)
    assert record_size(key, value, headers) <= BUDGET
    assert TRUNCATED_HEADER not in names(headers)


def test_a_budget_too_small_for_the_error_headers_alone_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot fit 100 bytes"):
        dead_letter_record(letter(), MAX_BYTES, 100)


# (d) what fits is copied byte for byte.


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"\x00\xff\xfe game \xc3\x28", b'\xff\xfe\x00{"a": 1}\r\n\x80'),
        (None, b"{}"),
        (b"k", None),
        (None, None),
        (b"", b""),
    ],
)
def test_a_key_value_and_headers_that_fit_are_byte_identical_to_the_source(
    key: bytes | None, value: bytes | None
) -> None:
    original = (("bin", b"\x00\x01\xff"), ("utf8", "é✓".encode()), ("none-ish", b""))
    d = letter(key=key, value=value, headers=original, kind=ErrorKind.INVALID_ENCODING, message="not UTF-8: byte 0")
    got_key, got_value, headers = dead_letter_record(d, MAX_BYTES, BUDGET)
    assert got_key == key and type(got_key) is type(key)
    assert got_value == value and type(got_value) is type(value)
    assert headers[:3] == list(original)


def test_headers_that_fit_only_without_the_note_are_dropped_before_the_value_is_cut() -> None:
    """Key and original headers fill the budget but for less than the note needs: dropping the
    headers first lets the value keep its room, instead of cutting it for nothing."""
    value = b"v" * 1000
    size = record_size(b"game-1", None, [*error_headers(letter()), ("big", b"")])
    original = (("big", b"h" * (BUDGET - size - 50)),)  # fits, but not with the 160-byte note
    d = letter(value=value, headers=original)
    key, cut, headers = dead_letter_record(d, MAX_BYTES, BUDGET)
    assert record_size(key, cut, headers) <= BUDGET
    assert cut == value
    assert note(headers) == "1 original headers dropped"


# The flood alarm.


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_alarm_rises_above_the_threshold_within_a_minute_and_falls_after(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    letters = DeadLetters(producer=None, topic="dlq", max_bytes=100, alarm_per_minute=10, clock=clock)
    letters._watch_flood(10)
    assert not letters.flooding  # exactly the threshold is not a flood
    clock.now += 30
    with caplog.at_level(logging.ERROR):
        letters._watch_flood(1)
    assert letters.flooding
    assert "dead-letter flood" in caplog.text
    clock.now += 31  # the first ten are now more than a minute old
    letters._watch_flood(0)
    assert not letters.flooding


def test_a_steady_trickle_under_the_threshold_never_raises_the_alarm() -> None:
    clock = Clock()
    letters = DeadLetters(producer=None, topic="dlq", max_bytes=100, alarm_per_minute=10, clock=clock)
    for _ in range(100):
        letters._watch_flood(1)
        clock.now += 7  # ~8.6 a minute
        assert not letters.flooding
