"""A `uscf-cc` seeding row: `player_id,category,rating,rated_games` (docs/systems/uscf-cc.md, "Seeding rows"):
category `correspondence`, a rating with at most two decimals and any sign (no floor), at least
one game credit (fewer than 25: provisional)."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.types import Id, TwoDecimals


class CcSeedRecord(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True, extra="forbid", title="seed record (uscf-cc)")

    player_id: Id
    category: Literal["correspondence"]
    rating: TwoDecimals
    rated_games: Annotated[int, Field(ge=1)]
