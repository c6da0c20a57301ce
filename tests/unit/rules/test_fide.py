"""FIDE's per-month rules, the arithmetic alone (no engine): the worked examples that are numbers of
one rating (2 to 7 and 11, numbered as in the comments and tests' names below), each written from the
rules of docs/systems/fide.md ("Rules and readings"), the seeding rows (docs/systems/fide.md, "Seeding
rows"), and a state's size under many games counted at once (example 16). The examples through games
and closes are tests/unit/engine/test_fide_examples.py's."""

import pytest

from schemas.system_game import SystemGameFinished
from tests.support.contract import VALID_GAME
from worker.rules.finished_at import month_of, refusal
from worker.rules.hundredths import Hundredths
from worker.rules.interface import Kind, SeedRow
from worker.systems.fide.rules import (
    UNSEEN,
    Entry,
    FideDetail,
    FideRules,
    FideState,
    Held,
    Pooled,
    change,
    close,
    first_rating,
    k_factor,
    parse_seed_row,
    pd,
    rated_pair,
)

NOV = "2026-11"


def r(points: int) -> Hundredths:
    """A whole rating (the tables' numbers) in hundredths: 2000 -> 200000."""
    return Hundredths(points * 100)


def c(hundredths: int) -> Hundredths:
    """A score or PD in hundredths, as the tables write them (.64 -> 64)."""
    return Hundredths(hundredths)


def rated(rating: int, games: int = 40, *, reached: bool | None = None, birth: int | None = None) -> FideState:
    """A rated player as section 11 has them: 40 games, `reached_2400` = rating >= 2400 unless said."""
    return FideState(r(rating), games, 1, rating >= 2400 if reached is None else reached, birth)


def nobody(key: str) -> FideState:
    raise AssertionError(f"no other rating is read here, yet {key} was")


# --- PD and the 400-point rule (examples 1, 3, 4, 9)


@pytest.mark.parametrize(
    ("rating", "opponent", "expected"),
    [
        (2000, 1900, 64),  # example 1: D 100, .64 for the higher
        (2000, 2100, 36),  # example 1: .36 for the lower
        (2000, 2450, 8),  # example 1: D 450 counted as 400, .08
        (2450, 2000, 92),
        (2500, 1950, 92),  # example 4: D 550 counts as 400, .92 / .08
        (1950, 2500, 8),
        (2500, 2690, 25),  # example 3: D 190, L .25
        (2010, 1990, 53),  # example 9: D 20, .53
        (1990, 2010, 47),  # example 10: .47 for the lower
        (2500, 2500, 50),  # equal ratings, .50 each
    ],
)
def test_pd_reads_table_b_with_the_difference_capped_at_400(rating: int, opponent: int, expected: int) -> None:
    assert pd(r(rating), r(opponent)) == c(expected)


def test_example_4_a_difference_of_550_counts_as_400() -> None:
    assert pd(r(2500), r(1950)) == pd(r(2500), r(2100)) == c(92)
    assert pd(r(1950), r(2500)) == pd(r(2100), r(2500)) == c(8)
    # A +0.8 (K 10) -> +1; B -1.6 (K 20) -> -2.
    assert change(10, c(100), c(92)) == 1
    assert change(20, c(0), c(8)) == -2


# --- the 600-point rule (example 5)


@pytest.mark.parametrize(
    ("a", "b", "is_rated"),
    [
        (2601, 2001, False),  # D 600 and 2601 above 2600
        (2601, 2002, True),  # D 599
        (2600, 2000, True),  # 2600 is not above 2600
        (2700, 1900, False),  # D 800
    ],
)
def test_example_5_the_600_point_rule(a: int, b: int, is_rated: bool) -> None:
    assert rated_pair(r(a), r(b)) is is_rated
    assert rated_pair(r(b), r(a)) is is_rated  # for neither player, or for both


@pytest.mark.parametrize(
    ("a", "b", "a_after"),
    [(2601, 2001, 2601), (2601, 2002, 2602), (2600, 2000, 2601), (2700, 1900, 2700)],
)
def test_example_5_a_after_a_win_through_a_close(a: int, b: int, a_after: int) -> None:
    """A (K 10 from 2600: reached_2400) beats B in November, the game held; November closes."""
    states = {"A/blitz": rated(a), "B/blitz": rated(b)}
    held = states["A/blitz"]._replace(pending=(Entry(NOV, held=(Held("B", c(100)),)),))
    closed = close(NOV, "blitz", held, states.__getitem__)
    assert closed.after.rating == r(a_after)
    if a_after == a:  # not rated: period_closed, games 0
        assert closed.kind is Kind.PERIOD_CLOSED
        assert closed.detail == FideDetail(NOV, 0, c(0))


# --- K x n <= 700 (example 2)

# A state whose K before the 700 rule is 40, 20 or 10.
K_OF = {40: rated(1800, 0), 20: rated(1800, 40), 10: rated(2450, 40)}


@pytest.mark.parametrize(
    ("k", "n", "used"),
    [(40, 17, 40), (40, 18, 38), (40, 20, 35), (20, 35, 20), (20, 36, 19), (10, 71, 9), (10, 700, 1), (20, 701, 0)],
)
def test_example_2_k_times_n_at_most_700(k: int, n: int, used: int) -> None:
    state = K_OF[k]
    assert state.rating is not None
    assert k_factor(state, state.rating, NOV, 1) == k
    assert k_factor(state, state.rating, NOV, n) == used


def test_example_2_with_701_games_k_is_0_and_the_rating_does_not_move() -> None:
    """F13: the close still publishes period_rating, delta 0, k_factor 0."""
    state = rated(1800)._replace(pending=(Entry(NOV, 701, c(70100), c(35050), r(1800 * 701)),))
    closed = close(NOV, "blitz", state, nobody)
    assert closed.kind is Kind.PERIOD_RATING
    assert closed.after.rating == r(1800)
    assert closed.after.rated_games == 40 + 701
    assert closed.detail == FideDetail(NOV, 701, c(70100), c(35050), 0)


def test_example_2_through_a_close_k_35_for_twenty_games() -> None:
    """A 1800 with 10 games (K 40) beats B 1800 twenty times: +10 x 35 -> 2150, 30 games;
    B (K 20, 20 x 20 = 400): 1600."""
    a = rated(1800, 10)._replace(pending=(Entry(NOV, 20, c(2000), c(1000), r(1800 * 20)),))
    b = rated(1800, 40)._replace(pending=(Entry(NOV, 20, c(0), c(1000), r(1800 * 20)),))
    closed_a, closed_b = close(NOV, "blitz", a, nobody), close(NOV, "blitz", b, nobody)
    assert (closed_a.after.rating, closed_a.after.rated_games) == (r(2150), 30)
    assert closed_a.detail == FideDetail(NOV, 20, c(2000), c(1000), 35)
    assert (closed_b.after.rating, closed_b.after.rated_games) == (r(1600), 60)
    assert closed_b.detail == FideDetail(NOV, 20, c(0), c(1000), 20)


# --- rounding (example 3)


@pytest.mark.parametrize(
    ("k", "score", "expected", "points"),
    [
        (10, 150, 125, 3),  # X: +.50 and -.25 = +.25 -> +2.5 -> +3
        (10, 50, 75, -3),  # X: -.50 and +.25 = -.25 -> -2.5 -> -3 (not -2)
        (20, 150, 153, -1),  # K 20, sum -.03 -> -0.6 -> -1
        (20, 152, 150, 0),  # K 20, sum +.02 -> +0.4 -> 0
        (20, 100, 64, 7),  # example 13: +.36 x 20 = 7.2 -> 7
        (20, 0, 36, -7),  # its B: -7.2 -> -7
        (20, 150, 108, 8),  # example 1's A: +.42 x 20 = 8.4 -> 8
        (10, 100, 92, 1),  # example 1's D: +.08 x 10 = 0.8 -> 1
    ],
)
def test_example_3_one_rounding_per_period_half_away_from_zero(k: int, score: int, expected: int, points: int) -> None:
    assert change(k, c(score), c(expected)) == points


def test_example_3_x_through_a_close_2503_then_2497() -> None:
    """X 2500 (100 games, K 10) beats Y 2500 and loses to Z 2690: 2503; loses to W 2500 and draws
    Z: 2497. The games held, counted at the close with the opponents' list ratings."""
    others = {"Y/blitz": rated(2500), "Z/blitz": rated(2690), "W/blitz": rated(2500)}
    x = rated(2500, 100)
    assert x.reached_2400
    won = close(
        NOV, "blitz", x._replace(pending=(Entry(NOV, held=(Held("Y", c(100)), Held("Z", c(0)))),)), others.__getitem__
    )
    assert won.after.rating == r(2503)
    assert won.detail == FideDetail(NOV, 2, c(100), c(75), 10)
    lost = close(
        NOV, "blitz", x._replace(pending=(Entry(NOV, held=(Held("W", c(0)), Held("Z", c(50)))),)), others.__getitem__
    )
    assert lost.after.rating == r(2497)
    assert lost.detail == FideDetail(NOV, 2, c(50), c(75), 10)


# --- the K table (example 6)


@pytest.mark.parametrize(
    ("games", "reached", "birth", "period", "rating", "k"),
    [
        (29, False, None, "2026-11", 1800, 40),
        (29, True, None, "2026-11", 2410, 40),
        (30, False, None, "2026-11", 1800, 20),
        (30, True, None, "2026-11", 2390, 10),
        (30, False, 2008, "2026-11", 2299, 40),
        (30, False, 2008, "2026-11", 2300, 20),
        (30, False, 2008, "2027-01", 2100, 20),
        (30, True, 2010, "2026-11", 2290, 10),
        (30, False, 2007, "2025-12", 2000, 40),
    ],
)
def test_example_6_k_the_first_rule_that_applies(
    games: int, reached: bool, birth: int | None, period: str, rating: int, k: int
) -> None:
    state = FideState(r(rating), games, 5, reached, birth)
    assert k_factor(state, r(rating), period, 1) == k


# --- first ratings (example 7)


def pool(*months: tuple[str, int, int, int]) -> tuple[Pooled, ...]:
    """(period, games, points in hundredths, sum of the opponents' ratings in points)."""
    return tuple(Pooled(p, n, c(s), r(total)) for p, n, s, total in months)


@pytest.mark.parametrize(
    ("case", "months", "ru"),
    [
        ("a", pool((NOV, 5, 300, 1600 + 1700 + 1800 + 1500 + 1900)), 1779),  # 1728.57 + 50
        ("c", pool((NOV, 5, 50, 5 * 1500)), 1356),  # 1585.71 - 230 (below 1400: not published)
        ("d", pool((NOV, 5, 500, 5 * 2300)), 2200),  # 2157.14 + 309 = 2466 -> at most 2200
        ("e", pool(("2026-12", 5, 250, 5 * 1800)), 1800),
        ("e without the zero rule", pool((NOV, 3, 0, 3 * 1800), ("2026-12", 5, 250, 5 * 1800)), 1690),
        ("f", pool((NOV, 1, 50, 1800), ("2026-12", 4, 0, 4 * 1800)), 1570),
        ("h", pool(("2024-09", 4, 200, 4 * 1800), ("2026-10", 1, 50, 1800)), 1800),
    ],
)
def test_example_7_the_initial_rating_of_a_pool(case: str, months: tuple[Pooled, ...], ru: int) -> None:
    assert first_rating(months) == ru


def unrated(*initial: Pooled, entry: Entry) -> FideState:
    return FideState(seq=4, initial=initial, pending=(entry,))


def test_example_7a_five_games_in_one_month_give_1779() -> None:
    state = unrated(entry=Entry(NOV, 5, c(300), ratings=r(8500)))
    closed = close(NOV, "blitz", state, nobody)
    assert closed.kind is Kind.FIRST_RATING
    assert closed.after == FideState(r(1779), 5, 4, False, None, NOV, None, (), ())
    assert closed.detail == FideDetail(NOV, 5, c(300))


def test_example_7b_four_in_november_then_one_in_december() -> None:
    november = close(NOV, "blitz", unrated(entry=Entry(NOV, 4, c(200), ratings=r(6600))), nobody)
    assert november.kind is Kind.PERIOD_CLOSED
    assert november.detail == FideDetail(NOV, 4, c(200))
    assert november.after.rating is None
    assert november.after.initial == pool((NOV, 4, 200, 6600))
    december_entry = Entry("2026-12", 1, c(100), ratings=r(1900))
    december = close("2026-12", "blitz", november.after._replace(pending=(december_entry,)), nobody)
    assert december.kind is Kind.FIRST_RATING
    assert (december.after.rating, december.after.rated_games, december.after.initial) == (r(1779), 5, ())
    assert december.detail == FideDetail("2026-12", 5, c(300))  # example 17


def test_example_7c_below_1400_keeps_the_pool_of_5() -> None:
    closed = close(NOV, "blitz", unrated(entry=Entry(NOV, 5, c(50), ratings=r(7500))), nobody)
    assert closed.kind is Kind.PERIOD_CLOSED
    assert closed.after.rating is None
    assert closed.after.initial == pool((NOV, 5, 50, 7500))
    assert closed.detail == FideDetail(NOV, 5, c(50))


def test_example_7d_at_most_2200() -> None:
    closed = close(NOV, "blitz", unrated(entry=Entry(NOV, 5, c(500), ratings=r(11500))), nobody)
    assert (closed.kind, closed.after.rating) == (Kind.FIRST_RATING, r(2200))
    assert not closed.after.reached_2400


def test_example_7e_a_first_event_scoring_zero_is_disregarded() -> None:
    november = close(NOV, "blitz", unrated(entry=Entry(NOV, 3, c(0), ratings=r(5400))), nobody)
    assert november.kind is Kind.PERIOD_CLOSED
    assert november.detail == FideDetail(NOV, 0, c(0))
    assert november.after.initial == ()
    december_entry = Entry("2026-12", 5, c(250), ratings=r(9000))
    december = close("2026-12", "blitz", november.after._replace(pending=(december_entry,)), nobody)
    assert (december.kind, december.after.rating, december.after.rated_games) == (Kind.FIRST_RATING, r(1800), 5)
    assert december.detail == FideDetail("2026-12", 5, c(250))


def test_example_7f_a_zero_after_pooled_results_counts() -> None:
    state = unrated(*pool((NOV, 1, 50, 1800)), entry=Entry("2026-12", 4, c(0), ratings=r(7200)))
    closed = close("2026-12", "blitz", state, nobody)
    assert (closed.kind, closed.after.rating, closed.after.rated_games) == (Kind.FIRST_RATING, r(1570), 5)
    assert closed.detail == FideDetail("2026-12", 5, c(50))


def test_example_7g_results_older_than_26_months_are_dropped() -> None:
    state = unrated(*pool(("2024-09", 4, 200, 7200)), entry=Entry(NOV, 1, c(50), ratings=r(1800)))
    closed = close(NOV, "blitz", state, nobody)
    assert closed.kind is Kind.PERIOD_CLOSED
    assert closed.after.initial == pool((NOV, 1, 50, 1800))
    assert closed.detail == FideDetail(NOV, 1, c(50))


def test_example_7h_results_within_26_months_are_pooled() -> None:
    state = unrated(*pool(("2024-09", 4, 200, 7200)), entry=Entry("2026-10", 1, c(50), ratings=r(1800)))
    closed = close("2026-10", "blitz", state, nobody)
    assert (closed.kind, closed.after.rating, closed.after.rated_games) == (Kind.FIRST_RATING, r(1800), 5)
    assert closed.detail == FideDetail("2026-10", 5, c(250))


def test_example_7_a_game_between_two_unrated_players_pools_nothing() -> None:
    """U draws V (both unrated), held: at the close V has no list rating, so nothing is pooled."""
    u = FideState(pending=(Entry(NOV, held=(Held("V", c(50)),)),), seq=1)
    closed = close(NOV, "blitz", u, {"V/blitz": FideState(seq=1)}.__getitem__)
    assert closed.kind is Kind.PERIOD_CLOSED
    assert closed.detail == FideDetail(NOV, 0, c(0))
    assert closed.after.initial == ()


def test_example_7_a_game_against_unrated_u_is_not_rated_for_his_opponent() -> None:
    w = rated(1600)._replace(pending=(Entry(NOV, held=(Held("U", c(0)),)),))
    closed = close(NOV, "blitz", w, {"U/blitz": FideState(seq=1)}.__getitem__)
    assert closed.kind is Kind.PERIOD_CLOSED
    assert closed.after.rating == r(1600)
    assert closed.after.rated_games == 40
    assert closed.detail == FideDetail(NOV, 0, c(0))


# --- rating lost (example 8)


def test_example_8_below_1400_the_rating_is_lost_afresh() -> None:
    state = rated(1405)._replace(pending=(Entry(NOV, 1, c(0), c(50), r(1405)),), initial=())
    closed = close(NOV, "blitz", state, nobody)
    assert closed.kind is Kind.RATING_LOST
    assert closed.after == FideState(None, 0, 1, False, None, NOV, r(1405), (), ())
    assert closed.detail == FideDetail(NOV, 1, c(0), c(50), 20)
    kept = close(NOV, "blitz", state._replace(rating=r(1410)), nobody)
    assert (kept.kind, kept.after.rating) == (Kind.PERIOD_RATING, r(1400))


# --- months by instant (example 11)


@pytest.mark.parametrize(
    ("finished_at", "period"),
    [
        ("2026-11-01T00:30:00+01:00", "2026-10"),
        ("2026-10-31T23:30:00-01:00", "2026-11"),
        ("2026-12-31T23:59:60Z", "2026-12"),
        ("2024-02-29t12:00:00z", "2024-02"),
    ],
)
def test_example_11_a_games_month_is_its_instants_in_utc(finished_at: str, period: str) -> None:
    assert month_of(finished_at) == period
    game = SystemGameFinished.model_validate({**VALID_GAME, "finished_at": finished_at})
    assert FideRules().refuse(game, None, 3600) is None
    assert FideRules().recorded_in(game, None) == period


@pytest.mark.parametrize("finished_at", ["0000-01-01T00:10:00+01:00", "9999-12-31T23:30:00-01:00"])
def test_example_11_an_instant_outside_the_years_0000_to_9999_is_bad_input(finished_at: str) -> None:
    game = SystemGameFinished.model_validate({**VALID_GAME, "finished_at": finished_at})
    why = FideRules().refuse(game, None, 3600)
    assert why is not None and "finished_at" in why and "\n" not in why
    assert refusal(finished_at, None, 3600) == why


# The record's timestamp of the future check (section 4, F22): 2026-11-29T12:00:00Z in ms.
RECORD_MS = 1_795_953_600_000


@pytest.mark.parametrize(
    ("finished_at", "refused"),
    [
        ("2026-11-29T13:00:00Z", False),  # exactly RATING_FUTURE_ALLOWANCE_SECONDS later: valid
        ("2026-11-29T14:00:00+01:00", False),  # the same instant at another offset
        ("2026-11-29T13:00:00.001Z", True),  # 1 ms later: a future game
        ("2026-11-29T13:00:00.0000001Z", True),  # every fractional digit counts
        ("2027-03-01T00:00:00Z", True),  # a month not due for months
        ("2026-11-01T00:00:00Z", False),
    ],
)
def test_the_future_check_refuses_a_game_later_than_its_records_timestamp_plus_the_allowance(
    finished_at: str, refused: bool
) -> None:
    """docs/systems/fide.md, "Input": finished_at later than the record's timestamp plus
    RATING_FUTURE_ALLOWANCE_SECONDS (3600) is bad input; exactly that much later is valid; a
    record without a timestamp (-1) and a line of `rate` (none) are not checked."""
    game = SystemGameFinished.model_validate({**VALID_GAME, "finished_at": finished_at})
    why = FideRules().refuse(game, RECORD_MS, 3600)
    assert (why is not None) == refused, why
    if refused:
        assert why is not None and "RATING_FUTURE_ALLOWANCE_SECONDS=3600" in why and "\n" not in why
    assert FideRules().refuse(game, None, 3600) is None
    assert FideRules().refuse(game, -1, 3600) is None


def test_with_no_allowance_a_game_may_finish_at_its_records_timestamp_not_after() -> None:
    at = SystemGameFinished.model_validate({**VALID_GAME, "finished_at": "2026-11-29T12:00:00Z"})
    after = SystemGameFinished.model_validate({**VALID_GAME, "finished_at": "2026-11-29T12:00:00.001Z"})
    assert FideRules().refuse(at, RECORD_MS, 0) is None
    assert FideRules().refuse(after, RECORD_MS, 0) is not None


def test_a_late_game_is_recorded_in_the_oldest_open_month() -> None:
    """Section 4 and example 9: with October closed, a game of October is recorded in November."""
    game = SystemGameFinished.model_validate({**VALID_GAME, "finished_at": "2026-10-31T23:59:59Z"})
    assert FideRules().recorded_in(game, "2026-10") == NOV
    assert FideRules().recorded_in(game, "2026-09") == "2026-10"


# --- seeding rows (docs/systems/fide.md, "Seeding rows")


@pytest.mark.parametrize(
    ("row", "seeded"),
    [
        ("A,blitz,2000,40,,", SeedRow("A", "blitz", r(2000), 40, (False, None))),
        ("A,rapid,2450,100,,", SeedRow("A", "rapid", r(2450), 100, (True, None))),  # empty: rating >= 2400
        ("A,bullet,2400,3,,", SeedRow("A", "bullet", r(2400), 3, (True, None))),
        ("J,blitz,1400,0,false,2008", SeedRow("J", "blitz", r(1400), 0, (False, 2008))),
        ("J,blitz,2399,30,true,1000", SeedRow("J", "blitz", r(2399), 30, (True, 1000))),
        ("J,blitz,2399,30,false,9999", SeedRow("J", "blitz", r(2399), 30, (False, 9999))),
    ],
)
def test_a_valid_seeding_row(row: str, seeded: SeedRow) -> None:
    assert parse_seed_row(row.split(",")) == seeded


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ("x,blitz,1800.00,40,,", "rating"),  # digits only
        ("x,blitz,1399,40,,", "rating"),  # the lowest published rating is 1400
        ("x,blitz,+1800,40,,", "rating"),
        ("x,blitz,1800,-1,,", "rated_games"),
        ("x,blitz,1800,4.0,,", "rated_games"),
        ("x,blitz,1800,40,TRUE,", "reached_2400"),
        ("x,blitz,1800,40,yes,", "reached_2400"),
        ("x,blitz,2400,40,false,", "reached_2400"),  # false with a rating >= 2400
        ("x,blitz,1800,40,,999", "birth_year"),
        ("x,blitz,1800,40,,0999", "birth_year"),
        ("x,blitz,1800,40,,20080", "birth_year"),
        ("x,correspondence,1800,40,,", "category"),
        ("x y,blitz,1800,40,,", "player_id"),
    ],
)
def test_a_bad_seeding_row_names_its_field(row: str, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        parse_seed_row(row.split(","))


def test_a_seeded_state_has_an_empty_pool_and_keeps_the_closed_period() -> None:
    """F23: a new rating's closed_period and rating_before_close are null; over an existing one
    they are kept (example 17, after example 14)."""
    row = parse_seed_row(["A", "blitz", "2100", "11", "", ""])
    assert FideRules().seeded(row, UNSEEN) == FideState(r(2100), 11, 0, False, None, None, None, (), ())
    after_14 = FideState(r(2020), 11, 3, False, None, NOV, r(2000), (), pool((NOV, 1, 50, 1800)))
    assert FideRules().seeded(row, after_14) == FideState(r(2100), 11, 3, False, None, NOV, r(2000), (), ())


# --- a state's size (example 16)


def test_a_states_size_does_not_grow_with_the_games_counted_at_once() -> None:
    """November is the oldest open month (October closed): each game is counted into one entry of
    totals; only held games are kept one by one."""
    rules = FideRules()
    a, b = rated(2000), rated(1900)
    game = SystemGameFinished.model_validate({**VALID_GAME, "white_id": "A", "black_id": "B"})
    for _ in range(500):
        recorded = rules.record(game, "blitz", NOV, "2026-10", a, b)
        assert recorded.white is not None and recorded.black is not None
        a, b = recorded.white.after, recorded.black.after
    # 500 wins against 1900 (PD .64 each) and 500 losses against 2000 (PD .36 each).
    assert a.pending == (Entry(NOV, 500, c(50000), c(32000), r(950000), ()),)
    assert b.pending == (Entry(NOV, 500, c(0), c(18000), r(1000000), ()),)
    assert len(a) == len(FideState()) and all(len(e) == len(Entry(NOV)) for e in a.pending)
    held = rules.record(game, "blitz", NOV, None, rated(2000), rated(1900)).white
    assert held is not None
    assert held.after.pending == (Entry(NOV, held=(Held("B", c(100)),)),)  # before October's close: held
