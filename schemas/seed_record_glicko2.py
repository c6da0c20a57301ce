"""A `glicko2` seeding row: `player_id,category,rating,rated_games,deviation,volatility`
(docs/systems/glicko2.md, "Seeding rows"): a rating of 400.00 or more, its games, and its deviation (45.00 to
500.00) and volatility (above 0, at most 0.1, nine decimals at most), both given or both empty
(then 500.00 and 0.09), given when the rating has games."""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from schemas.rating_changed_v2 import Deviation, Volatility
from schemas.types import CategoryName, Id, TwoDecimals


class Glicko2SeedRecord(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True, extra="forbid", title="seed record (glicko2)")

    player_id: Id
    category: CategoryName
    rating: Annotated[TwoDecimals, Field(ge=400)]
    rated_games: Annotated[int, Field(ge=0)]
    deviation: Deviation | None
    volatility: Volatility | None

    @model_validator(mode="after")
    def _both_or_neither(self) -> "Glicko2SeedRecord":
        if (self.deviation is None) != (self.volatility is None):
            raise ValueError("deviation and volatility: give both or neither")
        if self.rated_games > 0 and self.deviation is None:
            raise ValueError("a rating with rated games gives its deviation and volatility")
        return self
