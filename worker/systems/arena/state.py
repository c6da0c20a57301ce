"""The state of one player's rating in one category: all a rating system reads and writes."""

from typing import NamedTuple

from worker.rules.hundredths import Hundredths


class QualifyingGame(NamedTuple):
    """One counted game of an unrated player on his way to a first rating."""

    game_id: str
    opponent_id: str
    opponent_rating: Hundredths  # as it stood when the game was played
    score: Hundredths  # 100, 50 or 0


class RatingState(NamedTuple):
    """A rating in one category. The default value is a player the arena has never seen there.

    `seq` numbers the changes of this rating (0 = never changed); only the engine advances it.
    """

    rating: Hundredths | None = None  # None while unrated
    rated_games: int = 0  # rated games since the current rating was established
    qualifying: tuple[QualifyingGame, ...] = ()
    seq: int = 0

    @property
    def rated(self) -> bool:
        return self.rating is not None


UNSEEN = RatingState()
