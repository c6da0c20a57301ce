"""Numbers too long for a Python int (over 4300 digits) are valid JSON: decode_game judges them
by the schema (invalid_schema in a field it checks, ignored in an unknown field), not as
malformed JSON, and a message that is malformed as well keeps the parser's own error and column.
And a per-period system's lines (decode_line): a game, a close line, or bad input."""

import json

import pytest

from schemas.close_line import FideCloseLine
from tests.support.contract import VALID_GAME
from worker.engine.decoder import BadInput, ErrorKind, decode_game, decode_line
from worker.systems.registry import FIDE, GLICKO2

VALID = VALID_GAME
MAX_BYTES = 1024 * 1024
BASE = b'"base_seconds": 180'  # as json.dumps writes it


def with_base_seconds(number: str) -> bytes:
    """The valid game with this number token, as is, in time_control.base_seconds."""
    text = json.dumps(VALID).encode()
    assert BASE in text
    return text.replace(BASE, b'"base_seconds": ' + number.encode())


def with_extra_field(number: str) -> bytes:
    """The valid game with an unknown field holding this number token, and one holding it deeper."""
    text = json.dumps(VALID).encode()
    return text[:-1] + f', "extra": {number}, "later": [1, {{"n": {number}}}]}}'.encode()


def bad(value: bytes) -> BadInput:
    with pytest.raises(BadInput) as raised:
        decode_game(value, MAX_BYTES)
    return raised.value


def column(message: str) -> int:
    assert " at line 1 column " in message, message
    return int(message.rsplit(" column ", 1)[1])


@pytest.mark.parametrize("digits", [4301, 5000, 60000])
@pytest.mark.parametrize("sign", ["", "-"])
def test_an_integer_over_4300_digits_in_base_seconds_is_invalid_schema_not_invalid_json(sign: str, digits: int) -> None:
    error = bad(with_base_seconds(sign + "9" * digits))
    assert error.kind is ErrorKind.INVALID_SCHEMA
    assert error.message.startswith("time_control.base_seconds: "), error.message
    assert "9999" not in error.message  # the one-line message does not repeat the number


@pytest.mark.parametrize("digits", [4301, 60000])
@pytest.mark.parametrize("sign", ["", "-"])
def test_an_integer_over_4300_digits_in_an_unknown_field_is_ignored(sign: str, digits: int) -> None:
    game = decode_game(with_extra_field(sign + "9" * digits), MAX_BYTES)
    assert (game.game_id, game.time_control.base_seconds, game.white_id) == ("g1", 180, "alice")


def test_4300_digits_is_still_an_int_the_schema_takes_and_minus_4300_digits_is_below_0() -> None:
    # 4300 digits is the most Python converts to an int (sys.get_int_max_str_digits()); base_seconds
    # has no upper bound in the schema, so the game decodes with that enormous base time.
    game = decode_game(with_base_seconds("9" * 4300), MAX_BYTES)
    assert game.time_control.base_seconds == int("9" * 4300)
    error = bad(with_base_seconds("-" + "9" * 4300))
    assert error.kind is ErrorKind.INVALID_SCHEMA
    assert error.message.startswith("time_control.base_seconds: Input should be greater than or equal to 0")


def test_a_string_of_digits_and_an_escaped_quote_before_digits_are_left_as_strings() -> None:
    # The long-number rewrite skips strings whole: a string that looks like a number stays a string.
    text = json.dumps({**VALID, "extra": "9" * 5000, "other": '\\"' + "9" * 5000}).encode()
    assert decode_game(text, MAX_BYTES).game_id == "g1"
    error = bad(json.dumps({**VALID, "event_id": "9" * 5000}).encode())
    assert error.kind is ErrorKind.INVALID_SCHEMA
    assert error.message.startswith("event_id: String should have at most 128 characters"), error.message


def test_truncated_json_with_a_huge_number_is_invalid_json_with_the_column_of_the_original_text() -> None:
    huge = "9" * 5000
    small = "9"
    for build in (with_base_seconds, with_extra_field):
        long_text = build(huge)[:-3]  # cut inside the last string
        short_text = build(small)[:-3]
        error = bad(long_text)
        assert error.kind is ErrorKind.INVALID_JSON
        assert "out of range" not in error.message
        assert error.message.startswith("EOF while parsing"), error.message
        reference = bad(short_text)
        assert reference.kind is ErrorKind.INVALID_JSON
        # The same error, at the same place, shifted by exactly the length the huge number adds.
        assert error.message.split(" at line ")[0] == reference.message.split(" at line ")[0]
        assert column(error.message) == column(reference.message) + (len(huge) - len(small)) * (
            1 if build is with_base_seconds else 2
        )


def test_a_syntax_error_after_a_huge_number_is_reported_at_its_column_in_the_original_text() -> None:
    text = with_base_seconds("9" * 5000).replace(b'"white_id"', b"white_id")  # an unquoted key
    error = bad(text)
    assert error.kind is ErrorKind.INVALID_JSON
    assert error.message.startswith("key must be a string"), error.message
    assert column(error.message) == text.index(b"white_id") + 1  # columns count from 1


def test_a_syntax_error_before_a_huge_number_is_reported_first() -> None:
    text = with_extra_field("9" * 5000).replace(b'"game_id"', b"game_id")
    error = bad(text)
    assert error.kind is ErrorKind.INVALID_JSON
    assert column(error.message) == text.index(b"game_id") + 1


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"control":"close","period":"2026-11"}', "2026-11"),
        # Other keys are ignored, a number longer than Python's ints take among them too.
        (b'{"control":"close","period":"2026-11","by":' + b"9" * 5000 + b"}", "2026-11"),
        (b'{"control":"stop","period":"2026-11","by":' + b"9" * 5000 + b"}", "control: Input should be 'close'"),
        (b'{"control":"close","period":"9999-12"}', "9999-12 cannot be closed"),
        (b'["control"]', "value: Input should be an object"),  # not an object: not a control message
        (b'{"control":"close","period":"2026-11",', "EOF while parsing"),  # not JSON at all
    ],
)
def test_a_line_of_a_per_period_systems_file_is_a_game_a_close_or_bad_input(line: bytes, expected: str) -> None:
    """docs/contract-v2.md, "The per-period systems: `fide` and `tornelo`" (close lines): in `rate`'s
    file of fide (or tornelo) an object with a `control` key is a close when `control` is "close" and
    `period` is a period of the system, other keys ignored; `invalid_schema` otherwise. For the others
    it is never a game either."""
    try:
        decoded = decode_line(FIDE, line, 1 << 20)
    except BadInput as bad:
        assert expected in bad.message and "\n" not in bad.message
        assert bad.kind in (ErrorKind.INVALID_SCHEMA, ErrorKind.INVALID_JSON)
    else:
        assert isinstance(decoded, FideCloseLine) and decoded.period == expected
    with pytest.raises(BadInput):  # glicko2 has no close lines: a control key is bad input
        decode_line(GLICKO2, line, 1 << 20)
