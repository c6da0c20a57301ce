"""Rating categories and the time controls the arena rates in each of them."""

from enum import StrEnum

from schemas.game_finished import GameFinished
from worker.rules.interface import Skip


class Category(StrEnum):
    RAPID = "rapid"
    BLITZ = "blitz"
    BULLET = "bullet"


def _controls(category: Category, *controls: tuple[int, int]) -> dict[tuple[int, int], Category]:
    """Map "M+S" written as (M minutes, S seconds) to (base_seconds, increment_seconds)."""
    return {(60 * minutes, seconds): category for minutes, seconds in controls}


# The only rated time controls (rules, "Conditions of play" 3); any other is an unrated game.
RATED_TIME_CONTROLS: dict[tuple[int, int], Category] = {
    **_controls(Category.RAPID, (15, 0), (25, 0), (45, 0), (10, 10), (15, 10), (25, 10), (45, 10)),
    **_controls(Category.BLITZ, (3, 0), (5, 0), (10, 0), (3, 2), (3, 3), (5, 3)),
    **_controls(Category.BULLET, (1, 0), (2, 0), (1, 1), (1, 2)),
}


def category_of(base_seconds: int, increment_seconds: int) -> Category | None:
    """The category of a time control, or None when the arena does not rate it."""
    return RATED_TIME_CONTROLS.get((base_seconds, increment_seconds))


def arena_category(game: GameFinished) -> Category | Skip:
    """The arena's counted games: `rated: false`, then forfeits and aborted games, then a time
    control it does not rate, change nothing; any other game counts in its control's category."""
    if not game.rated:
        return Skip.RATED_FALSE
    if game.termination == "forfeit":
        return Skip.FORFEIT
    if game.termination == "aborted":
        return Skip.ABORTED
    tc = game.time_control
    category = category_of(tc.base_seconds, tc.increment_seconds)
    return Skip.UNRATED_TIME_CONTROL if category is None else category
