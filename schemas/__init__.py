"""The event contract (`shared/spec/events.md`, version 1) as pydantic models."""

from schemas.game_finished import GameFinished, TimeControl
from schemas.rating_changed import QualifyingEntry, RatingChanged, RatingStateSnapshot
from schemas.seed_record import SeedRecord

__all__ = ["GameFinished", "QualifyingEntry", "RatingChanged", "RatingStateSnapshot", "SeedRecord", "TimeControl"]
