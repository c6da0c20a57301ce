"""Input of the `uscf-cc` system: `arena.game.finished.v1.correspondence` (docs/systems/uscf-cc.md, "Input"):
v1's game plus an optional `forfeit_kind`."""

from typing import Literal

from pydantic import ConfigDict, model_validator

from schemas.system_game import SystemGameFinished

ForfeitKind = Literal["ordinary", "special"]


class CorrespondenceGameFinished(SystemGameFinished):
    """A finished correspondence game. `forfeit_kind`, when present, is exactly `"ordinary"` or
    `"special"` whatever the termination (`null` too is refused); absent, it is `"ordinary"`.
    A special forfeit has a winner. An object with a `control` key is never a game."""

    model_config = ConfigDict(strict=True, frozen=True, extra="ignore", title="arena.game.finished.v1.correspondence")

    forfeit_kind: ForfeitKind = "ordinary"

    @model_validator(mode="after")
    def _special_forfeit_has_a_winner(self) -> "CorrespondenceGameFinished":
        if self.termination == "forfeit" and self.forfeit_kind == "special" and self.result == "1/2-1/2":
            raise ValueError("a special forfeit (forfeit_kind special) needs a winner, not 1/2-1/2")
        return self
