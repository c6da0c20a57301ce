"""A `tornelo` seeding row: `player_id,category,rating,rated_games,k_modifier` (contract v2,
"Seeding rows"): a whole-number rating of 100 or more, at most 2700 while provisional (fewer than
20 games; 0 games: an arbiter's initial rating), its games, and the player's K modifier
(0.01 to 10.00, two decimals at most; null: 1.00)."""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from schemas.rating_changed_periods import KModifier
from schemas.types import CategoryName, Id


class TorneloSeedRecord(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True, extra="forbid", title="seed record (tornelo)")

    player_id: Id
    category: CategoryName
    rating: Annotated[int, Field(ge=100)]  # digits only
    rated_games: Annotated[int, Field(ge=0)]
    k_modifier: KModifier | None

    @model_validator(mode="after")
    def _provisional_within_range(self) -> "TorneloSeedRecord":
        if self.rated_games < 20 and self.rating > 2700:
            raise ValueError("a provisional rating (fewer than 20 games) is within 100-2700")
        return self
