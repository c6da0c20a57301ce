"""A `fide` seeding row: `player_id,category,rating,rated_games,reached_2400,birth_year` (docs/systems/fide.md,
"Seeding rows"): a published rating, a whole number of 1400 or more, its games, whether it has
reached 2400 (null: it has when the rating is 2400 or more; false with such a rating is refused)
and the player's year of birth, if known (K reads both: docs/systems/fide.md, "Rules and readings")."""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from schemas.types import CategoryName, Id


class FideSeedRecord(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True, extra="forbid", title="seed record (fide)")

    player_id: Id
    category: CategoryName
    rating: Annotated[int, Field(ge=1400)]  # digits only: 1800.00 is refused
    rated_games: Annotated[int, Field(ge=0)]
    reached_2400: bool | None
    birth_year: Annotated[int, Field(ge=1000, le=9999)] | None

    @model_validator(mode="after")
    def _a_rating_of_2400_has_reached_it(self) -> "FideSeedRecord":
        if self.reached_2400 is False and self.rating >= 2400:
            raise ValueError("reached_2400 false with a rating of 2400 or more: a published 2400 has reached it")
        return self
