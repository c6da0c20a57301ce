"""A seeding row: an established rating to import (`player_id,category,rating,rated_games`)."""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from schemas.types import CategoryName, Id, TwoDecimals


class SeedRecord(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True, extra="forbid", title="seed record")

    player_id: Id
    category: CategoryName
    rating: Annotated[TwoDecimals, Field(ge=1000)]
    rated_games: Annotated[int, Field(ge=0)]
