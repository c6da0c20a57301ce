"""Contract v2's models for `uscf-cc`: the contract's example events validate, and so does every
event the encoder writes; events whose fields do not match their kind are refused; the exported
schemas state the input's and the seeding row's constraints."""

import json
from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from schemas.export import SCHEMA_DIR
from schemas.rating_changed_v2 import CcRatingChanged
from schemas.seed_record_cc import CcSeedRecord
from tests.support.v2_examples import CONTRACT_USCF_CC
from worker.systems.registry import USCF_CC


def events() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CONTRACT_USCF_CC]


def test_the_contracts_example_events_validate() -> None:
    for event in events():
        CcRatingChanged.model_validate(event)


@pytest.mark.parametrize(
    ("index", "changes", "problem"),
    [
        (1, {"kind": "game_credit"}, "delta (a game credit changes nothing)"),
        (1, {"kind": "first_rating"}, "rating_before"),
        (1, {"rating_after": 1609.0}, "rating_after (differs from state.rating)"),
        (1, {"delta": 9.0}, "delta"),
        (
            2,
            {
                "detail": {"k_factor": 16},
                "kind": "game_credit",
                "rating_after": 1400.0,
                "delta": 0.0,
                "state": {"rating": 1400.0, "rated_games": 11, "seq": 2},
            },
            "detail.k_factor",
        ),
        (0, {"game_id": "g1"}, "game fields"),
        (0, {"seq": 2}, "seq (differs from state.seq)"),
        (
            1,
            {
                "kind": "first_rating",
                "rating_before": None,
                "delta": None,
                "rating_after": None,
                "detail": {"k_factor": None},
                "state": {"rating": None, "rated_games": 1, "seq": 2},
            },
            "rating_after",
        ),
    ],
)
def test_fields_that_do_not_match_the_kind_are_refused(index: int, changes: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        CcRatingChanged.model_validate({**events()[index], **changes})


def test_k_factor_is_a_tier_or_null_and_the_category_correspondence() -> None:
    with pytest.raises(ValidationError):
        CcRatingChanged.model_validate({**events()[1], "detail": {"k_factor": 20}})
    with pytest.raises(ValidationError):
        CcRatingChanged.model_validate({**events()[1], "category": "blitz"})


def test_the_exported_input_and_seed_schemas_state_the_contract() -> None:
    game = json.loads((SCHEMA_DIR / "arena.game.finished.v1.correspondence.schema.json").read_text())
    assert game["properties"]["forfeit_kind"]["enum"] == ["ordinary", "special"]
    assert "forfeit_kind" not in game["required"]
    seed = json.loads((SCHEMA_DIR / "seed-record.uscf-cc.schema.json").read_text())
    assert seed["properties"]["category"]["const"] == "correspondence"
    assert seed["properties"]["rated_games"]["minimum"] == 1
    assert "minimum" not in seed["properties"]["rating"]  # no floor (U12)
    CcSeedRecord(player_id="x", category="correspondence", rating=Decimal("-100.50"), rated_games=1)
    with pytest.raises(ValidationError):
        CcSeedRecord(player_id="x", category="correspondence", rating=Decimal(1800), rated_games=0)


def test_every_event_the_encoder_writes_validates() -> None:
    from worker.engine.engine import Engine  # noqa: PLC0415
    from worker.rules.hundredths import Hundredths, Points  # noqa: PLC0415
    from worker.rules.interface import SeedRow  # noqa: PLC0415
    from worker.systems.uscf_cc.rules import CcState  # noqa: PLC0415

    engine = Engine(USCF_CC, Points(1200))
    for rating, credits, before in ((160000, 40, CcState()), (-10050, 1, CcState(Hundredths(5), 3, 4))):
        seeded = engine.seed(SeedRow("p", "correspondence", Hundredths(rating), credits), before, force=True)
        assert seeded.update is not None
        CcRatingChanged.model_validate_json(seeded.update.payload)
