"""The games of contract v2's systems: v1's game, and never an object with a `control` key
(docs/contract-v2.md, "The per-period systems", "Close lines": in the service a record with a `control` key is
`invalid_schema` for every system of version 2, so that `run` and `rate` agree)."""

from typing import Any

from pydantic import ConfigDict, model_validator

from schemas.game_finished import GameFinished


class SystemGameFinished(GameFinished):
    """A finished game as a v2 system reads it from the arena's input topic (`glicko2`): v1's
    fields; an object with a `control` key is a control message, never a game."""

    model_config = ConfigDict(strict=True, frozen=True, extra="ignore", title="arena.game.finished.v1")

    @model_validator(mode="before")
    @classmethod
    def _not_a_control_message(cls, data: Any) -> Any:
        if isinstance(data, dict) and "control" in data:
            raise ValueError("an object with a `control` key is a control message, never a game")
        return data
