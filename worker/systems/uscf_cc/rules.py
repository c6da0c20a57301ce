"""US Chess correspondence (CC) ratings, exactly as the project's reading of US Chess's page fixes
them (readings U1-U22; the worked examples are tests: tests/unit/rules/test_uscf_cc.py).

Pure arithmetic in integer hundredths. A rating's state is its rating (None while unrated) and
its game credits n: unrated (no rating, n = 0), provisional (1 <= n <= 24: the running average
of performance values), established (n >= 25: Rn = Ro + round(K/400 * ED) + K * (2S - 1), K by
the player's own tier, ED limited to +/-350, and the boundary rule when the new rating crosses
2100.00 or 2400.00). Exactly four quantities are rounded, to the hundredth, half away from
zero: the ED term, the boundary adjustment, the provisional average and the special-forfeit
points. Nothing has a floor or a ceiling: a rating may be negative (U12).

Which rule applies, in order (section 4): `rated: false` and aborted games change nothing; a
special forfeit gives its rated winner 20 % of what a win over an equal opponent would give
him (at most 10.00, no credit) and nothing to anyone else; then both unrated (1700/1300, or
1500 each), one unrated (his performance value; the rated side a credit), a predictable
result (a provisional player involved and the winner 400.00 or more above the loser: a
credit each), else each player by his own status.

`UscfCcRules` is the system the engine runs (`worker.rules.interface.RatingSystem`): its input is the
correspondence game (v1 plus `forfeit_kind`), its one category `correspondence`.
"""

from dataclasses import dataclass
from typing import NamedTuple, cast

from schemas.correspondence_game import CorrespondenceGameFinished
from schemas.game_finished import GameFinished
from worker.rules.hundredths import ONE, Hundredths, round_half_away
from worker.rules.interface import Change, Kind, Rated, SeedRow, Skip
from worker.rules.seed_rows import fixed2, seed_fields

ESTABLISHED_CREDITS = 25  # with 25 credits a player is established: his 26th game is computed so (U4)
ED_LIMIT = Hundredths(350 * ONE)
PERFORMANCE = Hundredths(400 * ONE)  # a win is worth the opponent's rating + 400.00, a loss - 400.00
PREDICTABLE = Hundredths(400 * ONE)  # a winner this much above the loser, or more (U6)
BOUNDARIES = (Hundredths(2100 * ONE), Hundredths(2400 * ONE))
K_BY_TIER = (16, 12, 8)  # below 2100.00, 2100.00 to 2399.99, 2400.00 and above
FORFEIT_SHARE = 20  # percent of a win over an equally rated opponent
FORFEIT_CAP = Hundredths(10 * ONE)
FIRST_WIN, FIRST_LOSS, FIRST_DRAW = Hundredths(1700 * ONE), Hundredths(1300 * ONE), Hundredths(1500 * ONE)

WIN, DRAW, LOSS = Hundredths(ONE), Hundredths(ONE // 2), Hundredths(0)  # a game's score S


class CcState(NamedTuple):
    """A CC rating: `rating` None while unrated; `credits` the game credits (`rated_games`)."""

    rating: Hundredths | None = None
    credits: int = 0
    seq: int = 0

    @property
    def established(self) -> bool:
        return self.rating is not None and self.credits >= ESTABLISHED_CREDITS


# What a game did to one rating (`after.seq` is the old seq: the engine numbers changes), and a
# game's changes (None for a player it leaves alone: no event).
CcChange = Change[CcState]
CcRated = Rated[CcState]


class CcGame(NamedTuple):
    """The facts of a valid game that the rules read."""

    white_score: Hundredths  # WIN, DRAW or LOSS
    rated: bool = True
    aborted: bool = False
    special_forfeit: bool = False  # termination forfeit with forfeit_kind "special" (never a draw)


def tier(rating: Hundredths) -> int:
    """0 below 2100.00, 1 from 2100.00 to 2399.99, 2 from 2400.00."""
    return sum(rating >= boundary for boundary in BOUNDARIES)


def k_factor(rating: Hundredths) -> int:
    """K by the player's own rating before the game, in exact hundredths (U2)."""
    return K_BY_TIER[tier(rating)]


def established_rating(rating: Hundredths, opponent: Hundredths, score: Hundredths) -> Hundredths:
    """Section 5: the established formula, then the boundary rule if the new rating changed tier."""
    k = k_factor(rating)
    ed = max(-ED_LIMIT, min(ED_LIMIT, opponent - rating))
    r1 = Hundredths(rating + round_half_away(k * ed, 400) + k * (2 * score - ONE))
    if tier(r1) == tier(rating):
        return r1
    k_new = k_factor(r1)
    if r1 > rating:  # upwards: Ro < B <= R1
        boundary = next(b for b in BOUNDARIES if rating < b <= r1)
        return Hundredths(boundary + round_half_away((r1 - boundary) * k_new, k))
    boundary = next(b for b in BOUNDARIES if r1 < b <= rating)
    return Hundredths(boundary - round_half_away((boundary - r1) * k_new, k))


def performance(opponent: Hundredths, score: Hundredths) -> Hundredths:
    """A game's performance value: the opponent's rating + 400.00 for a win, - 400.00 for a loss."""
    return Hundredths(opponent + (2 * score - ONE) * PERFORMANCE // ONE)


def running_average(rating: Hundredths, credits: int, value: Hundredths) -> Hundredths:
    """Section 6: round((Ro * n + P) / (n + 1)) (U5)."""
    return Hundredths(round_half_away(rating * credits + value, credits + 1))


def forfeit_points(state: CcState) -> Hundredths:
    """Section 8: 20 % of what a win over an opponent rated exactly as he is would give him
    (the boundary rule included), at most 10.00. For a rated player."""
    assert state.rating is not None
    ro = state.rating
    if state.established:
        won = established_rating(ro, ro, WIN)
    else:
        won = running_average(ro, state.credits, performance(ro, WIN))
    return Hundredths(min(FORFEIT_CAP, round_half_away((won - ro) * FORFEIT_SHARE, 100)))


def rate(game: CcGame, white: CcState, black: CcState) -> CcRated | Skip:
    """What a valid, not duplicate game does to its two players' states (section 4's order)."""
    if not game.rated:
        return Skip.RATED_FALSE
    if game.aborted:
        return Skip.ABORTED
    if game.special_forfeit:
        return _special_forfeit(game, white, black)
    if white.rating is None and black.rating is None:
        return _both_unrated(game.white_score, white, black)
    if white.rating is None or black.rating is None:
        return _one_unrated(game.white_score, white, black)
    if _predictable(game.white_score, white, black):
        return Rated(_credit(white), _credit(black))
    black_score = Hundredths(ONE - game.white_score)
    return Rated(_rated(white, black.rating, game.white_score), _rated(black, white.rating, black_score))


def _credit(state: CcState) -> CcChange:
    return Change(Kind.GAME_CREDIT, state._replace(credits=state.credits + 1))


def _rated(state: CcState, opponent: Hundredths, score: Hundredths) -> CcChange:
    """A rated player's rated game, by his own status."""
    assert state.rating is not None
    if state.established:
        after = established_rating(state.rating, opponent, score)
        return Change(Kind.RATED_GAME, CcState(after, state.credits + 1, state.seq), k_factor(state.rating))
    after = running_average(state.rating, state.credits, performance(opponent, score))
    return Change(Kind.RATED_GAME, CcState(after, state.credits + 1, state.seq))


def _predictable(white_score: Hundredths, white: CcState, black: CcState) -> bool:
    """U6: a provisional player involved, a decisive game, the winner 400.00 or more above the loser."""
    assert white.rating is not None and black.rating is not None
    if (white.established and black.established) or white_score == DRAW:
        return False
    winner, loser = (white.rating, black.rating) if white_score == WIN else (black.rating, white.rating)
    return winner - loser >= PREDICTABLE


def _both_unrated(white_score: Hundredths, white: CcState, black: CcState) -> CcRated:
    """U8: 1700.00 for the winner, 1300.00 for the loser, 1500.00 each for a draw."""
    firsts = {WIN: (FIRST_WIN, FIRST_LOSS), DRAW: (FIRST_DRAW, FIRST_DRAW), LOSS: (FIRST_LOSS, FIRST_WIN)}
    first_white, first_black = firsts[white_score]
    return Rated(
        Change(Kind.FIRST_RATING, CcState(first_white, 1, white.seq)),
        Change(Kind.FIRST_RATING, CcState(first_black, 1, black.seq)),
    )


def _one_unrated(white_score: Hundredths, white: CcState, black: CcState) -> CcRated:
    """U7: the newcomer's first rating is his performance value; the rated player gets a credit."""
    if white.rating is None:
        assert black.rating is not None
        first = performance(black.rating, white_score)
        return Rated(Change(Kind.FIRST_RATING, CcState(first, 1, white.seq)), _credit(black))
    first = performance(white.rating, Hundredths(ONE - white_score))
    return Rated(_credit(white), Change(Kind.FIRST_RATING, CcState(first, 1, black.seq)))


def _special_forfeit(game: CcGame, white: CcState, black: CcState) -> CcRated | Skip:
    """U10, U19: only a rated winner changes, by the forfeit points, with no credit."""
    if game.white_score == DRAW:
        raise ValueError("a special forfeit has a winner (the input check refuses a drawn one)")
    white_won = game.white_score == WIN
    winner = white if white_won else black
    if winner.rating is None:
        return Skip.FORFEIT_UNRATED_WINNER
    k = k_factor(winner.rating) if winner.established else None
    change = Change(Kind.FORFEIT_WIN, winner._replace(rating=Hundredths(winner.rating + forfeit_points(winner))), k)
    return Rated(change, None) if white_won else Rated(None, change)


# --- the input: a valid game's facts for the rules, and for duplicates

SCORE_OF_RESULT = {"1-0": WIN, "1/2-1/2": DRAW, "0-1": LOSS}


def game_of(game: CorrespondenceGameFinished) -> CcGame:
    """What the rules read of a valid game: every game is a correspondence game (its time control
    is validated, then ignored: U16); `forfeit_kind` counts only on a forfeit (U20)."""
    return CcGame(
        SCORE_OF_RESULT[game.result],
        rated=game.rated,
        aborted=game.termination == "aborted",
        special_forfeit=game.termination == "forfeit" and game.forfeit_kind == "special",
    )


def duplicate_facts(game: CorrespondenceGameFinished) -> str:
    """The facts beside v1's that make a game the same game: a forfeit's kind, absent counting as
    ordinary (U17, U20); nothing for any other termination."""
    return f"forfeit_kind={game.forfeit_kind}" if game.termination == "forfeit" else ""


# --- seeding rows: player_id,category,rating,rated_games (docs/systems/uscf-cc.md, "Seeding rows")

CATEGORY = "correspondence"  # the one category of the system (U16)
SEED_HEADER = ("player_id", "category", "rating", "rated_games")


def parse_seed_row(fields: list[str]) -> SeedRow:
    """One row, as the contract writes it: an id, `correspondence`, a decimal with at most two
    decimals and an optional leading `-` (no floor, U12, U21), and at least one game credit.
    ValueError says which field is wrong."""
    player_id, _, rating, credits = seed_fields(fields, SEED_HEADER, (CATEGORY,))
    negative = rating.startswith("-")
    magnitude = fixed2("rating", rating[1:] if negative else rating)
    if not (credits.isascii() and credits.isdigit()) or int(credits) < 1:
        raise ValueError(f"rated_games: {credits!r} is not an integer >= 1 (a rating averages at least one game)")
    return SeedRow(player_id, CATEGORY, Hundredths(-magnitude if negative else magnitude), int(credits))


# --- the system the engine runs


@dataclass(frozen=True, slots=True)
class UscfCcRules:
    """US Chess correspondence as a rating system (see `worker.rules.interface.RatingSystem`)."""

    name = "uscf-cc"
    game_model = CorrespondenceGameFinished
    unseen = CcState()
    categories = (CATEGORY,)
    kinds = (Kind.RATED_GAME, Kind.FIRST_RATING, Kind.GAME_CREDIT, Kind.FORFEIT_WIN, Kind.IMPORTED)
    skips = (Skip.RATED_FALSE, Skip.ABORTED, Skip.FORFEIT_UNRATED_WINNER, Skip.DUPLICATE)
    # Every game but a special forfeit changes both players: a first rating beside a credit or a
    # first rating, a credit beside a credit, a rated game beside a rated game.
    paired_kinds = frozenset({Kind.RATED_GAME, Kind.FIRST_RATING, Kind.GAME_CREDIT})
    seed_header = SEED_HEADER
    fact_names = "white, black, result, termination, rated, time control or a forfeit's forfeit_kind"

    def category(self, game: GameFinished) -> str | Skip:
        """Every game is a correspondence game (U16); `rated: false` and aborted games change
        nothing (section 4, steps 3 and 4)."""
        if not game.rated:
            return Skip.RATED_FALSE
        if game.termination == "aborted":
            return Skip.ABORTED
        return CATEGORY

    def rate_game(self, game: GameFinished, category: str, white: CcState, black: CcState) -> CcRated | Skip:
        return rate(game_of(_correspondence(game)), white, black)

    def facts(self, game: GameFinished) -> str:
        return duplicate_facts(_correspondence(game))

    def refuse(self, game: GameFinished, record_ms: int | None, allowance_seconds: int) -> None:
        return None  # the model's checks are all

    def imported_detail(self, current: object) -> None:
        return None

    def numbered(self, state: CcState, seq: int) -> CcState:
        return CcState(state.rating, state.credits, seq)

    def parse_seed_row(self, fields: list[str]) -> SeedRow:
        return parse_seed_row(fields)

    def seeded(self, row: SeedRow, current: CcState) -> CcState:
        return CcState(row.rating, row.rated_games, current.seq)

    def row_of(self, player_id: str, category: str, state: CcState) -> SeedRow:
        # Contract v2 imports any state, an unrated one too (`rating_after` null).
        return SeedRow(player_id, category, state.rating, state.credits)


def _correspondence(game: GameFinished) -> CorrespondenceGameFinished:
    """A deployment of this system decodes its input with `UscfCcRules.game_model`: every game it
    is given is a correspondence game."""
    return cast(CorrespondenceGameFinished, game)
