"""Settings shared by every command, from environment variables (prefix `RATING_`)."""

from typing import Annotated

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class RulesSettings(BaseSettings):
    """What the rules and the input checks need; the same for `rate` and the streaming worker."""

    model_config = SettingsConfigDict(env_prefix="RATING_", extra="ignore")

    # The fixed rating shown to unrated players; it never enters a calculation.
    training_rating: Annotated[int, Field(ge=0, le=9999)] = 1200
    # A message larger than this is dead-lettered as too_large. 64 KiB is ~200x a real game
    # event (~300 bytes), small enough that a flood of oversized messages cannot exhaust memory.
    max_message_bytes: Annotated[int, Field(ge=256, le=16 * 1024 * 1024)] = 65536
