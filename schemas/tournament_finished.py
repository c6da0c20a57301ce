"""Input of the `tornelo` system: `arena.tournament.finished.v1`, the end of a tournament (for the
service of a later release; docs/systems/tornelo.md, "Operating it"). `event_id` may be longer
than a game's, to hold an operator's close (`operator/{tournament_id}/{unix_ms}` with a
128-character id); `finished_at` is informational."""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from schemas.types import Id, Timestamp


class TournamentFinished(BaseModel):
    """A tournament's end. Strict types; unknown extra fields are ignored, as the game input's."""

    model_config = ConfigDict(strict=True, frozen=True, extra="ignore", title="arena.tournament.finished.v1")

    event_id: Annotated[str, Field(min_length=1, max_length=160)]
    tournament_id: Id
    finished_at: Timestamp
