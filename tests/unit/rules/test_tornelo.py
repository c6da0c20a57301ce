"""Tornelo's rules, the arithmetic directly (docs/systems/tornelo.md, "Rules and readings"; worked
examples 1, 4, 8 and 12, numbered as in the tests' names): the expected score E against the spec's
table and against an exact computation of every difference from -3000 to 3000, the change formula
on given score differences, the floor, the provisional clamps, the seeding rows
(docs/systems/tornelo.md, "Seeding rows"; example 19's refused rows), and a state that stays the
same size however many games a tournament has. Every expected number is the spec's (or follows
from its formula by hand, as commented). The examples that need games, closes and events are
tests/unit/engine/test_tornelo_examples.py's."""

import json
from decimal import ROUND_FLOOR, Decimal, localcontext
from typing import Any

import pytest

from schemas.tornelo_game import TorneloGameFinished
from tests.support.contract import VALID_GAME
from worker.rules.categories import Category
from worker.rules.hundredths import Hundredths
from worker.rules.interface import Kind, SeedRow
from worker.systems.tornelo.rules import (
    UNSEEN,
    Entry,
    Millionths,
    Parameters,
    TorneloDetail,
    TorneloRules,
    TorneloState,
    expected,
    parse_seed_row,
    period_change,
    settled,
    valued,
)

WIN, DRAW, LOSS = Hundredths(100), Hundredths(50), Hundredths(0)
DEFAULT = Parameters()


def h(points: int) -> Hundredths:
    """A whole-number rating in hundredths: 1800 -> 180000."""
    return Hundredths(points * 100)


def m(text: str) -> Millionths:
    """An E written as the spec writes it: "0.240253" -> 240253."""
    return Millionths(int(Decimal(text) * 1_000_000))


def established(rating: int, modifier: int = 100) -> TorneloState:
    """The examples' established player: 40 games, modifier 1.00 unless given (hundredths)."""
    return TorneloState(h(rating), 40, 7, Hundredths(modifier))


# --- section 6: the expected score (example 1)


@pytest.mark.parametrize(
    ("rating", "opponent", "e"),
    [
        (1800, 2000, "0.240253"),
        (2000, 1800, "0.759747"),
        (1800, 1900, "0.359935"),
        (1500, 1500, "0.500000"),
        (1000, 1400, "0.090909"),
        (1000, 1800, "0.009901"),
    ],
)
def test_example_1_expected_scores(rating: int, opponent: int, e: str) -> None:
    assert expected(opponent - rating) == m(e)
    # The value a recorded game keeps for a player rated `rating` against `opponent` (section 5).
    assert valued(h(rating), h(opponent), WIN, "T").expected == m(e)


def test_two_players_expected_scores_add_up_to_exactly_one() -> None:
    for difference in range(-3000, 3001):
        assert expected(difference) + expected(-difference) == 1_000_000, difference


def test_the_double_precision_e_equals_an_exact_computation_for_every_difference() -> None:
    """Section 6's claim: for every whole difference from -3000 to 3000 the exact E lies more than
    1e-10 from a rounding tie, so IEEE doubles round it as an exact computation does. The exact
    side is decimal at 50 digits: 10^(d/400) = 10^q x 10^(r/400) for d = 400q + r, so only 400
    fractional powers are needed."""
    with localcontext() as context:
        context.prec = 50
        fractional = [Decimal(10) ** (Decimal(r) / 400) for r in range(400)]
        nearest_tie = Decimal(1)
        for difference in range(-3000, 3001):
            q, r = divmod(difference, 400)
            exact = 1_000_000 / (1 + fractional[r] * Decimal(10) ** q)  # E in millionths, unrounded
            below = exact.to_integral_value(rounding=ROUND_FLOOR)
            nearest_tie = min(nearest_tie, abs(exact - below - Decimal("0.5")))
            rounded = below + (1 if exact - below > Decimal("0.5") else 0)
            assert expected(difference) == int(rounded), difference
    # 1e-10 of E is 1e-4 of a millionth.
    assert nearest_tie > Decimal("1e-4")


@pytest.mark.parametrize("difference", [3001, 5000, 100_000, 200_000])
def test_beyond_3000_the_expected_score_rounds_to_0_or_1(difference: int) -> None:
    """Section 6: beyond a difference of 3000, E rounds to 0 or 1. An established rating has no top
    (seeding rows: 100 or more), so a seeded 200000 may meet a 100."""
    assert expected(difference) == 0
    assert expected(-difference) == 1_000_000


# --- section 7.1: the change on a given score difference (example 4, and those of 2, 6, 7)


@pytest.mark.parametrize(
    ("sd", "k", "modifier", "factor", "change"),
    [
        # Example 4: SD exactly 1.000000 has no bonus, whatever the factor.
        ("1.000000", 20, 100, 100, 20),
        ("1.000000", 20, 100, 50, 20),
        ("1.000000", 20, 100, 0, 20),
        # SD 1.25: bonus 0.25 -> 1.5 x 20 = +30; factor 0.50: 0.125 -> 1.375 x 20 = 27.5 -> +28; factor 0: 25.
        ("1.250000", 20, 100, 100, 30),
        ("1.250000", 20, 100, 50, 28),
        ("1.250000", 20, 100, 0, 25),
        # Example 2: SD 1.5, bonus 0.5 -> 2.0 x 20 = +40; factor 0: +30.
        ("1.500000", 20, 100, 100, 40),
        ("1.500000", 20, 100, 0, 30),
        # Example 3: SD 0.5, no bonus; example 6: x 1.50 -> +15.
        ("0.500000", 20, 100, 100, 10),
        ("0.500000", 20, 150, 100, 15),
        # Example 7: half points away from zero.
        ("0.025000", 20, 100, 100, 1),
        ("-0.025000", 20, 100, 100, -1),
        # Example 2's opponents: -0.759747 x 20 = -15.19 -> -15; example 7's 2333: -0.371793 x 10 = -3.72 -> -4.
        ("-0.759747", 20, 100, 100, -15),
        ("-0.371793", 10, 100, 100, -4),
        # No bonus below zero: -1.5 x 20 = -30 with the default factor.
        ("-1.500000", 20, 100, 100, -30),
    ],
)
def test_example_4_the_change_formula_on_a_given_score_difference(
    sd: str, k: int, modifier: int, factor: int, change: int
) -> None:
    sign = -1 if sd.startswith("-") else 1
    assert period_change(sign * m(sd.lstrip("-")), k, Hundredths(modifier), Hundredths(factor)) == change


def test_example_4_through_a_close_with_factor_050() -> None:
    """SD 1.25 from an entry's totals (points 3.00, sum of E 1.750000), settled with factor 0.50."""
    entry = Entry("T", 3, Hundredths(300), m("1.750000"), 3, Hundredths(300), 6000)
    change = settled(established(1800), entry, "rapid", Parameters(bonus_factor=Hundredths(50)))
    assert change.kind is Kind.PERIOD_RATING
    assert change.after.rating == h(1828)
    assert change.after.rated_games == 43
    assert change.detail == TorneloDetail("T", 3, Hundredths(300), m("1.750000"), 20, Hundredths(100))


# --- floor and clamps (examples 8 and 12)


@pytest.mark.parametrize(("rating", "after"), [(110, 100), (105, 100)])
def test_example_8_an_established_rating_never_goes_below_100(rating: int, after: int) -> None:
    loser = settled(established(rating), valued(h(rating), h(rating), LOSS, None), "rapid", DEFAULT)
    assert loser.kind is Kind.PERIOD_RATING
    assert loser.after.rating == h(after)
    assert loser.after.rated_games == 41
    winner = settled(established(rating), valued(h(rating), h(rating), WIN, None), "rapid", DEFAULT)
    assert winner.after.rating == h(rating + 10)  # the floor moves only the loser


def test_example_12_a_provisional_rating_is_clamped_to_100_at_the_bottom() -> None:
    """Unrated U loses to L (300): 300 - 400 = -100 -> 100; the sum keeps the performance."""
    change = settled(UNSEEN, valued(None, h(300), LOSS, None), "rapid", DEFAULT)
    assert change.kind is Kind.PROVISIONAL_RATING
    assert change.after.rating == h(100)
    assert (change.after.rated_games, change.after.performance_sum) == (1, -100)
    assert change.detail == TorneloDetail(None, 1, LOSS)


def test_example_12_a_provisional_rating_is_clamped_to_2700_at_the_top() -> None:
    """Unrated V beats H (2380): 2780 -> 2700, performance_sum 2780."""
    change = settled(UNSEEN, valued(None, h(2380), WIN, None), "rapid", DEFAULT)
    assert change.kind is Kind.PROVISIONAL_RATING
    assert change.after.rating == h(2700)
    assert (change.after.rated_games, change.after.performance_sum) == (1, 2780)


def test_example_12_the_rated_opponent_of_an_unrated_player_counts_nothing() -> None:
    """T15: L (established, 300) against unrated U has no E and no performance: nothing to count."""
    change = settled(established(300), valued(h(300), None, WIN, None), "rapid", DEFAULT)
    assert change.kind is Kind.PERIOD_CLOSED
    assert change.after == established(300)


# --- seeding rows (docs/systems/tornelo.md, "Seeding rows"; example 19: refused rows)


def row(text: str) -> SeedRow:
    return parse_seed_row(text.split(","))


@pytest.mark.parametrize(
    ("text", "rating", "games", "modifier"),
    [
        ("x,rapid,1800,40,", 1800, 40, 100),  # empty modifier: 1.00
        ("x,rapid,1800,40,1.5", 1800, 40, 150),
        ("x,blitz,1800,40,1.50", 1800, 40, 150),
        ("x,bullet,1800,40,0.01", 1800, 40, 1),
        ("x,rapid,1800,40,10.00", 1800, 40, 1000),
        ("x,rapid,1800,40,10", 1800, 40, 1000),
        ("x,rapid,1600,0,", 1600, 0, 100),  # an arbiter's initial rating
        ("x,rapid,100,19,", 100, 19, 100),  # provisional: 100-2700
        ("x,rapid,2700,19,", 2700, 19, 100),
        ("x,rapid,2750,20,", 2750, 20, 100),  # established: 100 or more, no top
        ("x,rapid,100,20,", 100, 20, 100),
    ],
)
def test_valid_seeding_rows(text: str, rating: int, games: int, modifier: int) -> None:
    player_id, category = text.split(",")[:2]
    assert row(text) == SeedRow(player_id, Category(category), h(rating), games, (Hundredths(modifier),))


@pytest.mark.parametrize(
    ("text", "field"),
    [
        # Example 19: a provisional 2750 or 50; an established 90; modifier 0.00 or 10.01.
        ("x,rapid,2750,5,", "rating"),
        ("x,rapid,2750,0,", "rating"),
        ("x,rapid,50,5,", "rating"),
        ("x,rapid,90,20,", "rating"),
        ("x,rapid,1800,40,0.00", "k_modifier"),
        ("x,rapid,1800,40,10.01", "k_modifier"),
        # The syntax of docs/systems/tornelo.md, "Seeding rows": a rating of digits only, an integer count,
        # a decimal modifier.
        ("x,rapid,1800.00,40,", "rating"),
        ("x,rapid,1800.5,40,", "rating"),
        ("x,rapid,-100,40,", "rating"),
        ("x,rapid,+1800,40,", "rating"),
        ("x,rapid,1e3,40,", "rating"),
        ("x,rapid,,40,", "rating"),
        ("x,rapid,1800,-1,", "rated_games"),
        ("x,rapid,1800,4.0,", "rated_games"),
        ("x,rapid,1800,,", "rated_games"),
        ("x,rapid,1800,40,1.", "k_modifier"),
        ("x,rapid,1800,40,.5", "k_modifier"),
        ("x,rapid,1800,40,1.005", "k_modifier"),
        ("x,rapid,1800,40,1e0", "k_modifier"),
        ("x,rapid,1800,40,+1", "k_modifier"),
        ("x,rapid,1800,40,-1", "k_modifier"),
        ("x,correspondence,1800,40,", "category"),
        ("x,classical,1800,40,", "category"),
        ("a/b,rapid,1800,40,", "player_id"),
    ],
)
def test_refused_seeding_rows_name_their_field(text: str, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        row(text)


@pytest.mark.parametrize("text", ["x,rapid,1800,40", "x,rapid,1800,40,1.00,"])
def test_a_seeding_row_has_five_fields(text: str) -> None:
    with pytest.raises(ValueError, match="fields"):
        row(text)


@pytest.mark.parametrize(
    ("text", "performance_sum"),
    [("x,rapid,1500,10,", 15000), ("x,rapid,1600,0,", 0), ("x,rapid,1500,18,", 27000), ("x,rapid,1500,20,", None)],
)
def test_a_seeded_state_averages_its_games_while_provisional(text: str, performance_sum: int | None) -> None:
    """Section 10: performance_sum = rating x rated_games under 20 games, null from 20 (examples 10,
    14, 22)."""
    seeded = TorneloRules().seeded(row(text), UNSEEN)
    assert seeded.performance_sum == performance_sum
    assert seeded.pending == ()


# --- section 5: a state keeps totals


def tournament_game(number: int) -> TorneloGameFinished:
    value: dict[str, Any] = {
        **VALID_GAME,
        "game_id": f"g{number}",
        "event_id": f"e-g{number}",
        "time_control": {"base_seconds": 900, "increment_seconds": 0},
        "white_id": "A",
        "black_id": "B",
        "tournament_id": "T",
    }
    return TorneloGameFinished.model_validate_json(json.dumps(value))


def test_a_state_does_not_grow_with_a_tournaments_games() -> None:
    """A (1800) beats B (1800) 250 times in T: A's state keeps one entry of totals, whose fields are
    the same seven numbers after 1 game as after 250 (only their digits grow)."""
    rules = TorneloRules()
    a, b = established(1800), established(1800)
    sizes = set()
    for number in range(1, 251):
        rated = rules.record(tournament_game(number), "rapid", "T", rules.opening, a, b)
        assert rated.white is not None and rated.black is not None
        a, b = rated.white.after, rated.black.after
        assert len(a.pending) == 1
        sizes.add(len(a.pending[0]))
    assert sizes == {len(Entry._fields)}
    # Totals: 250 games, 250 points, 250 x 0.500000, 250 performances of 1800 + 400.
    assert a.pending == (Entry("T", 250, Hundredths(25000), m("125"), 250, Hundredths(25000), 250 * 2200),)
    assert b.pending == (Entry("T", 250, Hundredths(0), m("125"), 250, Hundredths(0), 250 * 1400),)
    assert all(type(value) is int for value in a.pending[0][1:])
    # Recording changes no rating (section 5).
    assert (a.rating, a.rated_games, b.rating, b.rated_games) == (h(1800), 40, h(1800), 40)
