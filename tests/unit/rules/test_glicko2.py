"""Glicko-2 game by game (docs/systems/glicko2.md, "Rules and readings"): Glickman's vector, lichess's
vectors and worked examples W1-W8 (numbered in the comments below), each written out by hand (never
from the code's output), through the functions the service runs (`pre_game`, `rating_period`, `rate`,
`refusal`, `elapsed_days`, `parse_seed_row`, `rounded`); and the seeding rows (docs/systems/glicko2.md,
"Seeding rows")."""

import math
from datetime import UTC, datetime
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.engine.engine import Engine, SeedVerdict
from worker.rules.finished_at import refusal
from worker.rules.hundredths import Hundredths, Points
from worker.rules.interface import Kind, SeedRow
from worker.systems.glicko2.rules import (
    COLOUR_ADVANTAGE,
    GlickoRules,
    GlickoState,
    Nanos,
    Player,
    Result,
    elapsed_days,
    parse_seed_row,
    pre_game,
    rate,
    rating_period,
    rounded,
)
from worker.systems.registry import GLICKO2

AT = "2026-11-29T12:00:00Z"  # section 12.3: every worked example's finished_at unless said
HALF = COLOUR_ADVANTAGE / 2
SCORE = {"1-0": (1.0, 0.0), "0-1": (0.0, 1.0), "1/2": (0.5, 0.5)}
ENGINE = Engine(GLICKO2, Points(1200))


def h(text: str) -> Hundredths:
    """ "1737.14" -> 173714 (the tables' numbers, exactly)."""
    whole, _, frac = text.partition(".")
    return Hundredths(int(whole) * 100 + int(frac.ljust(2, "0")))


def n(text: str) -> Nanos:
    """ "0.089998199" -> 89998199."""
    whole, _, frac = text.partition(".")
    return Nanos(int(whole) * 10**9 + int(frac.ljust(9, "0")))


def ms(year: int, month: int, day: int, hour: int, minute: int = 0, second: int = 0) -> int:
    """A record timestamp in ms since 1970 (computed by `datetime`, independently of the rules)."""
    return int(datetime(year, month, day, hour, minute, second, tzinfo=UTC).timestamp()) * 1000


# --- 12.1 Glickman's example: tau 0.5, one period of three games, one period added in step 6

GLICKMAN = Player(1500.0, 200.0, 0.06)
OPPONENTS = [(1400.0, 30.0, 1.0), (1550.0, 100.0, 0.0), (1700.0, 300.0, 0.0)]  # r, RD, s
GLICKMAN_RESULTS = [Result(Player(r, rd, 0.06), s, 0.0) for r, rd, s in OPPONENTS]


def test_glickmans_vector_the_paper_and_the_doubles() -> None:
    c = rating_period(GLICKMAN, GLICKMAN_RESULTS, tau=0.5, periods_added=1)
    # The paper's values (4-decimal intermediates), within 0.01 / 0.01 / 1e-5.
    assert c.rating == pytest.approx(1464.06, abs=0.01)
    assert c.deviation == pytest.approx(151.52, abs=0.01)
    assert c.volatility == pytest.approx(0.05999, abs=1e-5)
    # In doubles, within 1e-4 / 1e-4 / 1e-7.
    assert c.rating == pytest.approx(1464.0507, abs=1e-4)
    assert c.deviation == pytest.approx(151.5165, abs=1e-4)
    assert c.volatility == pytest.approx(0.0599960, abs=1e-7)


def test_glickmans_vector_expected_scores_and_g_as_the_paper() -> None:
    c = rating_period(GLICKMAN, GLICKMAN_RESULTS, tau=0.5, periods_added=1)
    assert len(c.expected) == 3
    for e, paper in zip(c.expected, (0.639, 0.432, 0.303), strict=True):
        assert e == pytest.approx(paper, abs=0.0005)
    # g(phi_j) as the update used it: E = 1 / (1 + exp(-g (mu - mu_j))), so g = logit(E) / (mu - mu_j).
    for e, (r, _, _), paper in zip(c.expected, OPPONENTS, (0.9955, 0.9531, 0.7242), strict=True):
        g = math.log(e / (1 - e)) / ((1500 - r) / 173.7178)
        assert g == pytest.approx(paper, abs=0.00005)


def test_no_growth_with_no_games_step_6_alone() -> None:
    """Step 6 alone adds one period's sigma^2: RD' = sqrt(200^2 + (173.7178 x 0.06)^2). In the
    service a period is 1 / 0.21436 days of growth before the next game (step 1)."""
    one_period = pre_game(1500.0, 200.0, 0.06, 1 / 0.21436)
    assert one_period.deviation == pytest.approx(math.sqrt(200**2 + (173.7178 * 0.06) ** 2), abs=1e-9)
    assert one_period.deviation == pytest.approx(200.2714, abs=1e-4)
    # No time, no growth: RD0 is RD up to its last bits (G16); the rating and sigma are as stored.
    still = pre_game(1500.0, 200.0, 0.06, 0.0)
    assert still.deviation == pytest.approx(200.0, rel=1e-14)
    assert (still.rating, still.volatility) == (1500.0, 0.06)


# --- 12.2 lichess's vectors: one game as one period, no period added (tau 0.75)

# (white r/RD/sigma, black r/RD/sigma, result,
#  without advantage: (white r, black r, white RD, black RD, white sigma, black sigma, sigma tolerance),
#  with advantage: the same). RD and sigma not repeated in a row are the row above's for the same
#  players; None: not stated (RD is independent of the result: the rows above give it).
P1, P2 = (1500.0, 350.0, 0.06), (1500.0, 350.0, 0.06)
P3, P4 = (1400.0, 79.0, 0.06), (1550.0, 110.0, 0.065)
P5, P6 = (1200.0, 60.0, 0.053), (1850.0, 200.0, 0.062)
Side = tuple[float, float, float, float, float, float, float]
LICHESS: list[tuple[tuple[float, float, float], tuple[float, float, float], str, Side, Side]] = [
    (P1, P2, "1-0", (1662.21, 1337.79, 290.2305, 290.2305, 0.0599993, 0.0599993, 1e-7),
     (1658.56, 1341.44, 290.2538, 290.2538, 0.0599992, 0.0599992, 1e-7)),
    (P1, P2, "0-1", (1337.79, 1662.21, 290.2305, 290.2305, 0.0599993, 0.0599993, 1e-7),
     (1334.08, 1665.92, 290.2538, 290.2538, 0.0599993, 0.0599993, 1e-7)),
    (P1, P2, "1/2", (1500.00, 1500.00, 290.2305, 290.2305, 0.0599977, 0.0599977, 1e-7),
     (1496.32, 1503.68, 290.2538, 290.2538, 0.0599977, 0.0599977, 1e-7)),
    (P3, P4, "1-0", (1422.63, 1506.32, 77.4956, 105.8706, 0.06, 0.065, 1e-5),
     (1422.16, 1507.28, 77.4603, 105.7716, 0.06, 0.065, 1e-5)),
    (P3, P4, "0-1", (1389.99, 1568.90, 77.4956, 105.8706, 0.06, 0.065, 1e-5),
     (1389.55, 1569.75, 77.4603, 105.7716, 0.06, 0.065, 1e-5)),
    (P3, P4, "1/2", (1406.31, 1537.61, 77.4956, 105.8706, 0.06, 0.065, 1e-5),
     (1405.85, 1538.51, 77.4603, 105.7716, 0.06, 0.065, 1e-5)),
    (P5, P6, "1-0", (1216.73, 1635.99, 59.9006, 196.9873, 0.053013, 0.062028, 1e-6),
     (1216.68, 1636.77, 59.8952, 196.7954, 0.053013, 0.062028, 1e-6)),
    (P5, P6, "0-1", (1199.29, 1855.42, 59.9006, 196.9873, 0.052999, 0.061999, 1e-6),
     (1199.25, 1855.77, 59.8952, 196.7954, 0.052999, 0.061999, 1e-6)),
    (P5, P6, "1/2", (1208.01, 1745.71, 59.9006, 196.9873, 0.053002, 0.062006, 1e-6),
     (1207.97, 1746.27, 59.8952, 196.7954, 0.053002, 0.062006, 1e-6)),
]  # fmt: skip


def one_game(
    white: tuple[float, float, float], black: tuple[float, float, float], result: str, shift: float
) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """Both players' r', RD', sigma' (steps 1-5, before the limits), from the values before the game."""
    w, b = pre_game(*white, 0.0), pre_game(*black, 0.0)
    ws, bs = SCORE[result]
    cw = rating_period(w, [Result(b, ws, shift)])
    cb = rating_period(b, [Result(w, bs, -shift)])
    return (cw.rating, cw.deviation, cw.volatility), (cb.rating, cb.deviation, cb.volatility)


@pytest.mark.parametrize("advantage", [False, True], ids=["without advantage", "with advantage"])
@pytest.mark.parametrize(
    ("white", "black", "result", "without", "with_"),
    [pytest.param(*row, id=f"{row[0][0]:.0f}-{row[1][0]:.0f} {row[2]}") for row in LICHESS],
)
def test_lichess_vectors(
    white: tuple[float, float, float],
    black: tuple[float, float, float],
    result: str,
    without: Side,
    with_: Side,
    advantage: bool,
) -> None:
    expected = with_ if advantage else without
    (wr, wrd, wsig), (br, brd, bsig) = one_game(white, black, result, HALF if advantage else 0.0)
    rating_w, rating_b, rd_w, rd_b, sigma_w, sigma_b, sigma_tolerance = expected
    assert wr == pytest.approx(rating_w, abs=0.005) and br == pytest.approx(rating_b, abs=0.005)
    assert wrd == pytest.approx(rd_w, abs=0.00005) and brd == pytest.approx(rd_b, abs=0.00005)
    assert wsig == pytest.approx(sigma_w, abs=sigma_tolerance) and bsig == pytest.approx(sigma_b, abs=sigma_tolerance)


def test_the_colour_advantage_is_lichess_standard() -> None:
    assert COLOUR_ADVANTAGE == 11.782457


def test_lichess_rating_calculator_test() -> None:
    """`RatingCalculatorTest`: 1500/500/0.09 each, white wins, no advantage."""
    (wr, wrd, wsig), (br, brd, bsig) = one_game((1500.0, 500.0, 0.09), (1500.0, 500.0, 0.09), "1-0", 0.0)
    assert wr == pytest.approx(1741, abs=1) and br == pytest.approx(1258, abs=1)
    assert wrd == pytest.approx(396, abs=1) and brd == pytest.approx(396, abs=1)
    assert wsig == pytest.approx(0.0899983, abs=1e-7) and bsig == pytest.approx(0.0899983, abs=1e-7)


# --- 12.3 the worked examples, through `rate`: stored values, kinds, E, detail


NEW = GlickoState()


def after(r: str, rd: str, sigma: str, games: int, last: str | None = AT, seq: int = 0) -> GlickoState:
    return GlickoState(h(r), h(rd), n(sigma), games, last, seq)


def test_a_new_rating_is_1500_500_0_09_with_no_games_and_no_last_rated_at() -> None:
    assert GlickoState() == GlickoState(h("1500.00"), h("500.00"), n("0.09"), 0, None, 0)
    assert GlickoRules().unseen == GlickoState()


# (#, result, white after, black after, white E, black E); both new; E of step 2 does not depend
# on the result, so W1d's and W1b's are W1's.
NEW_PLAYERS = [
    ("W1", "1-0", ("1737.14", "396.71", "0.089998199"), ("1262.86", "396.71", "0.089998199")),
    ("W1d", "1/2-1/2", ("1495.63", "396.71", "0.089995419"), ("1504.37", "396.71", "0.089995419")),
    ("W1b", "0-1", ("1254.13", "396.71", "0.089998407"), ("1745.87", "396.71", "0.089998407")),
]


@pytest.mark.parametrize(("white_after", "black_after", "result"), [(w, b, r) for _, r, w, b in NEW_PLAYERS])
def test_w1_two_new_players(white_after: tuple[str, str, str], black_after: tuple[str, str, str], result: str) -> None:
    white, black = rate(NEW, NEW, AT, result)
    assert white.after == after(*white_after, 1)
    assert black.after == after(*black_after, 1)
    assert white.kind is black.kind is Kind.RATED_GAME
    assert (white.expected_score, black.expected_score) == (h("0.51"), h("0.49"))
    # detail: RD0 and sigma0 the game used: a new player's, no growth.
    assert white.detail == black.detail == (h("500.00"), n("0.09"))
    assert white.k_factor is black.k_factor is None


def test_w3_growth_over_a_year_for_white_none_for_black() -> None:
    white = GlickoState(h("1500"), h("60"), n("0.06"), 100, "2025-11-29T12:00:00Z", 9)
    black = GlickoState(h("1500"), h("60"), n("0.06"), 100, "2026-11-29T12:00:00Z", 4)
    assert elapsed_days(white.last_rated_at, AT) == 365.0  # exactly
    assert elapsed_days(black.last_rated_at, AT) == 0.0
    assert pre_game(1500.0, 60.0, 0.06, 365.0).deviation == pytest.approx(110.0008, abs=0.00005)
    w, b = rate(white, black, AT, "1-0")
    assert w.after == after("1530.16", "105.04", "0.059999016", 101, seq=9)
    assert b.after == after("1490.78", "59.22", "0.059999427", 101, seq=4)
    assert w.detail == (h("110.00"), n("0.06"))  # RD0 110.0008, published 110.00
    assert b.detail == (h("60.00"), n("0.06"))
    assert w.kind is b.kind is Kind.RATED_GAME


def test_w4_the_700_limit_and_the_deviation_floor() -> None:
    master = GlickoState(h("2900"), h("45"), n("0.06"), 500, None, 12)
    # The formula, before the limits (step 5).
    (wr, _, _), (_, brd, _) = one_game((1500.0, 500.0, 0.09), (2900.0, 45.0, 0.06), "1-0", HALF)
    assert wr == pytest.approx(2919.91, abs=0.005)  # +1419.91
    assert brd == pytest.approx(44.99, abs=0.005)
    w, b = rate(NEW, master, AT, "1-0")
    assert w.after == after("2200.00", "499.26", "0.090100038", 1)  # +700
    assert b.after == after("2893.87", "45.00", "0.060008275", 501, seq=12)
    # E 0.000367 and 0.986081 (the formula), published 0.00 and 0.99.
    w0, b0 = pre_game(1500.0, 500.0, 0.09, 0.0), pre_game(2900.0, 45.0, 0.06, 0.0)
    assert rating_period(w0, [Result(b0, 1.0, HALF)]).expected[0] == pytest.approx(0.000367, abs=5e-7)
    assert rating_period(b0, [Result(w0, 0.0, -HALF)]).expected[0] == pytest.approx(0.986081, abs=5e-7)
    assert (w.expected_score, b.expected_score) == (h("0.00"), h("0.99"))
    assert w.detail == (h("500.00"), n("0.09")) and b.detail == (h("45.00"), n("0.06"))


def test_w5_the_rating_floor_and_the_deviation_floor() -> None:
    white = GlickoState(h("430"), h("150"), n("0.06"), 30, None, 30)
    black = GlickoState(h("430"), h("45"), n("0.06"), 30, None, 30)
    (wr, _, _), (_, brd, _) = one_game((430.0, 150.0, 0.06), (430.0, 45.0, 0.06), "0-1", HALF)
    assert wr == pytest.approx(373.96, abs=0.005)
    assert brd == pytest.approx(44.70, abs=0.005)
    w, b = rate(white, black, AT, "0-1")
    assert w.after == after("400.00", "137.94", "0.059999395", 31, seq=30)
    assert b.after == after("435.35", "45.00", "0.060000293", 31, seq=30)


def test_w2_growth_alone() -> None:
    assert pre_game(1500.0, 60.0, 0.06, 365.0).deviation == pytest.approx(110.0008, abs=0.00005)
    formula = 173.7178 * math.sqrt((60 / 173.7178) ** 2 + 365 * 0.21436 * 0.06**2)
    assert pre_game(1500.0, 60.0, 0.06, 365.0).deviation == pytest.approx(formula, rel=1e-14)
    assert pre_game(1500.0, 300.0, 0.09, 3650.0).deviation == 500.0  # capped at 500.00


def test_step_1_limits_the_values_a_game_uses() -> None:
    """sigma0 = min(sigma, 0.1), RD0 within [45, 500], r0 = max(r, 400)."""
    used = pre_game(350.0, 30.0, 0.2, 0.0)
    assert (used.rating, used.deviation, used.volatility) == (400.0, 45.0, 0.1)
    assert pre_game(1500.0, 600.0, 0.05, 0.0).deviation == 500.0


# --- W7 (docs/systems/glicko2.md, "Input"): instants, elapsed times, the two checks of finished_at

RECORD = ms(2026, 11, 29, 12)  # 2026-11-29T12:00:00.000Z


def test_w7_exactly_the_allowance_is_valid_one_millisecond_more_is_refused() -> None:
    assert refusal("2026-11-29T13:00:00Z", RECORD, 3600) is None
    assert refusal("2026-11-29T14:00:00+01:00", RECORD, 3600) is None  # the same instant
    assert refusal("2026-11-29T13:00:00.000000000Z", RECORD, 3600) is None
    for late in ("2026-11-29T13:00:00.001Z", "2026-11-29T13:00:00.000000001Z", "2026-11-29T14:00:00.001+01:00"):
        why = refusal(late, RECORD, 3600)
        assert why is not None and "finished_at" in why and "\n" not in why, late
    # The allowance is the setting's: with 0, a game a millisecond after its record is refused.
    assert refusal("2026-11-29T12:00:00Z", RECORD, 0) is None
    assert refusal("2026-11-29T12:00:00.001Z", RECORD, 0) is not None
    # A record's timestamp in milliseconds counts to the millisecond.
    assert refusal("2026-11-29T13:00:00.124Z", RECORD + 124, 3600) is None
    assert refusal("2026-11-29T13:00:00.1241Z", RECORD + 124, 3600) is not None


def test_w7_without_a_record_timestamp_there_is_no_future_check() -> None:
    for no_timestamp in (None, -1):
        assert refusal("2999-01-01T00:00:00Z", no_timestamp, 3600) is None
        assert refusal("2026-11-29T13:00:00.001Z", no_timestamp, 3600) is None


@pytest.mark.parametrize("record", [None, -1, RECORD, ms(9999, 12, 31, 23, 59, 59)])
def test_w7_instants_outside_the_years_0000_9999_are_refused_with_or_without_a_record_timestamp(
    record: int | None,
) -> None:
    for outside in ("0000-01-01T00:10:00+01:00", "9999-12-31T23:30:00-01:00"):
        why = refusal(outside, record, 3600)
        assert why is not None and "finished_at" in why and "\n" not in why, (outside, record)


def test_w7_the_first_and_last_instants_are_valid() -> None:
    for inside in ("0000-01-01T00:00:00Z", "0000-01-01T00:10:00-01:00", "9999-12-31T23:59:60Z"):
        assert refusal(inside, None, 3600) is None, inside
    for past in ("0000-01-01T00:00:00Z", "0000-01-01T00:10:00-01:00"):
        assert refusal(past, RECORD, 3600) is None, past
    assert refusal("9999-12-31T23:59:60Z", ms(9999, 12, 31, 23, 59, 59), 3600) is None
    assert refusal("9999-12-31T23:59:60.999999999Z", ms(9999, 12, 31, 23, 59, 59), 3600) is None


def test_w7_elapsed_times_from_every_digit_converted_once() -> None:
    assert elapsed_days("2026-11-29T12:00:00.25Z", "2026-11-29T12:00:01Z") == float(Fraction(75, 100) / 86400)
    exact = Fraction(876543211, 10**9) / 86400
    assert elapsed_days("2026-11-29T12:00:00.123456789Z", "2026-11-29T12:00:01Z") == float(exact)
    assert elapsed_days("2026-11-29T12:00:00.5Z", "2026-12-29T12:00:00.5Z") == 30.0
    w6_g4 = Fraction(30 * 86400 * 2 + 1, 2) / 86400  # W6's g4: 30 days and 0.5 s
    assert elapsed_days("2026-11-29T12:00:00Z", "2026-12-29T12:00:00.5Z") == float(w6_g4)
    assert elapsed_days("2025-11-29T12:00:00Z", AT) == 365.0


def test_elapsed_days_is_0_without_a_last_game_and_for_a_game_not_later() -> None:
    assert elapsed_days(None, AT) == 0.0
    assert elapsed_days(AT, AT) == 0.0
    assert elapsed_days(AT, "2026-11-29T13:00:00+01:00") == 0.0  # the same instant, written differently
    assert elapsed_days(AT, "2026-11-28T12:00:00Z") == 0.0  # out of order: earlier
    assert elapsed_days("2026-11-29T12:00:00.5Z", "2026-11-29T12:00:00.49999Z") == 0.0
    assert elapsed_days("2026-11-29T13:00:00+01:00", "2026-11-30T12:00:00Z") == 1.0  # the offset applied


def test_w7_the_leap_second_counts_as_59_with_its_fraction() -> None:
    leap, same = "2016-12-31T23:59:60.5Z", "2016-12-31T23:59:59.5Z"
    assert elapsed_days(leap, same) == elapsed_days(same, leap) == 0.0
    assert elapsed_days("2016-12-31T23:59:59Z", leap) == float(Fraction(1, 2 * 86400))
    assert elapsed_days(leap, "2017-01-01T00:00:00Z") == float(Fraction(1, 2 * 86400))
    assert elapsed_days("2016-12-31T23:59:59.75Z", leap) == 0.0  # :60.5 is :59.5, earlier than :59.75


def test_year_0000_counts_as_any_other() -> None:
    assert elapsed_days("0000-01-01T00:00:00Z", "0001-01-01T00:00:00Z") == 366.0  # 0000 is a leap year
    assert elapsed_days("0000-01-01T00:10:00-01:00", "0000-01-01T01:10:00Z") == 0.0
    assert elapsed_days("0000-02-28T00:00:00Z", "0000-03-01T00:00:00Z") == 2.0


def test_last_rated_at_moves_to_a_later_or_equal_instant_never_back() -> None:
    played = GlickoState(h("1737.14"), h("396.71"), n("0.089998199"), 1, AT, 1)
    same_instant = "2026-11-29T13:00:00+01:00"
    assert rate(played, NEW, same_instant, "1-0")[0].after.last_rated_at == same_instant  # the new string
    earlier = "2026-11-28T12:00:00Z"
    white, black = rate(played, NEW, earlier, "1-0")
    assert white.after.last_rated_at == AT and black.after.last_rated_at == earlier
    later = "2026-11-29T12:00:00.001Z"
    assert rate(played, NEW, later, "1-0")[0].after.last_rated_at == later


# --- W8: the seeding rows (docs/systems/glicko2.md, "Seeding rows")

HEADER = ["player_id", "category", "rating", "rated_games", "deviation", "volatility"]


def row(text: str) -> list[str]:
    return text.split(",")


def test_the_seeding_header() -> None:
    assert list(GlickoRules().seed_header) == HEADER


def test_w8_empty_deviation_and_volatility_mean_500_and_0_09() -> None:
    seeded = parse_seed_row(row("x,blitz,1800,0,,"))
    assert (seeded.player_id, seeded.category, seeded.rating, seeded.rated_games) == ("x", "blitz", h("1800"), 0)
    state = GlickoRules().seeded(seeded, NEW)
    assert state == GlickoState(h("1800.00"), h("500.00"), n("0.09"), 0, None, 0)
    given_ = GlickoRules().seeded(parse_seed_row(row("x,blitz,1800,0,500,0.09")), NEW)
    assert given_ == state


def test_w8_reimporting_skips_a_different_row_is_refused_unless_forced() -> None:
    first = ENGINE.seed(parse_seed_row(row("x,blitz,1800,0,,")), NEW)
    assert first.verdict is SeedVerdict.IMPORTED and first.update is not None
    current = first.update.state
    assert current == GlickoState(h("1800.00"), h("500.00"), n("0.09"), 0, None, 1)
    for same in ("x,blitz,1800,0,,", "x,blitz,1800,0,500,0.09", "x,blitz,1800.00,0,500.00,0.090000000"):
        assert ENGINE.seed(parse_seed_row(row(same)), current).verdict is SeedVerdict.UNCHANGED, same
        assert ENGINE.seed(parse_seed_row(row(same)), current, force=True).verdict is SeedVerdict.UNCHANGED, same
    other = parse_seed_row(row("x,blitz,1700,0,,"))
    assert ENGINE.seed(other, current).verdict is SeedVerdict.REFUSED
    forced = ENGINE.seed(other, current, force=True)
    assert forced.verdict is SeedVerdict.IMPORTED and forced.update is not None
    assert forced.update.state == GlickoState(h("1700.00"), h("500.00"), n("0.09"), 0, None, 2)


def test_a_rating_never_seen_is_seeded_even_with_the_defaults() -> None:
    seeded = ENGINE.seed(parse_seed_row(row("x,blitz,1500,0,,")), NEW)
    assert seeded.verdict is SeedVerdict.IMPORTED and seeded.update is not None
    assert seeded.update.state == GlickoState(seq=1)


def test_a_row_equal_to_a_played_state_is_refused_its_last_rated_at_is_not_null() -> None:
    played = GlickoState(h("1800"), h("500"), n("0.09"), 0, AT, 3)
    assert ENGINE.seed(parse_seed_row(row("x,blitz,1800,0,,")), played).verdict is SeedVerdict.REFUSED


VALID_ROWS = [
    ("x,blitz,1800,0,,", (h("1800"), 0, h("500"), n("0.09"))),
    ("x,rapid,400,0,,", (h("400"), 0, h("500"), n("0.09"))),
    ("x,bullet,400.00,3,45,0.1", (h("400"), 3, h("45"), n("0.1"))),
    ("x,blitz,2100.00,120,60.00,0.06", (h("2100"), 120, h("60"), n("0.06"))),
    ("x,blitz,1800.5,1,500.00,0.000000001", (h("1800.50"), 1, h("500"), Nanos(1))),
    ("x,blitz,1800.25,0,45.01,0.060000001", (h("1800.25"), 0, h("45.01"), Nanos(60_000_001))),
    ("x,blitz,1800,0,100,0.100000000", (h("1800"), 0, h("100"), n("0.1"))),
]


@pytest.mark.parametrize(("text", "values"), VALID_ROWS)
def test_valid_seeding_rows(text: str, values: tuple[Hundredths, int, Hundredths, Nanos]) -> None:
    seeded = parse_seed_row(row(text))
    assert isinstance(seeded, SeedRow)
    rating, games, deviation, volatility = values
    state = GlickoRules().seeded(seeded, NEW)
    assert state == GlickoState(rating, deviation, volatility, games, None, 0)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("x,blitz,399.99,0,,", "rating"),
        ("x,blitz,0,0,,", "rating"),
        ("x,blitz,1800.,0,,", "rating"),
        ("x,blitz,+1800,0,,", "rating"),
        ("x,blitz,-1800,0,,", "rating"),
        ("x,blitz, 1800,0,,", "rating"),
        ("x,blitz,1e3,0,,", "rating"),
        ("x,blitz,.5,0,,", "rating"),
        ("x,blitz,1800.125,0,,", "rating"),
        ("x,blitz,1800,-1,,", "rated_games"),
        ("x,blitz,1800,1.0,,", "rated_games"),
        ("x,blitz,1800,+1,,", "rated_games"),
        ("x,blitz,1800,0,44.99,0.06", "deviation"),
        ("x,blitz,1800,0,500.01,0.06", "deviation"),
        ("x,blitz,1800,0,45.,0.06", "deviation"),
        ("x,blitz,1800,0,60.001,0.06", "deviation"),
        ("x,blitz,1800,0,60,0", "volatility"),
        ("x,blitz,1800,0,60,0.0", "volatility"),
        ("x,blitz,1800,0,60,0.000000000", "volatility"),
        ("x,blitz,1800,0,60,0.100000001", "volatility"),
        ("x,blitz,1800,0,60,0.11", "volatility"),
        ("x,blitz,1800,0,60,1", "volatility"),
        ("x,blitz,1800,0,60,0.0600000001", "volatility"),  # ten decimals
        ("x,blitz,1800,0,60,0.0000000001", "volatility"),  # ten decimals, not 10^-9 read wrong
        ("x,blitz,1800,0,60,0.0100000000", "volatility"),  # ten decimals, though equal to 0.01
        ("x,blitz,1800,0,60,.06", "volatility"),
        ("x,blitz,1800,0,60,0.", "volatility"),
        ("x,blitz,1800,0,60,6e-2", "volatility"),
        ("x,blitz,1800,0,60,", "deviation"),  # W8: only one of the two
        ("x,blitz,1800,0,,0.06", "deviation"),
        ("x,blitz,1800,5,,", "deviation"),  # W8: rated games, but no deviation and volatility
        ("x,correspondence,1800,0,,", "category"),
        ("x,Blitz,1800,0,,", "category"),
        ("x/y,blitz,1800,0,,", "player_id"),
        ("x,blitz,1800,0", "fields"),
        ("x,blitz,1800,0,,,", "fields"),
    ],
)
def test_bad_seeding_rows(text: str, field: str) -> None:
    with pytest.raises(ValueError, match=field) as refused:
        parse_seed_row(row(text))
    assert "\n" not in str(refused.value)


# --- rounding, half away from zero (section 6, step 7)


@pytest.mark.parametrize(
    ("value", "decimals", "units"),
    [
        (0.125, 2, 13),  # an exact tie in binary
        (-0.125, 2, -13),
        (0.375, 2, 38),
        (1737.125, 2, 173713),
        (-1737.125, 2, -173713),
        (2.5, 2, 250),
        (0.0625, 2, 6),  # 6.25 hundredths: no tie, down
        (-0.0625, 2, -6),
        (1 / 1024, 9, 976563),  # 0.0009765625: a tie at nine decimals
        (-1 / 1024, 9, -976563),
        (3 / 1024, 9, 2929688),  # 0.0029296875
        (1500.0, 2, 150000),
        (0.09, 9, 90_000_000),
        (0.0, 2, 0),
    ],
)
def test_rounded_at_exact_ties_and_exact_values(value: float, decimals: int, units: int) -> None:
    assert rounded(value, decimals) == units


@pytest.mark.parametrize(
    ("value", "decimals", "units"),
    [
        # Written like ties, but the doubles lie below them (their exact expansions).
        (1.005, 2, 100),  # 1.00499999999999989...
        (2.675, 2, 267),  # 2.67499999999999982...
        (-2.675, 2, -267),
        (0.285, 2, 28),  # 0.28499999999999997...
        # and above them
        (1.015, 2, 101),  # 1.01499999999999990...: below as well
        (0.135, 2, 14),  # 0.13500000000000000888...
        (-0.135, 2, -14),
        # A bit either side of an exact tie.
        (math.nextafter(0.125, 1), 2, 13),
        (math.nextafter(0.125, 0), 2, 12),
        (math.nextafter(-0.125, -1), 2, -13),
        (math.nextafter(-0.125, 0), 2, -12),
        (math.nextafter(1 / 1024, 1), 9, 976563),
        (math.nextafter(1 / 1024, 0), 9, 976562),
        (math.nextafter(1737.125, 0), 2, 173712),
    ],
)
def test_rounded_near_ties_rounds_the_doubles_exact_value(value: float, decimals: int, units: int) -> None:
    assert rounded(value, decimals) == units


def exact_half_away(value: float, decimals: int) -> int:
    """The reference: the double's exact rational value, rounded half away from zero."""
    scaled = abs(Fraction(value)) * Fraction(10**decimals)
    whole = scaled.numerator // scaled.denominator
    magnitude = whole + (scaled - whole >= Fraction(1, 2))
    return magnitude if value >= 0 else -magnitude


def near_ties(decimals: int, bound: int) -> st.SearchStrategy[float]:
    """Doubles at and next to the halves of a unit of 10^-decimals, and anywhere."""
    unit = 10**decimals
    halves = st.integers(-bound * unit, bound * unit).map(lambda k: (2 * k + 1) / (2 * unit))
    nudged = st.tuples(halves, st.integers(-3, 3)).map(lambda t: nudge(*t))
    return st.one_of(nudged, st.floats(-bound, bound, allow_nan=False))


def nudge(value: float, steps: int) -> float:
    for _ in range(abs(steps)):
        value = math.nextafter(value, math.inf if steps > 0 else -math.inf)
    return value


@given(near_ties(2, 5000))
def test_rounded_to_hundredths_is_the_exact_rounding(value: float) -> None:
    assert rounded(value, 2) == exact_half_away(value, 2)


@given(near_ties(9, 1))
def test_rounded_to_nanos_is_the_exact_rounding(value: float) -> None:
    assert rounded(value, 9) == exact_half_away(value, 9)
