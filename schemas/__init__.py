"""The event contract, version 1 (`docs/contract.md`), as pydantic models."""

from schemas.game_finished import GameFinished, TimeControl
from schemas.rating_changed import QualifyingEntry, RatingChanged, RatingStateSnapshot
from schemas.seed_record import SeedRecord

__all__ = ["GameFinished", "QualifyingEntry", "RatingChanged", "RatingStateSnapshot", "SeedRecord", "TimeControl"]
