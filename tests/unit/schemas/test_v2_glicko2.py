"""Contract v2's models for `glicko2`: the contract's example events validate, through the one v2
schema (`system` selects the shape) too; events whose fields do not match their kind are
refused; the seeding row's model states the contract's constraints (W8)."""

import json
from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from schemas.rating_changed_v2 import RATING_CHANGED_V2, CcRatingChanged, Glicko2RatingChanged
from schemas.seed_record_glicko2 import Glicko2SeedRecord

# The contract's glicko2 example (docs/systems/glicko2.md, "State and events, with an example"): carol
# seeded, alice's game.
CAROL = (
    '{"event_id":"import/carol/blitz/1","system":"glicko2","game_id":null,"source_event_id":null,'
    '"player_id":"carol","opponent_id":null,"category":"blitz","kind":"imported","score":null,'
    '"rating_before":null,"rating_after":2100.00,"display_before":1500,"display_after":2100,"delta":null,'
    '"seq":1,"state":{"rating":2100.00,"rated_games":120,"seq":1,"deviation":60.00,"volatility":0.060000000,'
    '"last_rated_at":null},"finished_at":null,"detail":{"expected_score":null,"deviation_before":null,'
    '"deviation_after":60.00,"volatility_before":null,"volatility_after":0.060000000}}'
)
ALICE = (
    '{"event_id":"g1/alice","system":"glicko2","game_id":"g1","source_event_id":"ev-1","player_id":"alice",'
    '"opponent_id":"bob","category":"blitz","kind":"rated_game","score":1,"rating_before":1500.00,'
    '"rating_after":1737.14,"display_before":1500,"display_after":1737,"delta":237.14,"seq":1,'
    '"state":{"rating":1737.14,"rated_games":1,"seq":1,"deviation":396.71,"volatility":0.089998199,'
    '"last_rated_at":"2026-11-29T12:00:00Z"},"finished_at":"2026-11-29T12:00:00Z","detail":{"expected_score":0.51,'
    '"deviation_before":500.00,"deviation_after":396.71,"volatility_before":0.090000000,"volatility_after":0.089998199}}'
)


def test_the_contracts_example_events_validate_as_glicko2_events() -> None:
    for text in (CAROL, ALICE):
        event = RATING_CHANGED_V2.validate_json(text)
        assert isinstance(event, Glicko2RatingChanged)
    assert Glicko2RatingChanged.model_validate_json(ALICE).state.volatility == Decimal("0.089998199")


def changed(text: str, **changes: Any) -> dict[str, Any]:
    event: dict[str, Any] = json.loads(text)
    for path, value in changes.items():
        *parents, name = path.split("__")
        target = event
        for parent in parents:
            target = target[parent]
        target[name] = value
    return event


@pytest.mark.parametrize(
    ("text", "changes", "problem"),
    [
        (ALICE, {"rating_after": 1737.15}, "rating_after (differs from state.rating)"),
        (ALICE, {"delta": 237.0}, "delta"),
        (ALICE, {"detail__expected_score": None}, "detail (a rated game sets every field)"),
        (ALICE, {"detail__deviation_after": 396.70}, "detail.deviation_after/volatility_after"),
        (ALICE, {"state__last_rated_at": None}, "state.last_rated_at"),
        (CAROL, {"detail__expected_score": 0.5}, "detail.expected_score"),
        (CAROL, {"detail__deviation_before": 60.0}, "detail.deviation_before/volatility_before"),
        (CAROL, {"game_id": "g1"}, "game fields"),
    ],
)
def test_fields_that_do_not_match_the_kind_are_refused(text: str, changes: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match="not as the contract sets them") as refused:
        Glicko2RatingChanged.model_validate(changed(text, **changes))
    assert problem in str(refused.value)


@pytest.mark.parametrize(
    "changes",
    [
        {"state__volatility": 0.1000000001},
        {"state__volatility": 0},
        {"state__deviation": 44.99},
        {"state__rating": 399},
    ],
)
def test_state_values_outside_the_contracts_bounds_are_refused(changes: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Glicko2RatingChanged.model_validate(changed(ALICE, **changes))


def test_the_system_selects_the_shape() -> None:
    as_cc = changed(ALICE, system="uscf-cc")
    with pytest.raises(ValidationError):
        RATING_CHANGED_V2.validate_python(as_cc)  # a glicko2 state is no uscf-cc state
    with pytest.raises(ValidationError):
        CcRatingChanged.model_validate(json.loads(ALICE))


def row(rating: str, games: int, deviation: str | None, volatility: str | None) -> dict[str, Any]:
    return {
        "player_id": "x",
        "category": "blitz",
        "rating": Decimal(rating),
        "rated_games": games,
        "deviation": None if deviation is None else Decimal(deviation),
        "volatility": None if volatility is None else Decimal(volatility),
    }


def test_the_seeding_rows_model_holds_the_contracts_constraints() -> None:
    Glicko2SeedRecord.model_validate(row("1800", 0, None, None))  # W8: 500.00 and 0.09 then
    Glicko2SeedRecord.model_validate(row("1800", 5, "60", "0.06"))
    for bad in (
        row("1800", 5, None, None),  # games without their deviation and volatility
        row("1800", 0, "60", None),  # one without the other
        row("399.99", 0, None, None),
        row("1800", 0, "44.99", "0.06"),
        row("1800", 0, "60", "0.1000000001"),
        row("1800", 0, "60", "0"),
    ):
        with pytest.raises(ValidationError):
            Glicko2SeedRecord.model_validate(bad)
