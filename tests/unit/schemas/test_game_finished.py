"""The input schema against docs/contract.md ("Input: `arena.game.finished.v1`"): GameFinished is strict."""

import json
from typing import Any

import pytest
from pydantic import ValidationError

from schemas.game_finished import GameFinished
from tests.support.contract import RESULTS, TERMINATIONS, VALID_GAME

VALID = VALID_GAME


def parse(**changes: Any) -> GameFinished:
    message = {**VALID, **changes}
    return GameFinished.model_validate_json(json.dumps(message, ensure_ascii=False).encode())


def invalid(**changes: Any) -> None:
    with pytest.raises(ValidationError):
        parse(**changes)


def test_the_reference_message_is_valid() -> None:
    game = parse()
    assert (game.game_id, game.white_id, game.black_id, game.rated) == ("g1", "alice", "bob", True)
    assert (game.time_control.base_seconds, game.time_control.increment_seconds) == (180, 0)


# --- strict types --------------------------------------------------------------------------


@pytest.mark.parametrize("rated", [1, 0, "true", "false", None])
def test_rated_must_be_a_json_boolean_true_is_not_1(rated: Any) -> None:
    invalid(rated=rated)


@pytest.mark.parametrize("rated", [True, False])
def test_rated_true_and_false_are_valid(rated: bool) -> None:
    assert parse(rated=rated).rated is rated


@pytest.mark.parametrize("value", [180.0, "180", True, None, -1, -180])
@pytest.mark.parametrize("field", ["base_seconds", "increment_seconds"])
def test_time_control_fields_must_be_integers_at_least_0(field: str, value: Any) -> None:
    # 1.0 is not an integer, "1" is not an integer, true is not 1, >= 0.
    invalid(time_control={**VALID["time_control"], field: value})


def test_time_control_zero_is_valid() -> None:
    game = parse(time_control={"base_seconds": 0, "increment_seconds": 0})
    assert (game.time_control.base_seconds, game.time_control.increment_seconds) == (0, 0)


@pytest.mark.parametrize("time_control", [{"base_seconds": 180}, "3+0", [180, 0], None])
def test_time_control_must_be_the_object_with_both_fields(time_control: Any) -> None:
    invalid(time_control=time_control)


@pytest.mark.parametrize("field", list(VALID))
def test_every_field_is_required(field: str) -> None:
    message = {k: v for k, v in VALID.items() if k != field}
    with pytest.raises(ValidationError):
        GameFinished.model_validate_json(json.dumps(message))


@pytest.mark.parametrize("raw", [b"[]", b'"game"', b"null", b"1"])
def test_a_message_that_is_not_an_object_is_invalid(raw: bytes) -> None:
    with pytest.raises(ValidationError):
        GameFinished.model_validate_json(raw)


# --- finished_at ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "finished_at",
    [
        "2026-11-29T21:44:51Z",
        "2026-11-29T22:44:51+01:00",
        "2026-11-29T16:14:51-05:30",
        "2026-11-29T22:00:00.123+01:00",
        "2026-11-29T21:44:51.123456Z",
        "2028-02-29T12:00:00Z",  # a leap day
    ],
)
def test_rfc3339_timestamps_with_z_or_an_offset_are_valid_and_kept_verbatim(finished_at: str) -> None:
    assert parse(finished_at=finished_at).finished_at == finished_at


@pytest.mark.parametrize(
    "finished_at",
    [
        "2026-11-29T21:44:51",  # no offset
        "2026-11-29T21:44:51.123",  # no offset
        1764452691,  # a number
        1764452691.5,
        "2026-02-30T12:00:00Z",  # no such date
        "2026-02-29T12:00:00Z",  # 2026 is not a leap year
        "2026-13-01T12:00:00Z",
        "2026-11-31T12:00:00Z",
        "2026-11-29T25:00:00Z",
        "2026-11-29T21:61:00Z",
        "2026-11-29",  # a date only
        "2026-11-29T21:44Z",  # no seconds
        "2026-11-29T21:44:51+0100",  # offset without colon
        "2026-11-29T21:44:51+01",
        "2026-11-29T21:44:51 Z",
        "2026-11-29T21:44:51Z\n",  # trailing newline
        " 2026-11-29T21:44:51Z",
        "",
        "yesterday",
    ],
)
def test_timestamps_that_are_not_rfc3339_with_an_offset_are_invalid(finished_at: Any) -> None:
    invalid(finished_at=finished_at)


@pytest.mark.parametrize(
    "finished_at",
    [
        "２０２６-11-29T21:44:51Z",  # full-width digits in the year
        "\u0662\u0660\u0662\u0666-11-29T21:44:51Z",  # Arabic-Indic digits in the year
        "2026-１１-29T21:44:51Z",  # full-width digits in the month
        "2026-11-29T21:44:\u0665\u0661Z",  # Arabic-Indic digits in the seconds
        "2026-11-29T21:44:51+０１:００",  # full-width digits in the offset
    ],
)
def test_a_timestamp_with_non_ascii_digits_is_invalid(finished_at: str) -> None:
    # RFC 3339 (section 5.6) builds dates from DIGIT = %x30-39 (ASCII 0-9 only). The output
    # copies finished_at verbatim, so accepting these would publish a non-RFC-3339 timestamp.
    invalid(finished_at=finished_at)


# --- ids -----------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["game_id", "white_id", "black_id"])
@pytest.mark.parametrize("value", ["a", "A9", "a.b-c_d", "9", "x" * 128, "G" + "_" * 127])
def test_ids_matching_the_pattern_up_to_128_characters_are_valid(field: str, value: str) -> None:
    other = {"white_id": "zz-other"} if field == "black_id" else {"black_id": "zz-other"}
    assert getattr(parse(**{field: value, **other}), field) == value


@pytest.mark.parametrize("field", ["game_id", "white_id", "black_id"])
@pytest.mark.parametrize(
    "value",
    [
        "x" * 129,  # too long
        "",
        "g1\n",  # a trailing newline
        "\ng1",
        "a/b",  # "/" separates the parts of keys and event ids
        "a:b",
        "é",  # ASCII only
        "caf\u00e9",
        "_a",  # must start with a letter or a digit
        "-a",
        ".a",
        "a b",
        "a\tb",
        "a\u0000",
        1,
        None,
    ],
)
def test_ids_outside_the_pattern_are_invalid(field: str, value: Any) -> None:
    invalid(**{field: value})


def test_white_and_black_must_be_different_players() -> None:
    invalid(white_id="alice", black_id="alice")


def test_ids_differing_only_in_case_are_different_players() -> None:
    assert parse(white_id="alice", black_id="Alice").black_id == "Alice"


# --- event_id ------------------------------------------------------------------------------


@pytest.mark.parametrize("event_id", ["e", "x" * 128, "é" * 128, 'é-"1', "a/b:c", "with space", "日本"])
def test_event_id_of_1_to_128_characters_is_valid(event_id: str) -> None:
    # Lengths count characters: 128 x "é" is 256 bytes in UTF-8 but 128 characters.
    assert parse(event_id=event_id).event_id == event_id


@pytest.mark.parametrize("event_id", ["", "x" * 129, "é" * 129, 1, None])
def test_event_id_empty_longer_than_128_characters_or_not_a_string_is_invalid(event_id: Any) -> None:
    invalid(event_id=event_id)


# --- enums and extra fields ----------------------------------------------------------------


@pytest.mark.parametrize("result", RESULTS)
def test_the_three_results_are_valid(result: str) -> None:
    assert parse(result=result).result == result


@pytest.mark.parametrize("result", ["1-1", "0-0", "½-½", "0.5-0.5", "1/2", "", "1-0 ", 1])
def test_other_results_are_invalid(result: Any) -> None:
    invalid(result=result)


@pytest.mark.parametrize("termination", TERMINATIONS)
def test_the_eleven_terminations_are_valid(termination: str) -> None:
    assert parse(termination=termination).termination == termination


@pytest.mark.parametrize("termination", ["Checkmate", "draw", "abandoned", "time_forfeit", "", None])
def test_other_terminations_are_invalid(termination: Any) -> None:
    invalid(termination=termination)


def test_no_consistency_between_result_and_termination_is_checked() -> None:
    # docs/contract.md, "Input: `arena.game.finished.v1`": the termination's "consistency with `result` is not
    # checked".
    assert parse(result="1/2-1/2", termination="checkmate").result == "1/2-1/2"
    assert parse(result="1-0", termination="stalemate").termination == "stalemate"


def test_unknown_extra_fields_are_ignored() -> None:
    game = parse(variant="standard", moves=42, arena={"id": 7})
    assert game == parse()


def test_unknown_extra_fields_in_time_control_are_ignored() -> None:
    game = parse(time_control={"base_seconds": 180, "increment_seconds": 0, "delay_seconds": 5})
    assert game.time_control == parse().time_control
