"""US Chess correspondence rules: the worked examples of the reading (section 13), each a test,
written from the reading's tables (ratings before -> after, credits, kinds, K), and its two
properties. Examples 24-25 and 35-44 concern the input, the events and seeding: they are tested
where those layers are built."""

import re
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.rules.hundredths import Hundredths, display, round_half_away
from worker.rules.interface import Change, Kind, Rated, SeedRow, Skip
from worker.systems.uscf_cc.rules import (
    DRAW,
    LOSS,
    WIN,
    CcChange,
    CcGame,
    CcState,
    k_factor,
    parse_seed_row,
    rate,
    tier,
)


def h(text: str) -> Hundredths:
    """ "1600" -> 160000, "-100.50" -> -10050 (the tables' numbers, exactly)."""
    sign = -1 if text.startswith("-") else 1
    whole, _, frac = text.lstrip("-").partition(".")
    return Hundredths(sign * (int(whole) * 100 + int(frac.ljust(2, "0"))))


def E(rating: str) -> CcState:  # the tables' (E): established, 40 credits
    return CcState(h(rating), 40, 7)


def P(rating: str, credits: int) -> CcState:  # (P n): provisional with n credits
    return CcState(h(rating), credits, 3)


U = CcState()  # (U): unrated
SCORES = {"1-0": WIN, "1/2": DRAW, "0-1": LOSS}
R, C, F = Kind.RATED_GAME, Kind.GAME_CREDIT, Kind.FIRST_RATING


def after(state: CcState, rating: str, credits: int) -> CcState:
    return CcState(h(rating), credits, state.seq)


# (#, white, black, result, white after (rating, credits), black after, kinds, k_factor)
GAMES = [
    (1, E("1600"), E("1400"), "1-0", ("1608.00", 41), ("1392.00", 41), (R, R), (16, 16)),
    (2, E("1600"), E("1400"), "1/2", ("1592.00", 41), ("1408.00", 41), (R, R), (16, 16)),
    (3, E("2090"), E("2240"), "1-0", ("2109.00", 41), ("2223.50", 41), (R, R), (16, 12)),
    (4, E("1800"), E("1300"), "1-0", ("1802.00", 41), ("1298.00", 41), (R, R), (16, 16)),
    (5, E("2200"), E("2300"), "1-0", ("2215.00", 41), ("2285.00", 41), (R, R), (12, 12)),
    (6, E("2500"), E("2400"), "1/2", ("2498.00", 41), ("2402.00", 41), (R, R), (8, 8)),
    (7, E("2090"), E("1940"), "1-0", ("2100.00", 41), ("1930.00", 41), (R, R), (16, 16)),
    (8, E("2105"), E("2005"), "0-1", ("2086.67", 41), ("2025.00", 41), (R, R), (12, 16)),
    (9, E("2390"), E("2490"), "1-0", ("2403.33", 41), ("2480.00", 41), (R, R), (12, 8)),
    (10, E("2405"), E("2305"), "0-1", ("2392.50", 41), ("2320.00", 41), (R, R), (8, 12)),
    (11, E("2150.00"), E("2150.50"), "1/2", ("2150.02", 41), ("2150.48", 41), (R, R), (12, 12)),
    (45, E("2095"), E("2090"), "1-0", ("2108.10", 41), ("2074.20", 41), (R, R), (16, 16)),
    (12, P("1750", 2), E("1700"), "1-0", ("1866.67", 3), ("1686.00", 41), (R, R), (None, 16)),
    (13, P("1600", 5), P("1700", 3), "1-0", ("1683.33", 6), ("1575.00", 4), (R, R), (None, None)),
    (14, E("2000"), P("1550", 10), "1-0", ("2000.00", 41), ("1550.00", 11), (C, C), (None, None)),
    (15, P("1800", 4), E("1400.00"), "1-0", ("1800.00", 5), ("1400.00", 41), (C, C), (None, None)),
    (16, P("1800", 4), E("1400.01"), "1-0", ("1800.00", 5), ("1398.01", 41), (R, R), (None, 16)),
    (17, P("1500", 24), E("1500"), "1-0", ("1516.00", 25), ("1484.00", 41), (R, R), (None, 16)),
    (18, CcState(h("1516"), 25, 1), E("1600"), "1-0", ("1535.36", 26), ("1580.64", 41), (R, R), (16, 16)),
    (19, U, U, "1-0", ("1700.00", 1), ("1300.00", 1), (F, F), (None, None)),
    (20, U, U, "1/2", ("1500.00", 1), ("1500.00", 1), (F, F), (None, None)),
    (21, E("1800"), U, "0-1", ("1800.00", 41), ("2200.00", 1), (C, F), (None, None)),
    (22, P("1600", 3), U, "1-0", ("1600.00", 4), ("1200.00", 1), (C, F), (None, None)),
    (23, E("300"), U, "1-0", ("300.00", 41), ("-100.00", 1), (C, F), (None, None)),
]


@pytest.mark.parametrize(
    ("white", "black", "result", "white_after", "black_after", "kinds", "ks"),
    [pytest.param(*g[1:], id=f"example {g[0]}") for g in GAMES],
)
def test_worked_example(
    white: CcState,
    black: CcState,
    result: str,
    white_after: tuple[str, int],
    black_after: tuple[str, int],
    kinds: tuple[Kind, Kind],
    ks: tuple[int | None, int | None],
) -> None:
    rated = rate(CcGame(SCORES[result]), white, black)
    assert isinstance(rated, Rated) and rated.white and rated.black
    assert rated.white.after == after(white, *white_after)
    assert rated.black.after == after(black, *black_after)
    assert (rated.white.kind, rated.black.kind) == kinds
    assert (rated.white.k_factor, rated.black.k_factor) == ks


def test_example_23_a_negative_rating_displays_half_upwards() -> None:
    assert display(h("-100.00")) == -100 and display(h("-100.50")) == -100  # example 44's row too
    assert display(h("2223.50")) == 2224 and display(h("1381.82")) == 1382


def test_john_doe_source_example_2() -> None:
    john = U
    games = [("1200", WIN, "1600.00", F, "1200.00", C), ("1500", WIN, "1750.00", R, "1488.00", R)]
    games += [("2200", LOSS, "1750.00", C, "2200.00", C), ("1000", WIN, "1750.00", C, "1000.00", C)]
    games += [("1000", DRAW, "1600.00", R, "1014.00", R)]
    for credits, (opponent, score, john_after, john_kind, opponent_after, opponent_kind) in enumerate(games, 1):
        rated = rate(CcGame(score), john, E(opponent))
        assert isinstance(rated, Rated) and rated.white and rated.black
        assert (rated.white.after, rated.white.kind) == (CcState(h(john_after), credits), john_kind)
        assert (rated.black.after.rating, rated.black.kind) == (h(opponent_after), opponent_kind)
        assert rated.black.after.credits == 41
        john = rated.white.after
    assert john == CcState(h("1600.00"), 5)  # the source's sum: 8000 / 5


def forfeit(winner_white: bool = True) -> CcGame:
    return CcGame(WIN if winner_white else LOSS, special_forfeit=True)


@pytest.mark.parametrize(
    ("number", "winner", "rating_after", "k"),
    [
        (26, E("1600"), "1603.20", 16),
        (27, E("2200"), "2202.40", 12),
        (27, E("2500"), "2501.60", 8),
        (28, E("2095.00"), "2097.65", 16),
        (29, E("2099.00"), "2101.45", 16),
        (30, E("2399.00"), "2400.67", 12),
        (32, P("1800", 4), "1810.00", None),
    ],
)
def test_special_forfeit_worked_examples(number: int, winner: CcState, rating_after: str, k: int | None) -> None:
    for loser in (E("1300"), U, P("1500", 2)):
        rated = rate(forfeit(), winner, loser)
        assert rated == Rated(forfeit_win(winner, rating_after, k), None), number
        # Black winning: the same change on his side; white, the loser, gets nothing.
        assert rate(forfeit(winner_white=False), loser, winner) == Rated(None, forfeit_win(winner, rating_after, k))


def forfeit_win(winner: CcState, rating: str, k: int | None) -> CcChange:
    """The winner's only change: the points added, his credits and seq as they were."""
    return Change(Kind.FORFEIT_WIN, CcState(h(rating), winner.credits, winner.seq), k)


@pytest.mark.parametrize(
    ("credits", "points"),
    [(1, "10.00"), (3, "10.00"), (6, "10.00"), (7, "10.00"), (8, "8.89"), (9, "8.00"), (24, "3.20")],
)
def test_example_31_a_provisional_winner_gets_80_over_n_plus_1_capped_at_10(credits: int, points: str) -> None:
    rated = rate(forfeit(), P("1500", credits), E("1400"))
    assert isinstance(rated, Rated) and rated.white and rated.black is None
    assert rated.white.after == CcState(Hundredths(h("1500") + h(points)), credits, 3)
    assert rated.white.k_factor is None


def test_example_33_an_unrated_winner_of_a_special_forfeit_changes_nothing() -> None:
    assert rate(forfeit(), U, E("1300")) is Skip.FORFEIT_UNRATED_WINNER
    assert rate(forfeit(winner_white=False), E("1300"), U) is Skip.FORFEIT_UNRATED_WINNER


def test_example_41_unrated_and_aborted_games_change_nothing() -> None:
    assert rate(CcGame(WIN, rated=False), E("1600"), E("1400")) is Skip.RATED_FALSE
    assert rate(CcGame(WIN, aborted=True), E("1600"), E("1400")) is Skip.ABORTED
    # rated: false is decided first, then aborted, then a special forfeit (section 4's order).
    assert rate(CcGame(WIN, rated=False, aborted=True, special_forfeit=True), U, U) is Skip.RATED_FALSE
    assert rate(CcGame(WIN, aborted=True, special_forfeit=True), U, U) is Skip.ABORTED


def test_rounding_is_half_away_from_zero_and_tiers_are_exact() -> None:
    assert [round_half_away(n, 2) for n in (3, -3, 1, -1, 2)] == [2, -2, 1, -1, 1]
    assert round_half_away(15, 10) == 2 and round_half_away(-15, 10) == -2 and round_half_away(14, 10) == 1
    assert (tier(h("2099.99")), tier(h("2100.00")), tier(h("2399.99")), tier(h("2400.00"))) == (0, 1, 1, 2)
    assert (k_factor(h("2099.99")), k_factor(h("2100.00")), k_factor(h("2400.00"))) == (16, 12, 8)


# --- properties

ratings = st.integers(min_value=-50_000, max_value=350_000).map(Hundredths)
results = st.sampled_from([WIN, DRAW, LOSS])


@given(ratings, ratings, results)
def test_two_established_players_of_a_tier_get_opposite_changes_when_both_stay_in_it(
    white: Hundredths, black: Hundredths, score: Hundredths
) -> None:
    rated = rate(CcGame(score), CcState(white, 30), CcState(black, 30))
    assert isinstance(rated, Rated) and rated.white and rated.black
    new_white, new_black = rated.white.after.rating, rated.black.after.rating
    assert new_white is not None and new_black is not None
    if len({tier(white), tier(black), tier(new_white), tier(new_black)}) == 1:
        assert new_white - white == -(new_black - black)


@given(
    st.lists(st.tuples(st.one_of(st.none(), ratings), results, ratings), min_size=1, max_size=25),
    results,
    ratings,
)
def test_u5_a_player_starting_unrated_stays_near_the_exact_mean_of_his_performances(
    games: list[tuple[Hundredths | None, Hundredths, Hundredths]], first_score: Hundredths, first_opponent: Hundredths
) -> None:
    """After his n-th credit (n <= 25) his rating is within (n + 1)/4 hundredths of the exact
    mean of his values: his first rating, then each game's performance value, or for a game
    credit his rating before it. Opponents are established or provisional (`None`: an
    established opponent at the other rating drawn) so every kind of credit occurs."""
    rated = rate(CcGame(first_score), CcState(), CcState(first_opponent, 40))
    assert isinstance(rated, Rated) and rated.white
    player = rated.white.after
    assert player.rating is not None
    values = [Fraction(player.rating)]
    for provisional_opponent, score, opponent_rating in games[: 25 - 1]:
        opponent = CcState(opponent_rating, 40) if provisional_opponent is None else CcState(provisional_opponent, 5)
        before = player.rating
        assert before is not None
        rated = rate(CcGame(score), player, opponent)
        assert isinstance(rated, Rated) and rated.white
        player = rated.white.after
        assert player.rating is not None
        if rated.white.kind is Kind.GAME_CREDIT:
            values.append(Fraction(before))
        else:
            opponent_before = opponent.rating
            assert opponent_before is not None
            values.append(Fraction(opponent_before + (2 * score - 100) * 400))
        n = player.credits
        assert n == len(values)
        assert abs(player.rating - sum(values) / n) <= Fraction(n + 1, 4)


# --- seeding rows (section 10; example 44)


def test_seed_rows_as_the_contract_writes_them() -> None:
    cc = "correspondence"
    assert parse_seed_row(["alice", cc, "1600.00", "40"]) == SeedRow("alice", cc, h("1600.00"), 40)
    assert parse_seed_row(["bob", cc, "1400", "10"]) == SeedRow("bob", cc, h("1400"), 10)
    negative = parse_seed_row(["x", "correspondence", "-100.50", "1"])  # example 44
    assert negative == SeedRow("x", "correspondence", h("-100.50"), 1) and display(h("-100.50")) == -100
    assert negative.key == "x/correspondence"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (["x", "correspondence", "1800.", "5"], "rating: "),
        (["x", "correspondence", "+1800", "5"], "rating: "),
        (["x", "correspondence", " 1800", "5"], "rating: "),
        (["x", "correspondence", "1e3", "5"], "rating: "),
        (["x", "correspondence", "--100", "5"], "rating: "),
        (["x", "correspondence", "-", "5"], "rating: "),
        (["x", "correspondence", "1800.123", "5"], "rating: "),
        (["x", "correspondence", "1800", "0"], "rated_games: '0' is not an integer >= 1"),  # example 44
        (["x", "correspondence", "1800", "-1"], "rated_games: "),
        (["x", "correspondence", "1800", " 5"], "rated_games: "),
        (["x", "blitz", "1800", "5"], "category: 'blitz' is not correspondence"),
        (["x/y", "correspondence", "1800", "5"], "player_id: "),
        (["x", "correspondence", "1800"], "expected 4 fields, got 3"),
    ],
)
def test_a_bad_seed_row_says_which_field(fields: list[str], message: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        parse_seed_row(fields)
