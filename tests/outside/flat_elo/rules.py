"""The toy system's state and rules: pure, integers only (hundredths of a rating point).

Each counted game (the arena's counted games: rated, in a rated time control, neither forfeited
nor aborted) changes both players' ratings in its category by K x (score - expected), K = 20;
the expected score is FIDE's table B for the difference in whole points, each side's of its own.
A player never seen starts at 1500.00 with no game."""

from dataclasses import dataclass
from typing import NamedTuple, cast

from schemas.game_finished import GameFinished
from worker.rules.categories import Category, arena_category
from worker.rules.hundredths import ONE, Hundredths, Points
from worker.rules.interface import Change, Kind, Rated, SeedRow, Skip
from worker.rules.seed_rows import fixed2, rated_games, seed_fields
from worker.rules.tables import pd_higher

NAME = "flat-elo"
K = 20
START = Hundredths(150_000)
SCORES = {"1-0": Hundredths(100), "0-1": Hundredths(0), "1/2-1/2": Hundredths(50)}  # white's


class FlatState(NamedTuple):
    rating: Hundredths | None = None  # None: never played nor seeded (1500.00 at its first game)
    rated_games: int = 0
    seq: int = 0


def expected(own: Hundredths, other: Hundredths) -> Hundredths:
    """The expected score of `own` against `other`, in hundredths (table B)."""
    higher = pd_higher(Points(abs(own - other) // ONE))
    return higher if own >= other else Hundredths(ONE - higher)


def rated(state: FlatState, other: FlatState, score: Hundredths) -> Change[FlatState]:
    own, theirs = state.rating or START, other.rating or START
    e = expected(own, theirs)
    after = FlatState(Hundredths(own + K * (score - e)), state.rated_games + 1, state.seq)
    return Change(Kind.RATED_GAME, after, K, e)


@dataclass(frozen=True, slots=True)
class FlatEloRules:
    """The toy system (`worker.rules.interface.RatingSystem`)."""

    name = NAME
    game_model = GameFinished
    unseen = FlatState()
    categories = tuple(Category)
    kinds = (Kind.RATED_GAME, Kind.IMPORTED)
    skips = (Skip.RATED_FALSE, Skip.UNRATED_TIME_CONTROL, Skip.FORFEIT, Skip.ABORTED, Skip.DUPLICATE)
    paired_kinds = frozenset({Kind.RATED_GAME})
    seed_header = ("player_id", "category", "rating", "games")
    fact_names = "white, black, result, termination, rated or time control"

    def category(self, game: GameFinished) -> Category | Skip:
        return arena_category(game)

    def rate_game(self, game: GameFinished, category: str, white: FlatState, black: FlatState) -> Rated[FlatState]:
        score = SCORES[game.result]
        return Rated(rated(white, black, score), rated(black, white, Hundredths(ONE - score)))

    def facts(self, game: GameFinished) -> str:
        return ""

    def refuse(self, game: GameFinished, record_ms: int | None, allowance_seconds: int) -> None:
        return None

    def imported_detail(self, current: object) -> None:
        return None

    def numbered(self, state: FlatState, seq: int) -> FlatState:
        return FlatState(state.rating, state.rated_games, seq)

    def parse_seed_row(self, fields: list[str]) -> SeedRow:
        player_id, category, rating, games = seed_fields(fields, self.seed_header, tuple(Category))
        return SeedRow(player_id, cast(str, Category(category)), fixed2("rating", rating), rated_games(games))

    def seeded(self, row: SeedRow, current: FlatState) -> FlatState:
        return FlatState(row.rating, row.rated_games, current.seq)

    def row_of(self, player_id: str, category: str, state: FlatState) -> SeedRow | None:
        return None if state.rating is None else SeedRow(player_id, category, state.rating, state.rated_games)
