"""The arena's rules (worker.systems.arena.rules) against docs/systems/arena.md ("Rules and readings").

Ratings are integer hundredths (180000 = 1800.00); every expected value is worked out by hand
in a comment from the spec's formulae and Table A / Table B.
"""

import json

import pytest

from schemas.game_finished import GameFinished
from tests.support.contract import TERMINATIONS
from worker.rules.categories import Category
from worker.rules.hundredths import Hundredths, display
from worker.rules.interface import Change, Kind, Pairing, Rated, Skip
from worker.systems.arena.rules import ArenaRules, k_factor
from worker.systems.arena.state import UNSEEN, QualifyingGame, RatingState

RULES = ArenaRules()
WIN, DRAW, LOSS = 100, 50, 0


def rated(rating: int, rated_games: int = 40, seq: int = 1) -> RatingState:
    return RatingState(rating=Hundredths(rating), rated_games=rated_games, seq=seq)


def play(
    white: RatingState,
    black: RatingState,
    white_score: int,
    category: Category = Category.BLITZ,
    game_id: str = "g1",
) -> Rated[RatingState] | Skip:
    return RULES.rate(Pairing(game_id, "white", "black", Hundredths(white_score)), category, white, black)


def both(outcome: Rated[RatingState] | Skip) -> tuple[Change[RatingState], Change[RatingState]]:
    assert isinstance(outcome, Rated)
    assert outcome.white is not None
    assert outcome.black is not None
    return outcome.white, outcome.black


def qualify(scores: list[int], opponents: list[int], start: RatingState = UNSEEN) -> list[Change[RatingState] | Skip]:
    """An unrated player (white) plays one game against each rated opponent in turn."""
    state = start
    changes: list[Change[RatingState] | Skip] = []
    for i, (score, opponent) in enumerate(zip(scores, opponents, strict=True), start=1):
        outcome = RULES.rate(
            Pairing(f"q{i}", "newbie", f"opp{i}", Hundredths(score)), Category.BLITZ, state, rated(opponent)
        )
        if isinstance(outcome, Skip):
            changes.append(outcome)
            continue
        assert outcome.black is None  # the rated opponent's state never changes
        assert outcome.white is not None
        changes.append(outcome.white)
        state = outcome.white.after
    return changes


def last_change(changes: list[Change[RatingState] | Skip]) -> Change[RatingState]:
    change = changes[-1]
    assert isinstance(change, Change)
    return change


def game(
    *,
    rated_flag: bool = True,
    base_seconds: int = 180,
    increment_seconds: int = 0,
    termination: str = "checkmate",
    result: str = "1-0",
) -> GameFinished:
    return GameFinished.model_validate_json(
        json.dumps(
            {
                "event_id": "ev-1",
                "game_id": "g1",
                "finished_at": "2026-11-29T21:44:51Z",
                "rated": rated_flag,
                "time_control": {"base_seconds": base_seconds, "increment_seconds": increment_seconds},
                "white_id": "alice",
                "black_id": "bob",
                "result": result,
                "termination": termination,
            }
        )
    )


# --- Worked examples of docs/systems/arena.md ("Rules and readings"), one test each ---------


def test_example_1_blitz_1800_beats_1700_gives_plus_7_20_and_minus_7_20() -> None:
    # D = 100 -> H .64 / L .36; K = 20 (blitz, 40 rated games).
    # Winner: 20 x (1 - .64) = +7.20 -> 1807.20. Loser: 20 x (0 - .36) = -7.20 -> 1692.80.
    winner, loser = both(play(rated(180000), rated(170000), WIN))
    assert (winner.kind, winner.after.rating, winner.k_factor, winner.expected_score) == (
        Kind.RATED_GAME,
        180720,
        20,
        64,
    )
    assert (loser.kind, loser.after.rating, loser.k_factor, loser.expected_score) == (Kind.RATED_GAME, 169280, 20, 36)
    assert (winner.after.rated_games, loser.after.rated_games) == (41, 41)


def test_example_2_same_game_in_bullet_gives_plus_minus_3_60() -> None:
    # K = 10 for bullet: 10 x .36 = 3.60 -> 1803.60 / 1696.40.
    winner, loser = both(play(rated(180000), rated(170000), WIN, Category.BULLET))
    assert (winner.after.rating, winner.k_factor) == (180360, 10)
    assert (loser.after.rating, loser.k_factor) == (169640, 10)


def test_example_2_same_game_in_the_first_30_rated_games_gives_plus_minus_14_40() -> None:
    # K = 40: 40 x .36 = 14.40 -> 1814.40 / 1685.60.
    winner, loser = both(play(rated(180000, rated_games=0), rated(170000, rated_games=29), WIN))
    assert (winner.after.rating, winner.k_factor) == (181440, 40)
    assert (loser.after.rating, loser.k_factor) == (168560, 40)


def test_example_3_1799_60_gaining_0_60_becomes_1800_20_and_both_display_1800() -> None:
    # Rules 13. A gain of 0.60 with K = 20 needs PD .97 (20 x .03): D in 518-559.
    # 1799.60 - 1260.00 = 539.60 -> D = 540 -> H .97, L .03.
    winner, loser = both(play(rated(179960), rated(126000), WIN))
    assert (winner.after.rating, winner.expected_score) == (180020, 97)
    assert display(Hundredths(179960)) == display(Hundredths(180020)) == 1800
    # Loser: 20 x (0 - .03) = -0.60 -> 1259.40.
    assert (loser.after.rating, loser.expected_score) == (125940, 3)


def test_example_4_qualification_with_3_points_against_ra_1700_gives_1720() -> None:
    # Ra = (1500 + 1600 + 1700 + 1800 + 1900) / 5 = 1700.00; S = 0.5+1+1+0+0.5 = 3 -> +20.
    changes = qualify([DRAW, WIN, WIN, LOSS, DRAW], [150000, 160000, 170000, 180000, 190000])
    kinds = [c.kind if isinstance(c, Change) else c for c in changes]
    assert kinds == [Kind.QUALIFYING_GAME] * 4 + [Kind.FIRST_RATING]
    first = last_change(changes)
    assert first.after == RatingState(rating=Hundredths(172000), rated_games=0, qualifying=(), seq=0)
    assert (first.k_factor, first.expected_score) == (None, None)


def test_example_4_the_counted_games_are_kept_with_opponent_rating_and_score() -> None:
    changes = qualify([DRAW, WIN, WIN, LOSS], [150000, 160000, 170000, 180000])
    assert last_change(changes).after.qualifying == (
        QualifyingGame("q1", "opp1", Hundredths(150000), Hundredths(50)),
        QualifyingGame("q2", "opp2", Hundredths(160000), Hundredths(100)),
        QualifyingGame("q3", "opp3", Hundredths(170000), Hundredths(100)),
        QualifyingGame("q4", "opp4", Hundredths(180000), Hundredths(0)),
    )


def test_example_5_qualification_with_1_5_points_against_ra_1100_gives_951_and_no_rating() -> None:
    # S = 1.5 -> p = .3 -> dp = -149 (Table A); Rf = 1100.00 - 149 = 951.00 < 1000.
    changes = qualify([DRAW, DRAW, DRAW, LOSS, LOSS], [110000] * 5)
    reset = last_change(changes)
    assert reset.kind == Kind.QUALIFICATION_RESET
    assert reset.after == RatingState()  # unrated, nothing counted


def test_example_5_after_the_reset_the_count_restarts_from_nothing() -> None:
    reset = last_change(qualify([DRAW, DRAW, DRAW, LOSS, LOSS], [110000] * 5)).after
    # A loss right after the reset is "before the count starts" again: not counted.
    assert qualify([LOSS], [110000], start=reset) == [Skip.NOT_COUNTED]
    again = last_change(qualify([DRAW], [110000], start=reset))
    assert (again.kind, len(again.after.qualifying)) == (Kind.QUALIFYING_GAME, 1)


def test_example_6_1003_losing_to_an_equal_opponent_drops_to_993_and_loses_the_rating() -> None:
    # K = 20, PD .50: 20 x (0 - .50) = -10.00 -> 993.00 < 1000.00.
    loser, winner = both(play(rated(100300, rated_games=30), rated(100300, rated_games=30), LOSS))
    assert loser.kind == Kind.RATING_LOST
    assert (loser.k_factor, loser.expected_score) == (20, 50)
    assert loser.after == RatingState(rating=None, rated_games=0, qualifying=(), seq=1)
    # The winner: +10.00 -> 1013.00.
    assert (winner.kind, winner.after.rating) == (Kind.RATED_GAME, 100300 + 1000)


# --- K -------------------------------------------------------------------------------------


@pytest.mark.parametrize("rated_games", range(30))
def test_k_is_40_for_the_1st_to_30th_rated_game(rated_games: int) -> None:
    # rated_games counts the games completed before this one: 0..29 -> 1st..30th game.
    for category in Category:
        assert k_factor(category, rated_games) == 40
    # Equal ratings, a win: 40 x (1 - .50) = +20.00.
    winner, _ = both(play(rated(150000, rated_games), rated(150000), WIN))
    assert (winner.k_factor, winner.after.rating, winner.after.rated_games) == (40, 152000, rated_games + 1)


@pytest.mark.parametrize(
    ("category", "k", "gain"),
    [(Category.RAPID, 20, 1000), (Category.BLITZ, 20, 1000), (Category.BULLET, 10, 500)],
)
def test_k_is_20_or_10_from_the_31st_rated_game(category: Category, k: int, gain: int) -> None:
    # 30 completed rated games: the 31st uses K = 20 (rapid, blitz) or 10 (bullet); gain = K x .50.
    assert k_factor(category, 30) == k
    assert k_factor(category, 1000) == k
    winner, _ = both(play(rated(150000, 30), rated(150000), WIN, category))
    assert (winner.k_factor, winner.after.rating) == (k, 150000 + gain)


def test_k_is_not_10_from_2400_since_fide_8_56_is_not_taken() -> None:
    # No K = 10 from 2400: 2500.00 vs 2500.00 with 40 games in blitz uses K = 20 (+10.00).
    winner, _ = both(play(rated(250000), rated(250000), WIN))
    assert (winner.k_factor, winner.after.rating) == (20, 251000)


def test_each_player_uses_his_own_k() -> None:
    # Equal ratings: the provisional winner gains 40 x .5 = 20.00, the established loser
    # loses 20 x .5 = 10.00 (no zero-sum adjustment).
    winner, loser = both(play(rated(150000, 0), rated(150000, 30), WIN))
    assert (winner.after.rating, loser.after.rating) == (152000, 149000)


def test_a_draw_between_equal_players_changes_no_rating_but_counts_the_game() -> None:
    white, black = both(play(rated(150000, 5), rated(150000, 7), DRAW))
    assert (white.kind, white.after.rating, white.after.rated_games) == (Kind.RATED_GAME, 150000, 6)
    assert (black.kind, black.after.rating, black.after.rated_games) == (Kind.RATED_GAME, 150000, 8)


def test_there_is_no_400_point_cap() -> None:
    # D = 800 > 735 -> H 1.00 / L .00: the favourite gains nothing for a win, and loses
    # 20 x (0 - 1.00) = -20.00 for a loss (with a 400 cap he would use .92).
    favourite, underdog = both(play(rated(200000), rated(120000), WIN))
    assert (favourite.after.rating, favourite.expected_score) == (200000, 100)
    assert (underdog.after.rating, underdog.expected_score) == (120000, 0)
    favourite, underdog = both(play(rated(200000), rated(120000), LOSS))
    assert (favourite.after.rating, underdog.after.rating) == (198000, 122000)


# --- D rounding ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("higher", "lower", "pd_high"),
    [
        (180050, 170000, 64),  # D = 100.50 -> 101 -> .64 (bin 99-106)
        (180049, 170000, 64),  # D = 100.49 -> 100 -> .64
        (179850, 170000, 64),  # D = 98.50 -> 99 (.5 upwards) -> .64, not .63
        (179849, 170000, 63),  # D = 98.49 -> 98 -> .63 (bin 92-98)
        (170350, 170000, 51),  # D = 3.50 -> 4 -> .51, not .50
        (170349, 170000, 50),  # D = 3.49 -> 3 -> .50
        (243550, 170000, 100),  # D = 735.50 -> 736 -> 1.00
        (243549, 170000, 99),  # D = 735.49 -> 735 -> .99
        (170049, 170000, 50),  # D = 0.49 -> 0 -> .50 for both although the ratings differ
    ],
)
def test_d_is_rounded_to_a_whole_point_half_upwards_before_table_b(higher: int, lower: int, pd_high: int) -> None:
    for white, black in ((higher, lower), (lower, higher)):
        w, b = both(play(rated(white), rated(black), DRAW))
        expected = (pd_high, 100 - pd_high) if white == higher else (100 - pd_high, pd_high)
        assert (w.expected_score, b.expected_score) == expected


def test_d_98_50_is_rounded_up_so_the_winner_gains_7_20_not_7_40() -> None:
    # D = 98.50 -> 99 -> .64: 20 x .36 = +7.20 -> 1798.50 + 7.20 = 1805.70.
    winner, loser = both(play(rated(179850), rated(170000), WIN))
    assert (winner.after.rating, loser.after.rating) == (180570, 169280)
    # D = 98.49 -> 98 -> .63: 20 x .37 = +7.40 -> 1798.49 + 7.40 = 1805.89.
    winner, loser = both(play(rated(179849), rated(170000), WIN))
    assert (winner.after.rating, loser.after.rating) == (180589, 169260)


def test_both_players_are_updated_from_their_ratings_before_the_game() -> None:
    # Symmetric changes prove the loser's D used the winner's old rating (1800.00, not 1807.20).
    winner, loser = both(play(rated(180000), rated(170000), WIN))
    assert winner.after.rating is not None
    assert loser.after.rating is not None
    assert winner.after.rating - 180000 == 170000 - loser.after.rating == 720


# --- Floor ---------------------------------------------------------------------------------


def test_a_new_rating_of_exactly_1000_00_is_kept() -> None:
    # 1010.00 loses to an equal opponent with K = 20: -10.00 -> 1000.00, kept.
    loser, _ = both(play(rated(101000, 30, seq=4), rated(101000, 30), LOSS))
    assert loser.kind == Kind.RATED_GAME
    assert loser.after == RatingState(rating=Hundredths(100000), rated_games=31, seq=4)


def test_a_new_rating_of_999_99_is_lost_and_the_state_reset() -> None:
    # 1009.99 loses to an equal opponent with K = 20: -10.00 -> 999.99 < 1000.00.
    loser, winner = both(play(rated(100999, 57, seq=9), rated(100999, 30), LOSS))
    assert loser.kind == Kind.RATING_LOST
    assert (loser.k_factor, loser.expected_score) == (20, 50)
    assert loser.after == RatingState(rating=None, rated_games=0, qualifying=(), seq=9)
    assert (winner.kind, winner.after.rating) == (Kind.RATED_GAME, 101999)


def test_a_bullet_loss_with_k_10_can_take_the_rating_under_the_floor() -> None:
    loser, _ = both(play(rated(100400, 40), rated(100400, 40), LOSS, Category.BULLET))
    # K = 10 in bullet: -5.00 -> 999.00 < 1000.00.
    assert loser.kind == Kind.RATING_LOST


def test_after_losing_the_rating_a_new_first_rating_starts_again_with_k_40() -> None:
    lost = RatingState()
    first = last_change(qualify([WIN] * 5, [150000] * 5, start=lost))
    # S = 5: Rf = 1500.00 + 5 x 20 = 1600.00, with 0 rated games -> K = 40.
    assert first.after == RatingState(rating=Hundredths(160000), rated_games=0)
    winner, _ = both(play(first.after, rated(160000), WIN))
    assert (winner.k_factor, winner.after.rating) == (40, 162000)


# --- Qualification -------------------------------------------------------------------------


def test_a_loss_before_the_count_starts_is_not_counted() -> None:
    assert qualify([LOSS], [150000]) == [Skip.NOT_COUNTED]
    assert play(rated(150000), UNSEEN, WIN) == Skip.NOT_COUNTED  # the unrated player is black


def test_the_count_starts_with_a_draw_or_a_win() -> None:
    for score in (DRAW, WIN):
        change = last_change(qualify([score], [150000]))
        assert change.kind == Kind.QUALIFYING_GAME
        assert change.after.qualifying == (QualifyingGame("q1", "opp1", Hundredths(150000), Hundredths(score)),)
        assert (change.after.rating, change.k_factor, change.expected_score) == (None, None, None)


def test_losses_before_the_first_draw_do_not_count_towards_the_five() -> None:
    # L, L, then D, W, W, L, D: the count starts at the draw; the fifth counted game is the last.
    changes = qualify(
        [LOSS, LOSS, DRAW, WIN, WIN, LOSS, DRAW], [100000, 100000, 150000, 160000, 170000, 180000, 190000]
    )
    assert changes[:2] == [Skip.NOT_COUNTED, Skip.NOT_COUNTED]
    # Ra over the 5 counted opponents only = 1700.00; S = 3 -> 1720.00 (as example 4).
    first = last_change(changes)
    assert (first.kind, first.after.rating) == (Kind.FIRST_RATING, 172000)


def test_a_loss_after_the_count_started_is_counted() -> None:
    changes = qualify([DRAW, LOSS], [150000, 160000])
    second = last_change(changes)
    assert second.kind == Kind.QUALIFYING_GAME
    assert second.after.qualifying[-1] == QualifyingGame("q2", "opp2", Hundredths(160000), Hundredths(0))
    assert len(second.after.qualifying) == 2


def test_the_unrated_player_as_black_qualifies_against_white() -> None:
    outcome = play(rated(150000), UNSEEN, LOSS)  # white loses: black (unrated) wins
    assert isinstance(outcome, Rated)
    assert outcome.white is None
    assert outcome.black is not None
    assert outcome.black.after.qualifying == (QualifyingGame("g1", "white", Hundredths(150000), Hundredths(100)),)


@pytest.mark.parametrize("white_score", [WIN, DRAW, LOSS])
def test_the_rated_players_state_never_changes_against_an_unrated_one(white_score: int) -> None:
    qualifying = (QualifyingGame("q0", "someone", Hundredths(140000), Hundredths(50)),)
    unrated = RatingState(qualifying=qualifying, seq=1)
    for outcome, rated_side in (
        (play(rated(150000, 3), unrated, white_score), "white"),
        (play(unrated, rated(150000, 3), white_score), "black"),
    ):
        # The unrated player has started counting, so every result is counted for him.
        assert isinstance(outcome, Rated)
        assert getattr(outcome, rated_side) is None


def test_a_game_between_two_unrated_players_changes_nothing() -> None:
    in_qualification = RatingState(qualifying=(QualifyingGame("q0", "x", Hundredths(150000), Hundredths(100)),), seq=1)
    for white, black in ((UNSEEN, UNSEEN), (in_qualification, UNSEEN), (UNSEEN, in_qualification)):
        for score in (WIN, DRAW, LOSS):
            assert play(white, black, score) == Skip.BOTH_UNRATED


def test_qualification_with_5_points_gives_ra_plus_100() -> None:
    # S = 5 = 2.5 + 5 half points -> Ra + 5 x 20 = 1500.00 + 100 = 1600.00.
    assert last_change(qualify([WIN] * 5, [150000] * 5)).after.rating == 160000


def test_qualification_with_2_5_points_gives_ra() -> None:
    # S = 2.5 -> Rf = Ra = (1400 + 1450 + 1500 + 1550 + 1600) / 5 = 1500.00.
    assert last_change(qualify([WIN, WIN, DRAW, LOSS, LOSS], [140000, 145000, 150000, 155000, 160000])).after == (
        RatingState(rating=Hundredths(150000))
    )


def test_qualification_with_0_5_points_uses_table_a_p_0_1() -> None:
    # S = 0.5 -> p = .1 -> dp = -366: 1500.00 - 366 = 1134.00.
    assert last_change(qualify([DRAW, LOSS, LOSS, LOSS, LOSS], [150000] * 5)).after.rating == 113400


def test_qualification_with_2_points_uses_table_a_p_0_4() -> None:
    # S = 2 -> p = .4 -> dp = -72: 1500.00 - 72 = 1428.00.
    assert last_change(qualify([WIN, WIN, LOSS, LOSS, LOSS], [150000] * 5)).after.rating == 142800


def test_qualification_with_1_point_uses_table_a_p_0_2() -> None:
    # S = 1 -> p = .2 -> dp = -240: 1500.00 - 240 = 1260.00.
    assert last_change(qualify([WIN, LOSS, LOSS, LOSS, LOSS], [150000] * 5)).after.rating == 126000


def test_qualification_with_4_5_points_gives_ra_plus_80() -> None:
    # S = 4.5 -> 4 half points over 2.5 -> +80: 1500.00 + 80 = 1580.00.
    assert last_change(qualify([DRAW, WIN, WIN, WIN, WIN], [150000] * 5)).after.rating == 158000


def test_a_first_rating_of_exactly_1000_00_is_given() -> None:
    # S = 1.5 -> p = .3 -> -149: 1149.00 - 149 = 1000.00, not under the floor.
    first = last_change(qualify([DRAW, DRAW, DRAW, LOSS, LOSS], [114900] * 5))
    assert (first.kind, first.after.rating) == (Kind.FIRST_RATING, 100000)


def test_a_first_rating_of_999_99_is_refused() -> None:
    # All five opponents at 1148.99: Ra = 1148.99; S = 1.5 -> p = .3 -> -149 -> 999.99 < 1000.
    reset = last_change(qualify([DRAW, DRAW, DRAW, LOSS, LOSS], [114899] * 5))
    assert (reset.kind, reset.after) == (Kind.QUALIFICATION_RESET, RatingState())


def test_ra_uses_the_opponents_ratings_when_each_game_was_played() -> None:
    # The qualifying entries carry the rating of the game; later changes of the opponents do
    # not matter. Entries at 1500, 1500, 1500, 1500 + a fifth game at 1600: Ra = 1520.00, S = 2.5.
    state = RatingState(
        qualifying=tuple(QualifyingGame(f"q{i}", "opp", Hundredths(150000), Hundredths(50)) for i in range(4)), seq=4
    )
    first = last_change(qualify([DRAW], [160000], start=state))
    assert first.after.rating == 152000


def test_ra_rounds_a_mean_with_0_6_of_a_hundredth_upwards() -> None:
    # Hundredths sum 4 x 150000 + 150003 = 750003 (= 3 mod 5): mean 150000.6 -> 150001.
    # S = 2.5 -> Rf = Ra = 1500.01.
    changes = qualify([DRAW] * 5, [150000, 150000, 150000, 150000, 150003])
    assert last_change(changes).after.rating == 150001


def test_ra_rounds_a_mean_with_0_4_of_a_hundredth_downwards() -> None:
    # Sum 750002 (= 2 mod 5): mean 150000.4 -> 150000. Ra = 1500.00.
    changes = qualify([DRAW] * 5, [150000, 150000, 150000, 150000, 150002])
    assert last_change(changes).after.rating == 150000


def test_ra_rounds_a_mean_with_0_8_upwards_and_0_2_downwards() -> None:
    # Sum 750004: 150000.8 -> 150001; sum 750001: 150000.2 -> 150000.
    assert last_change(qualify([DRAW] * 5, [150000] * 4 + [150004])).after.rating == 150001
    assert last_change(qualify([DRAW] * 5, [150000] * 4 + [150001])).after.rating == 150000


# --- Which games count (ArenaRules.category) -----------------------------------------------


def test_a_rated_blitz_game_belongs_to_blitz() -> None:
    assert RULES.category(game()) == Category.BLITZ


def test_rated_false_changes_nothing() -> None:
    assert RULES.category(game(rated_flag=False)) == Skip.RATED_FALSE


def test_a_forfeit_changes_nothing() -> None:
    assert RULES.category(game(termination="forfeit")) == Skip.FORFEIT


def test_an_aborted_game_changes_nothing() -> None:
    assert RULES.category(game(termination="aborted")) == Skip.ABORTED


@pytest.mark.parametrize(("base", "increment"), [(180, 1), (600, 5), (0, 0), (90, 0)])
def test_an_unrated_time_control_changes_nothing(base: int, increment: int) -> None:
    assert RULES.category(game(base_seconds=base, increment_seconds=increment)) == Skip.UNRATED_TIME_CONTROL


@pytest.mark.parametrize(("base", "increment", "category"), [(900, 0, "rapid"), (180, 2, "blitz"), (60, 0, "bullet")])
def test_a_disconnection_is_rated_as_usual(base: int, increment: int, category: str) -> None:
    g = game(termination="disconnection", result="0-1", base_seconds=base, increment_seconds=increment)
    assert RULES.category(g) == Category(category)


@pytest.mark.parametrize("termination", [t for t in TERMINATIONS if t not in ("forfeit", "aborted")])
def test_every_termination_but_forfeit_and_aborted_is_rated(termination: str) -> None:
    assert RULES.category(game(termination=termination)) == Category.BLITZ


def test_a_forfeit_is_not_rated_even_with_rated_false_or_an_unrated_time_control() -> None:
    # Whatever the reason reported first, the game is skipped.
    assert isinstance(RULES.category(game(rated_flag=False, termination="forfeit")), Skip)
    assert isinstance(RULES.category(game(base_seconds=1, termination="aborted")), Skip)
