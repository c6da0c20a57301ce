"""The checks that every system's seeding rows share (docs/contract.md, "Seeding established
ratings"; docs/systems/, "Seeding rows"): the number of fields, the player's id and the category, a count of rated
games, a whole or a two-decimal number. Each raises ValueError("field: why"), the field first, as
the refusal of a seeding file names it; a system's `parse_seed_row` calls them in its own order
(the first wrong field of a row is the one named) and adds its own ranges."""

import re
from collections.abc import Sequence

from schemas.types import ID_PATTERN
from worker.rules.hundredths import Hundredths, parse_fixed2

_DIGITS = re.compile(r"[0-9]+")


def seed_fields(fields: list[str], header: Sequence[str], categories: Sequence[str] | None = None) -> list[str]:
    """`fields`, as many as `header` names; given `categories`, the first an id and the second one
    of them (without, the caller checks both itself)."""
    if len(fields) != len(header):
        raise ValueError(f"expected {len(header)} fields, got {len(fields)}")
    if categories is not None:
        player_id, category = fields[0], fields[1]
        if not re.fullmatch(ID_PATTERN, player_id):
            raise ValueError(f"player_id: {player_id!r} is not an id")
        if category not in categories:
            raise ValueError(f"category: {category!r} is not {_one_of(categories)}")
    return fields


def rated_games(text: str) -> int:
    """A count of rated games: ASCII digits."""
    if not _DIGITS.fullmatch(text):
        raise ValueError(f"rated_games: {text!r} is not an integer >= 0")
    return int(text)


def whole_rating(text: str) -> int:
    """A rating written as a whole number: ASCII digits."""
    if not _DIGITS.fullmatch(text):
        raise ValueError(f"rating: {text!r} is not a whole number (digits only: 1800, not 1800.00)")
    return int(text)


def fixed2(field: str, text: str) -> Hundredths:
    """A non-negative decimal with at most two decimals (`worker.rules.hundredths.parse_fixed2`)."""
    try:
        return parse_fixed2(text)
    except ValueError as e:
        raise ValueError(f"{field}: {e}") from None


def _one_of(values: Sequence[str]) -> str:
    """`a`, `a or b`, `a, b or c`."""
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"
