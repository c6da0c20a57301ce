"""Output of contract v2: `arena.rating.changed.v2.{system}`, one event per changed rating
(key `{player_id}/{category}`). `system` selects the shapes of `category`, `kind`, `state` and
`detail`; this release describes `uscf-cc` (the other systems of v2 join the union when built).

As for v1, the models describe and validate the events; the worker encodes them itself, byte
for byte (`worker.engine.events_v2`).
"""

from decimal import Decimal
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from schemas.rating_changed import GAME_FIELDS, Score
from schemas.types import Id, Timestamp, TwoDecimals

CcKind = Literal["rated_game", "first_rating", "game_credit", "forfeit_win", "imported"]
# kind -> (rating_before set, delta set, k_factor may be set, game fields set); None = "if a number"
_CC_FIELDS: dict[str, tuple[bool | None, bool | None, bool, bool]] = {
    "rated_game": (True, True, True, True),
    "first_rating": (False, False, False, True),
    "game_credit": (True, True, False, True),
    "forfeit_win": (True, True, True, True),
    "imported": (None, None, False, False),
}


class CcStateSnapshot(BaseModel):
    """A `uscf-cc` rating's whole state: its rating (null while unrated) and game credits."""

    model_config = ConfigDict(frozen=True, extra="forbid", title="uscf-cc state")

    rating: TwoDecimals | None
    rated_games: Annotated[int, Field(ge=0)]
    seq: Annotated[int, Field(ge=1)]


class CcDetail(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", title="uscf-cc detail")

    k_factor: Literal[16, 12, 8] | None


class CcRatingChanged(BaseModel):
    """A `uscf-cc` event (US Chess correspondence)."""

    model_config = ConfigDict(frozen=True, extra="ignore", title="arena.rating.changed.v2 (uscf-cc)")

    event_id: str
    system: Literal["uscf-cc"]
    game_id: Id | None
    source_event_id: Annotated[str, Field(min_length=1, max_length=128)] | None
    player_id: Id
    opponent_id: Id | None
    category: Literal["correspondence"]
    kind: CcKind
    score: Score | None
    rating_before: TwoDecimals | None
    rating_after: TwoDecimals | None
    display_before: int
    display_after: int
    delta: TwoDecimals | None
    seq: Annotated[int, Field(ge=1)]
    state: CcStateSnapshot
    finished_at: Timestamp | None
    detail: CcDetail

    @model_validator(mode="after")
    def _fields_match_kind(self) -> "CcRatingChanged":
        before, delta, k_may, game = _CC_FIELDS[self.kind]
        problems = []
        if before is not None and (self.rating_before is not None) != before:
            problems.append("rating_before")
        if self.rating_after != self.state.rating:
            problems.append("rating_after (differs from state.rating)")
        if self.rating_after is None and self.kind != "imported":  # only a switch-over's unrated rating
            problems.append("rating_after")
        both = self.rating_before is not None and self.rating_after is not None
        expected_delta = self.rating_after - self.rating_before if both else None  # type: ignore[operator]
        if self.delta != expected_delta or (delta is not None and (self.delta is not None) != delta):
            problems.append("delta")
        if self.kind == "game_credit" and self.delta != Decimal(0):
            problems.append("delta (a game credit changes nothing)")
        if self.detail.k_factor is not None and not k_may:
            problems.append("detail.k_factor")
        if any((getattr(self, f) is not None) != game for f in GAME_FIELDS):
            problems.append("game fields")
        if self.seq != self.state.seq:
            problems.append("seq (differs from state.seq)")
        if problems:
            raise ValueError(f"fields not as the contract sets them for kind {self.kind!r}: {', '.join(problems)}")
        return self


# One schema for v2; `system` selects the shape (a discriminated union as more systems come).
RatingChangedV2 = CcRatingChanged
