"""The tournament-end record of `arena.tournament.finished.v1` (docs/contract-v2.md, "The JSON Schemas"): an event id
of 1-160 characters (an operator's close holds a 128-character id), a tournament id, a timestamp;
strict types, unknown fields ignored, as the game input."""

import json
from typing import Any

import pytest
from pydantic import ValidationError

from schemas.export import SCHEMA_DIR
from schemas.tournament_finished import TournamentFinished

VALID = {"event_id": "te-1", "tournament_id": "T1", "finished_at": "2026-11-29T21:44:51Z"}


def parse(**changes: Any) -> TournamentFinished:
    return TournamentFinished.model_validate_json(json.dumps({**VALID, **changes}, ensure_ascii=False))


def test_the_reference_record_is_valid() -> None:
    record = parse()
    assert (record.event_id, record.tournament_id, record.finished_at) == ("te-1", "T1", "2026-11-29T21:44:51Z")


@pytest.mark.parametrize(
    "event_id",
    [
        "e",
        "x" * 160,
        "é" * 160,  # characters, not bytes
        "operator/" + "T" * 128 + "/1764452691000",  # the operator's form with a 128-character id: 151
    ],
)
def test_an_event_id_of_1_to_160_characters_is_valid(event_id: str) -> None:
    assert parse(event_id=event_id).event_id == event_id


@pytest.mark.parametrize("event_id", ["", "x" * 161, "é" * 161, 1, None])
def test_an_event_id_empty_longer_than_160_or_not_a_string_is_refused(event_id: Any) -> None:
    with pytest.raises(ValidationError):
        parse(event_id=event_id)


@pytest.mark.parametrize(
    "changes",
    [
        {"tournament_id": 7},  # strict: no number for a string
        {"tournament_id": "bad/id"},
        {"tournament_id": ""},
        {"tournament_id": "t" * 129},
        {"tournament_id": None},
        {"finished_at": 1764452691},
        {"finished_at": "2026-11-29T21:44:51"},  # no offset
        {"finished_at": "2026-02-30T12:00:00Z"},
    ],
)
def test_a_bad_tournament_id_or_timestamp_is_refused(changes: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        parse(**changes)


@pytest.mark.parametrize("field", list(VALID))
def test_every_field_is_required(field: str) -> None:
    with pytest.raises(ValidationError):
        TournamentFinished.model_validate_json(json.dumps({k: v for k, v in VALID.items() if k != field}))


def test_unknown_fields_are_ignored() -> None:
    assert parse(name="Arena Cup", rounds=9, control="close") == parse()


def test_the_exported_schema_states_the_contract() -> None:
    schema = json.loads((SCHEMA_DIR / "arena.tournament.finished.v1.schema.json").read_text())
    props = schema["properties"]
    assert (props["event_id"]["minLength"], props["event_id"]["maxLength"]) == (1, 160)
    assert props["tournament_id"]["pattern"] == "^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
    assert props["finished_at"]["format"] == "date-time"
    assert set(schema["required"]) == {"event_id", "tournament_id", "finished_at"}
