"""Output of contract v2: `arena.rating.changed.v2.{system}`, one event per changed rating
(key `{player_id}/{category}`). `system` selects the shapes of `category`, `kind`, `state` and
`detail`: `uscf-cc` and `glicko2` (per-game), `fide` and `tornelo` (per-period: a game is
recorded, its period's close changes the rating; an event's id names its origin, a game, a close or
a seeding).

As for v1, the models describe and validate the events; the worker encodes them itself, byte
for byte (`worker.engine.events_v2`, `worker.engine.events_periods`). The per-period systems'
models are `schemas.rating_changed_periods`'.
"""

from decimal import Decimal
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, WithJsonSchema, model_validator

from schemas.rating_changed import GAME_FIELDS, Score
from schemas.rating_changed_periods import FideRatingChanged, TorneloRatingChanged
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


# A volatility: at most nine decimals, above 0 and at most 0.1 (written with exactly nine).
Volatility = Annotated[
    Decimal,
    Field(decimal_places=9, gt=0, le=Decimal("0.1")),
    # No multipleOf: a float 1e-9 refuses valid nine-decimal numbers in JSON Schema validators.
    WithJsonSchema({"type": "number", "exclusiveMinimum": 0, "maximum": 0.1, "description": "at most nine decimals"}),
]
Deviation = Annotated[
    Decimal,
    Field(decimal_places=2, ge=45, le=500),
    WithJsonSchema({"type": "number", "minimum": 45, "maximum": 500, "description": "two decimals"}),
]


class Glicko2StateSnapshot(BaseModel):
    """A `glicko2` rating's whole state: rating, RD, volatility, games, the latest game's time."""

    model_config = ConfigDict(frozen=True, extra="forbid", title="glicko2 state")

    rating: Annotated[TwoDecimals, Field(ge=400)]
    rated_games: Annotated[int, Field(ge=0)]
    seq: Annotated[int, Field(ge=1)]
    deviation: Deviation
    volatility: Volatility
    last_rated_at: Timestamp | None


class Glicko2Detail(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", title="glicko2 detail")

    expected_score: Annotated[TwoDecimals, Field(ge=0, le=1)] | None
    deviation_before: Deviation | None
    deviation_after: Deviation
    volatility_before: Volatility | None
    volatility_after: Volatility


class Glicko2RatingChanged(BaseModel):
    """A `glicko2` event (Glicko-2 game by game, lichess's way)."""

    model_config = ConfigDict(frozen=True, extra="ignore", title="arena.rating.changed.v2 (glicko2)")

    event_id: str
    system: Literal["glicko2"]
    game_id: Id | None
    source_event_id: Annotated[str, Field(min_length=1, max_length=128)] | None
    player_id: Id
    opponent_id: Id | None
    category: Literal["rapid", "blitz", "bullet"]
    kind: Literal["rated_game", "imported"]
    score: Score | None
    rating_before: TwoDecimals | None
    rating_after: TwoDecimals
    display_before: int
    display_after: int
    delta: TwoDecimals | None
    seq: Annotated[int, Field(ge=1)]
    state: Glicko2StateSnapshot
    finished_at: Timestamp | None
    detail: Glicko2Detail

    @model_validator(mode="after")
    def _fields_match_kind(self) -> "Glicko2RatingChanged":
        game = self.kind == "rated_game"
        problems = []
        if self.rating_after != self.state.rating:
            problems.append("rating_after (differs from state.rating)")
        if game and self.rating_before is None:
            problems.append("rating_before")
        both = self.rating_before is not None
        if self.delta != (self.rating_after - self.rating_before if both else None):  # type: ignore[operator]
            problems.append("delta")
        d = self.detail
        if (d.deviation_after, d.volatility_after) != (self.state.deviation, self.state.volatility):
            problems.append("detail.deviation_after/volatility_after (differ from state)")
        if game and None in (d.expected_score, d.deviation_before, d.volatility_before):
            problems.append("detail (a rated game sets every field)")
        if not game and d.expected_score is not None:
            problems.append("detail.expected_score")
        if (d.deviation_before is None) != (d.volatility_before is None):
            problems.append("detail.deviation_before/volatility_before")
        if any((getattr(self, f) is not None) != game for f in GAME_FIELDS):
            problems.append("game fields")
        if game and self.state.last_rated_at is None:
            problems.append("state.last_rated_at")
        if self.seq != self.state.seq:
            problems.append("seq (differs from state.seq)")
        if problems:
            raise ValueError(f"fields not as the contract sets them for kind {self.kind!r}: {', '.join(problems)}")
        return self


# One schema for v2: `system` selects the shape.
AnyRatingChangedV2 = CcRatingChanged | Glicko2RatingChanged | FideRatingChanged | TorneloRatingChanged
RatingChangedV2 = Annotated[AnyRatingChangedV2, Field(discriminator="system", title="arena.rating.changed.v2")]
RATING_CHANGED_V2: TypeAdapter[AnyRatingChangedV2] = TypeAdapter(RatingChangedV2)
