"""The Premium Chess Arena rating rules, as `docs/systems/arena.md` reads them.

Everything is in integer hundredths: ratings, PD, scores (a win is 100, a draw 50).
Not taken from FIDE: the 400-point cap, K = 10 from 2400, the K*n <= 700 cap and rounding
changes to whole points (the arena's text does not say them).
"""

from dataclasses import dataclass
from decimal import Decimal
from typing import cast

from pydantic import ValidationError

from schemas.game_finished import GameFinished
from schemas.seed_record import SeedRecord
from worker.rules.categories import Category, arena_category
from worker.rules.hundredths import ONE, Hundredths, Points, hundredths, round_half_up
from worker.rules.interface import Change, Kind, Pairing, Rated, SeedRow, Skip
from worker.rules.seed_rows import fixed2, rated_games, seed_fields
from worker.rules.tables import dp_for, pd_higher
from worker.systems.arena.state import UNSEEN, QualifyingGame, RatingState

FLOOR = Hundredths(1000 * ONE)  # a rating under 1000.00 is lost; exactly 1000.00 is kept
QUALIFYING_GAMES = 5
PROVISIONAL_GAMES = 30  # K = 40 for the 1st to 30th rated game after a rating is established
K_PROVISIONAL = 40
K_ESTABLISHED = {Category.RAPID: 20, Category.BLITZ: 20, Category.BULLET: 10}
BONUS_PER_HALF_POINT = Hundredths(20 * ONE)  # Rf = Ra + 20 for each half point over 50%


def k_factor(category: Category, rated_games: int) -> int:
    """K for a player who has completed `rated_games` rated games since his rating was established."""
    return K_PROVISIONAL if rated_games < PROVISIONAL_GAMES else K_ESTABLISHED[category]


def expected_scores(rating_a: Hundredths, rating_b: Hundredths) -> tuple[Hundredths, Hundredths]:
    """Table B's PD for each player, from D = |Ra - Rb| rounded to a whole point."""
    d = Points(round_half_up(abs(rating_a - rating_b), ONE))
    high = pd_higher(d)
    if rating_a == rating_b:
        return Hundredths(50), Hundredths(50)
    low = Hundredths(ONE - high)
    return (high, low) if rating_a > rating_b else (low, high)


def rated_game(category: Category, state: RatingState, expected: Hundredths, score: Hundredths) -> Change[RatingState]:
    """A rated player's game against a rated opponent: Rn = Ro + K * (score - PD), then the floor."""
    assert state.rating is not None
    k = k_factor(category, state.rated_games)
    new_rating = Hundredths(state.rating + k * (score - expected))
    if new_rating < FLOOR:
        return Change(Kind.RATING_LOST, RatingState(seq=state.seq), k, expected)
    after = RatingState(new_rating, state.rated_games + 1, (), state.seq)
    return Change(Kind.RATED_GAME, after, k, expected)


def first_rating(games: tuple[QualifyingGame, ...]) -> Hundredths:
    """Rf from the counted qualifying games (hundredths), before the floor is applied."""
    n = len(games)
    average = round_half_up(sum(g.opponent_rating for g in games), n)  # Ra, to 0.01, .005 upwards
    total = sum(g.score for g in games)  # S in hundredths
    half = n * ONE // 2  # 50%: S = 2.5 of 5
    if total >= half:
        return Hundredths(average + BONUS_PER_HALF_POINT * (total - half) // 50)
    p = Hundredths(total // n)  # S/5 is always a whole number of hundredths (S is a multiple of 0.5)
    return Hundredths(average + hundredths(dp_for(p)))


def qualifying_game(
    state: RatingState, game_id: str, opponent_id: str, opponent_rating: Hundredths, score: Hundredths
) -> Change[RatingState] | None:
    """An unrated player's game against a rated opponent; None when it is not counted."""
    if not state.qualifying and score == 0:
        return None  # the count starts with the first game scoring at least 0.5
    counted = (*state.qualifying, QualifyingGame(game_id, opponent_id, opponent_rating, score))
    if len(counted) < QUALIFYING_GAMES:
        return Change(Kind.QUALIFYING_GAME, RatingState(None, 0, counted, state.seq))
    rating = first_rating(counted)
    if rating < FLOOR:
        return Change(Kind.QUALIFICATION_RESET, RatingState(seq=state.seq))
    return Change(Kind.FIRST_RATING, RatingState(rating=rating, seq=state.seq))


_WHITE_SCORE = {"1-0": Hundredths(100), "1/2-1/2": Hundredths(50), "0-1": Hundredths(0)}


@dataclass(frozen=True, slots=True)
class ArenaRules:
    """The arena's rating system (see `worker.rules.interface.RatingSystem`)."""

    name = "arena"
    game_model = GameFinished
    unseen = UNSEEN
    categories = tuple(Category)
    kinds = (
        Kind.RATED_GAME,
        Kind.QUALIFYING_GAME,
        Kind.FIRST_RATING,
        Kind.QUALIFICATION_RESET,
        Kind.RATING_LOST,
        Kind.IMPORTED,
    )
    skips = (
        Skip.RATED_FALSE,
        Skip.UNRATED_TIME_CONTROL,
        Skip.FORFEIT,
        Skip.ABORTED,
        Skip.BOTH_UNRATED,
        Skip.NOT_COUNTED,
        Skip.DUPLICATE,
    )
    # A rated game and a lost rating change both players (both were rated): each has its event.
    paired_kinds = frozenset({Kind.RATED_GAME, Kind.RATING_LOST})
    seed_header = ("player_id", "category", "rating", "rated_games")
    fact_names = "white, black, result, termination, rated or time control"

    def category(self, game: GameFinished) -> Category | Skip:
        return arena_category(game)

    def rate_game(
        self, game: GameFinished, category: str, white: RatingState, black: RatingState
    ) -> Rated[RatingState] | Skip:
        pairing = Pairing(game.game_id, game.white_id, game.black_id, _WHITE_SCORE[game.result])
        # `category` is what `self.category` gave: a Category already (no enum lookup per game).
        return self.rate(pairing, cast(Category, category), white, black)

    def rate(
        self, pairing: Pairing, category: Category, white: RatingState, black: RatingState
    ) -> Rated[RatingState] | Skip:
        if white.rating is not None and black.rating is not None:
            pd_white, pd_black = expected_scores(white.rating, black.rating)
            return Rated(
                rated_game(category, white, pd_white, pairing.white_score),
                rated_game(category, black, pd_black, pairing.black_score),
            )
        if white.rating is None and black.rating is None:
            return Skip.BOTH_UNRATED
        # One rated, one unrated: the rated player's state never changes.
        if white.rating is None:
            assert black.rating is not None
            change = qualifying_game(white, pairing.game_id, pairing.black_id, black.rating, pairing.white_score)
            return Skip.NOT_COUNTED if change is None else Rated(change, None)
        change = qualifying_game(black, pairing.game_id, pairing.white_id, white.rating, pairing.black_score)
        return Skip.NOT_COUNTED if change is None else Rated(None, change)

    def facts(self, game: GameFinished) -> str:
        return ""  # v1's facts only: the arena's digests are those of every earlier release

    def refuse(self, game: GameFinished, record_ms: int | None, allowance_seconds: int) -> None:
        return None  # the model's checks are all

    def imported_detail(self, current: object) -> None:
        return None

    def numbered(self, state: RatingState, seq: int) -> RatingState:
        return RatingState(state.rating, state.rated_games, state.qualifying, seq)

    def parse_seed_row(self, fields: list[str]) -> SeedRow:
        """`player_id,category,rating,rated_games`: an established rating (1000.00 or more, at
        most two decimals) and its rated games (contract v1, "Seeding established ratings")."""
        player_id, category, rating, games = seed_fields(fields, self.seed_header)  # id, category: by the model
        value = fixed2("rating", rating)
        count = rated_games(games)
        try:
            record = SeedRecord(
                player_id=player_id,
                category=category,  # type: ignore[arg-type]  # validated by the model
                rating=Decimal(value) / 100,
                rated_games=count,
            )
        except ValidationError as e:
            first = e.errors(include_url=False)[0]
            field = ".".join(str(p) for p in first["loc"])
            raise ValueError(f"{field}: {first['msg']}") from None
        return SeedRow(record.player_id, Category(record.category), value, record.rated_games)

    def seeded(self, row: SeedRow, current: RatingState) -> RatingState:
        return RatingState(rating=row.rating, rated_games=row.rated_games, seq=current.seq)

    def row_of(self, player_id: str, category: str, state: RatingState) -> SeedRow | None:
        # Contract v1's `imported` event always carries a rating: an unrated one is not imported.
        return None if state.rating is None else SeedRow(player_id, category, state.rating, state.rated_games)
