"""The seeding row's schema against docs/contract.md ("Seeding established ratings"): SeedRecord bounds a
seeding row."""

from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from schemas.seed_record import SeedRecord


def seed_record(**changes: Any) -> SeedRecord:
    fields: dict[str, Any] = {"player_id": "alice", "category": "blitz", "rating": Decimal("1800.00"), "rated_games": 0}
    return SeedRecord(**{**fields, **changes})


@pytest.mark.parametrize("rating", ["1000", "1000.00", "1000.5", "1000.25", "1800.01", "2999.99"])
def test_seed_rating_at_least_1000_with_at_most_two_decimals_is_valid(rating: str) -> None:
    assert seed_record(rating=Decimal(rating)).rating == Decimal(rating)


@pytest.mark.parametrize("rating", ["999.99", "999", "0", "-1000", "1000.001", "1800.255", "NaN", "Infinity"])
def test_seed_rating_under_1000_or_with_three_decimals_is_invalid(rating: str) -> None:
    with pytest.raises(ValidationError):
        seed_record(rating=Decimal(rating))


@pytest.mark.parametrize("category", ["rapid", "blitz", "bullet"])
def test_seed_category_is_one_of_the_three(category: str) -> None:
    assert seed_record(category=category).category == category


@pytest.mark.parametrize("category", ["classical", "Blitz", ""])
def test_seed_other_categories_are_invalid(category: str) -> None:
    with pytest.raises(ValidationError):
        seed_record(category=category)


@pytest.mark.parametrize("rated_games", [0, 1, 30, 10_000])
def test_seed_rated_games_is_an_integer_at_least_0(rated_games: int) -> None:
    assert seed_record(rated_games=rated_games).rated_games == rated_games


@pytest.mark.parametrize("rated_games", [-1, 1.0, "3", True])
def test_seed_rated_games_negative_or_not_an_integer_is_invalid(rated_games: Any) -> None:
    with pytest.raises(ValidationError):
        seed_record(rated_games=rated_games)


@pytest.mark.parametrize("player_id", ["a/b", "a:b", "é", "", "x" * 129, "p\n"])
def test_seed_player_id_must_be_a_valid_id(player_id: str) -> None:
    with pytest.raises(ValidationError):
        seed_record(player_id=player_id)


@pytest.mark.parametrize(("raw", "rating"), [(b"1000", "1000"), (b"1000.25", "1000.25"), (b"1800.5", "1800.5")])
def test_seed_record_from_json_accepts_a_rating_of_at_least_1000(raw: bytes, rating: str) -> None:
    record = SeedRecord.model_validate_json(
        b'{"player_id":"p","category":"bullet","rating":' + raw + b',"rated_games":3}'
    )
    assert record.rating == Decimal(rating)


@pytest.mark.parametrize("raw", [b"999.99", b"1000.255", b"-1000"])
def test_seed_record_from_json_refuses_under_1000_or_three_decimals(raw: bytes) -> None:
    with pytest.raises(ValidationError):
        SeedRecord.model_validate_json(b'{"player_id":"p","category":"bullet","rating":' + raw + b',"rated_games":3}')
