"""Output: `arena.rating.changed.v1`, one event per changed rating (key `{player_id}/{category}`).

These models describe and validate the events; the worker encodes them itself, byte for byte
as the contract's "Encoding" section says (`worker.engine.events`), and never re-encodes them.
"""

from decimal import Decimal
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from schemas.types import CategoryName, Id, Timestamp, TwoDecimals

EventKind = Literal["rated_game", "qualifying_game", "first_rating", "qualification_reset", "rating_lost", "imported"]
_SCORES = (Decimal(1), Decimal("0.5"), Decimal(0))


def _check_score(value: Decimal) -> Decimal:
    if value not in _SCORES:
        raise ValueError("a score is 1, 0.5 or 0")
    return value


# Literal[1, 0.5, 0] is not a valid type (a float in a Literal), hence a checked Decimal.
Score = Annotated[Decimal, AfterValidator(_check_score), WithJsonSchema({"enum": [1, 0.5, 0]})]
GAME_FIELDS = ("game_id", "source_event_id", "opponent_id", "score", "finished_at")

# kind -> (rating_before set, rating_after set, k_factor and expected_score set, game fields set)
# None = "if it is a number" (imported: the previous rating may be null).
_SET_BY_KIND: dict[str, tuple[bool | None, bool, bool, bool]] = {
    "rated_game": (True, True, True, True),
    "rating_lost": (True, False, True, True),
    "qualifying_game": (False, False, False, True),
    "qualification_reset": (False, False, False, True),
    "first_rating": (False, True, False, True),
    "imported": (None, True, False, False),
}


class QualifyingEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    game_id: Id
    opponent_id: Id
    opponent_rating: TwoDecimals
    score: Score


class RatingStateSnapshot(BaseModel):
    """The whole state of a rating after a change: enough to restore it from this event alone."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    status: Literal["unrated", "rated"]
    rating: TwoDecimals | None
    rated_games: Annotated[int, Field(ge=0)]
    qualifying: list[QualifyingEntry]
    seq: Annotated[int, Field(ge=1)]

    @model_validator(mode="after")
    def _status_matches_rating(self) -> "RatingStateSnapshot":
        if (self.status == "rated") != (self.rating is not None):
            raise ValueError("status 'rated' goes with a rating, 'unrated' with null")
        return self


class RatingChanged(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", title="arena.rating.changed.v1")

    event_id: str
    game_id: Id | None
    source_event_id: Annotated[str, Field(min_length=1, max_length=128)] | None
    player_id: Id
    opponent_id: Id | None
    category: CategoryName
    kind: EventKind
    score: Score | None
    rating_before: TwoDecimals | None
    rating_after: TwoDecimals | None
    display_before: int
    display_after: int
    delta: TwoDecimals | None
    k_factor: int | None
    expected_score: TwoDecimals | None
    seq: Annotated[int, Field(ge=1)]
    state: RatingStateSnapshot
    finished_at: Timestamp | None

    @model_validator(mode="after")
    def _nulls_match_kind(self) -> "RatingChanged":
        before, after, k_and_pd, game = _SET_BY_KIND[self.kind]
        problems = []
        if before is not None and (self.rating_before is not None) != before:
            problems.append("rating_before")
        if (self.rating_after is not None) != after:
            problems.append("rating_after")
        both = self.rating_before is not None and self.rating_after is not None
        if (self.delta is not None) != both or (both and self.delta != _diff(self.rating_after, self.rating_before)):
            problems.append("delta")
        if (self.k_factor is not None) != k_and_pd or (self.expected_score is not None) != k_and_pd:
            problems.append("k_factor/expected_score")
        if any((getattr(self, f) is not None) != game for f in GAME_FIELDS):
            problems.append("game fields")
        if self.seq != self.state.seq:
            problems.append("seq (differs from state.seq)")
        if problems:
            raise ValueError(f"fields not as the contract sets them for kind {self.kind!r}: {', '.join(problems)}")
        return self


def _diff(after: Decimal | None, before: Decimal | None) -> Decimal | None:
    return None if after is None or before is None else after - before
