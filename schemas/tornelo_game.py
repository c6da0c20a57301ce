"""Input of the `tornelo` system: the arena's `arena.game.finished.v1` plus an optional
`tournament_id` (docs/systems/tornelo.md, "Input")."""

from pydantic import ConfigDict

from schemas.system_game import SystemGameFinished
from schemas.types import Id


class TorneloGameFinished(SystemGameFinished):
    """A finished game as `tornelo` reads it: v1's fields and the tournament it belongs to.
    `tournament_id` absent or `null`: no tournament (the game is an event of its own); present,
    an id (v1's pattern, strict: `7` is refused). An object with a `control` key is never a game."""

    model_config = ConfigDict(strict=True, frozen=True, extra="ignore", title="arena.game.finished.v1.tornelo")

    tournament_id: Id | None = None
