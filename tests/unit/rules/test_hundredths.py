"""Exact numbers in hundredths: rounding (.5 upwards), the display, and the two-decimal text form."""

import pytest

from worker.rules.hundredths import Hundredths, display, format_fixed2, parse_fixed2, round_half_up


@pytest.mark.parametrize(
    ("numerator", "denominator", "expected"),
    [
        (10, 5, 2),  # exact
        (11, 5, 2),  # 2.2 -> 2
        (12, 5, 2),  # 2.4 -> 2
        (13, 5, 3),  # 2.6 -> 3
        (5, 2, 3),  # 2.5 -> 3: .5 upwards
        (7, 2, 4),  # 3.5 -> 4
        (221550, 100, 2216),  # 2215.50 -> 2216 (rules 12)
        (221549, 100, 2215),  # 2215.49 -> 2215
        (0, 7, 0),
        (1, 3, 0),  # 0.33 -> 0
        (2, 3, 1),  # 0.67 -> 1
        (-5, 2, -2),  # -2.5 -> -2: upwards means towards +inf
        (-7, 5, -1),  # -1.4 -> -1
        (-8, 5, -2),  # -1.6 -> -2
    ],
)
def test_round_half_up_rounds_to_nearest_with_halves_upwards(numerator: int, denominator: int, expected: int) -> None:
    assert round_half_up(numerator, denominator) == expected


@pytest.mark.parametrize("denominator", [0, -1])
def test_round_half_up_refuses_a_non_positive_denominator(denominator: int) -> None:
    with pytest.raises(ValueError):
        round_half_up(1, denominator)


@pytest.mark.parametrize(
    ("hundredths", "shown"),
    [
        (221550, 2216),  # 2215.50 -> 2216 (docs/systems/arena.md, "Rules and readings": Numbers)
        (179960, 1800),  # 1799.60 -> 1800 (the same; its worked example 3)
        (180020, 1800),  # 1800.20 -> 1800 (the same; its worked example 3)
        (180049, 1800),  # 1800.49 -> 1800
        (180050, 1801),  # 1800.50 -> 1801
        (180000, 1800),
        (100000, 1000),
        (99999, 1000),  # 999.99 -> 1000
    ],
)
def test_display_rounds_the_rating_to_an_integer_half_upwards(hundredths: int, shown: int) -> None:
    assert display(Hundredths(hundredths)) == shown


@pytest.mark.parametrize(
    ("hundredths", "text"),
    [
        (180020, "1800.20"),
        (180000, "1800.00"),
        (720, "7.20"),
        (-720, "-7.20"),  # docs/contract.md, "Encoding": "-7.20"
        (64, "0.64"),  # docs/contract.md, "Encoding": "0.64"
        (5, "0.05"),
        (-5, "-0.05"),
        (0, "0.00"),
        (100, "1.00"),
        (-100, "-1.00"),
        (-1, "-0.01"),
        (19280, "192.80"),
    ],
)
def test_format_fixed2_writes_exactly_two_decimals(hundredths: int, text: str) -> None:
    assert format_fixed2(Hundredths(hundredths)) == text


@pytest.mark.parametrize(
    ("text", "hundredths"),
    [
        ("1800", 180000),
        ("1800.5", 180050),
        ("1800.25", 180025),
        ("1800.05", 180005),
        ("1800.00", 180000),
        ("1000", 100000),
        ("0", 0),
    ],
)
def test_parse_fixed2_accepts_decimals_with_at_most_two_places(text: str, hundredths: int) -> None:
    assert parse_fixed2(text) == hundredths


@pytest.mark.parametrize(
    "text",
    [
        "1e3",
        "-5",
        "+5",
        "1800.255",
        " 1800",
        "1800 ",
        "",
        "1800.",
        ".5",
        "1800.2.5",
        "1,800",
        "1_800",
        "１８００",  # full-width digits: not ASCII
        "1800.٥",  # an Arabic-Indic digit in the decimals
        "nan",
        "inf",
    ],
)
def test_parse_fixed2_rejects_anything_else(text: str) -> None:
    with pytest.raises(ValueError):
        parse_fixed2(text)
