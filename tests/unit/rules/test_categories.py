"""Each rated time control of docs/systems/arena.md ("Rules and readings") maps to its category; every other
one is unrated."""

import pytest

from worker.rules.categories import Category, category_of

# The table of docs/systems/arena.md, "Rules and readings" (Categories), copied as written
# ("M+S": M minutes, S seconds).
RATED = {
    Category.RAPID: "15+0, 25+0, 45+0, 10+10, 15+10, 25+10, 45+10",
    Category.BLITZ: "3+0, 5+0, 10+0, 3+2, 3+3, 5+3",
    Category.BULLET: "1+0, 2+0, 1+1, 1+2",
}
CONTROLS = [
    (category, int(minutes), int(seconds))
    for category, text in RATED.items()
    for control in text.split(", ")
    for minutes, seconds in [control.split("+")]
]


def test_the_spec_table_has_17_rated_time_controls() -> None:
    assert len(CONTROLS) == 7 + 6 + 4


@pytest.mark.parametrize(("category", "minutes", "seconds"), CONTROLS)
def test_every_rated_time_control_maps_to_its_category(category: Category, minutes: int, seconds: int) -> None:
    assert category_of(60 * minutes, seconds) == category


@pytest.mark.parametrize(
    ("base_seconds", "increment_seconds"),
    [
        (180, 1),  # 3+1
        (600, 5),  # 10+5
        (0, 0),
        (90, 0),  # 1.5+0
        (900, 5),  # 15+5
        (300, 2),  # 5+2
        (1800, 0),  # 30+0
        (3, 0),  # 3 seconds, not 3 minutes
        (15, 0),
        (60, 10),  # 1+10
        (2700, 30),  # 45+30
        (181, 0),
    ],
)
def test_a_time_control_not_in_the_table_has_no_category(base_seconds: int, increment_seconds: int) -> None:
    assert category_of(base_seconds, increment_seconds) is None


def test_category_names_are_the_contracts() -> None:
    # docs/contract.md, "Output: `arena.rating.changed.v1`": category is "rapid", "blitz" or "bullet".
    assert [str(c) for c in Category] == ["rapid", "blitz", "bullet"]
