"""Input: `arena.game.finished.v1`."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from schemas.types import Id, Timestamp

Result = Literal["1-0", "0-1", "1/2-1/2"]
Termination = Literal[
    "checkmate",
    "resignation",
    "timeout",
    "disconnection",
    "stalemate",
    "draw_agreement",
    "repetition",
    "insufficient_material",
    "fifty_moves",
    "forfeit",
    "aborted",
]


class TimeControl(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True, extra="ignore")

    base_seconds: Annotated[int, Field(ge=0)]
    increment_seconds: Annotated[int, Field(ge=0)]


class GameFinished(BaseModel):
    """A finished game. Strict types; unknown extra fields are ignored (forward compatibility)."""

    model_config = ConfigDict(strict=True, frozen=True, extra="ignore", title="arena.game.finished.v1")

    event_id: Annotated[str, Field(min_length=1, max_length=128)]
    game_id: Id
    finished_at: Timestamp
    rated: bool
    time_control: TimeControl
    white_id: Id
    black_id: Id
    result: Result
    termination: Termination

    @model_validator(mode="after")
    def _players_differ(self) -> "GameFinished":
        if self.white_id == self.black_id:
            raise ValueError("white_id and black_id must be different players")
        return self
