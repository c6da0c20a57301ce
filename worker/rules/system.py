"""The interface between the engine and a rating system.

The engine owns everything that is the same for any system: duplicates, sequence numbers,
events and their encoding. A rating system owns only the arithmetic of its regulations:
which games count in which category (`category`) and what a counted game does to the two
ratings involved (`rate`). The arena's rules (`worker.rules.arena`) are one implementation.

A per-game system (US Chess correspondence, Glicko-2 with one-game periods) implements `rate`
directly. A per-period system (FIDE, Tornelo: one change per rating period from the sum of
its games) would record the game in the state in `rate` and change the rating when a period
closes; that needs a second entry point, added when such a system is built, not before.
"""

from enum import StrEnum
from typing import NamedTuple, Protocol

from schemas.game_finished import GameFinished
from worker.rules.categories import Category
from worker.rules.hundredths import ONE, Hundredths
from worker.rules.state import RatingState


class Skip(StrEnum):
    """Why a valid game changed nothing. The values are metric labels: do not rename."""

    RATED_FALSE = "rated_false"
    UNRATED_TIME_CONTROL = "unrated_time_control"
    FORFEIT = "forfeit"
    ABORTED = "aborted"
    BOTH_UNRATED = "both_unrated"
    NOT_COUNTED = "not_counted"  # an unrated player's loss before his count starts
    DUPLICATE = "duplicate"  # decided by the engine, never by a rating system


class Kind(StrEnum):
    """What happened to one rating; the `kind` field of the output event."""

    RATED_GAME = "rated_game"
    QUALIFYING_GAME = "qualifying_game"
    FIRST_RATING = "first_rating"
    QUALIFICATION_RESET = "qualification_reset"
    RATING_LOST = "rating_lost"
    IMPORTED = "imported"


class Change(NamedTuple):
    """What a game did to one rating. `after.seq` is the state's old seq: the engine numbers changes."""

    kind: Kind
    after: RatingState
    k_factor: int | None = None
    expected_score: Hundredths | None = None  # PD


class Pairing(NamedTuple):
    """The facts of a counted game that a rating system needs."""

    game_id: str
    white_id: str
    black_id: str
    white_score: Hundredths  # 100, 50 or 0

    @property
    def black_score(self) -> Hundredths:
        return Hundredths(ONE - self.white_score)


class Rated(NamedTuple):
    """The changes of a counted game; None for a player whose rating it leaves alone."""

    white: Change | None
    black: Change | None


class RatingSystem(Protocol):
    def category(self, game: GameFinished) -> Category | Skip:
        """The category whose ratings the game may change, or why it changes none."""
        ...

    def rate(self, pairing: Pairing, category: Category, white: RatingState, black: RatingState) -> Rated | Skip:
        """What the game does to the two players' states in `category` (pure)."""
        ...
