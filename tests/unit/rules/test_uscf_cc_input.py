"""uscf-cc's input (reading section 8, examples 35-40 and the control rule): the decoder with the
correspondence model refuses a bad `forfeit_kind` (whatever the termination), a drawn special
forfeit and any object with a `control` key as `invalid_schema`; the duplicate facts hold a
forfeit's kind only. (That nothing is then written is the engine's part, tested there when the
system is wired in.)"""

import json
from typing import Any

import pytest

from schemas.correspondence_game import CorrespondenceGameFinished
from tests.support.contract import VALID_GAME
from worker.engine.decoder import BadInput, ErrorKind, decode_as, decode_game
from worker.engine.engine import facts_digest
from worker.systems.uscf_cc.rules import DRAW, WIN, CcGame, duplicate_facts, game_of

MAX = 65536


def game(**changes: Any) -> dict[str, Any]:
    """The contract's valid game as a forfeit, varied field by field."""
    return {
        **VALID_GAME,
        "time_control": {"base_seconds": 259200, "increment_seconds": 0},
        "termination": "forfeit",
        **changes,
    }


def decode(value: dict[str, Any]) -> CorrespondenceGameFinished:
    return decode_as(CorrespondenceGameFinished, json.dumps(value).encode(), MAX)


def digest(value: dict[str, Any]) -> bytes:
    decoded = decode(value)
    return facts_digest(decoded, duplicate_facts(decoded))


def refused(value: dict[str, Any]) -> BadInput:
    with pytest.raises(BadInput) as caught:
        decode(value)
    assert caught.value.kind is ErrorKind.INVALID_SCHEMA
    return caught.value


@pytest.mark.parametrize("kind", ["Special", "", None, 1, ["special"], "quitter"])
def test_example_35_a_misspelt_forfeit_kind_is_invalid_schema(kind: object) -> None:
    error = refused(game(forfeit_kind=kind))
    assert error.message.startswith("forfeit_kind: ")


def test_example_36_it_is_checked_whatever_the_termination() -> None:
    assert refused(game(termination="resignation", forfeit_kind="Special")).message.startswith("forfeit_kind: ")


def test_example_37_a_resignation_marked_special_is_rated_normally_and_its_kind_is_no_fact() -> None:
    marked = game(termination="resignation", forfeit_kind="special")
    assert game_of(decode(marked)) == CcGame(WIN)
    assert digest(marked) == digest(game(termination="resignation"))  # a redelivery without it: a duplicate


def test_example_38_an_absent_kind_is_ordinary() -> None:
    assert digest(game()) == digest(game(forfeit_kind="ordinary"))
    assert game_of(decode(game())) == CcGame(WIN)


def test_example_39_ordinary_then_special_is_a_conflicting_duplicate() -> None:
    assert digest(game(forfeit_kind="ordinary")) != digest(game(forfeit_kind="special"))
    assert game_of(decode(game(forfeit_kind="special"))) == CcGame(WIN, special_forfeit=True)


def test_example_40_a_drawn_special_forfeit_is_invalid_schema() -> None:
    message = refused(game(result="1/2-1/2", forfeit_kind="special")).message
    assert "a special forfeit (forfeit_kind special) needs a winner" in message
    # An ordinary forfeit may be drawn (example 25): rated as a draw.
    assert game_of(decode(game(result="1/2-1/2"))) == CcGame(DRAW)


def test_example_41_unrated_and_aborted_games_reach_the_rules_as_such() -> None:
    assert game_of(decode(game(rated=False))) == CcGame(WIN, rated=False)
    assert game_of(decode(game(termination="aborted"))) == CcGame(WIN, aborted=True)


@pytest.mark.parametrize("control", ["close", None, 1, {"x": 1}])
def test_an_object_with_a_control_key_is_never_a_game(control: object) -> None:
    assert "control" in refused(game(control=control)).message
    assert "control" in refused({"control": control}).message


def test_the_arena_input_ignores_the_correspondence_fields() -> None:
    """v1's decoder ignores forfeit_kind and control keys (unknown fields: the arena is unchanged;
    that its digests are those earlier releases stored is the rolling-upgrade test's), and a
    system's extra facts make another digest."""
    value = json.dumps(game(forfeit_kind="Special", control="close")).encode()
    arena = decode_game(value, MAX)
    assert facts_digest(arena) != facts_digest(arena, "forfeit_kind=special")
