"""Output of contract v2 for the per-period systems, `fide` and `tornelo` (a game is recorded in
its period, the period's close changes the rating; an event's id names its origin: a game, a
close or a seeding): their events, `state` and `detail`, and the rules that tie an event's fields
to its kind and origin. One union with the per-game systems' is `schemas.rating_changed_v2`'s.
"""

from decimal import Decimal
from itertools import pairwise
from typing import Annotated, Literal, NamedTuple

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from schemas.close_line import Month
from schemas.rating_changed import GAME_FIELDS, Score
from schemas.types import CategoryName, Id, Timestamp, TwoDecimals


def _whole(value: Decimal) -> Decimal:
    if value != value.to_integral_value():
        raise ValueError("must be a whole number (written with two decimals)")
    return value


# fide's and tornelo's ratings are whole numbers (every change is rounded to one), written with two
# decimals; each system has its floor (fide: below 1400 a rating is lost; tornelo: 100).
FideRating = Annotated[
    Decimal,
    Field(decimal_places=2, ge=1400),
    AfterValidator(_whole),
    WithJsonSchema({"type": "number", "minimum": 1400, "multipleOf": 1, "description": "a whole number"}),
]
TorneloRating = Annotated[
    Decimal,
    Field(decimal_places=2, ge=100),
    AfterValidator(_whole),
    WithJsonSchema({"type": "number", "minimum": 100, "multipleOf": 1, "description": "a whole number"}),
]
# A sum of fide ratings (the opponents' list ratings of a month): whole too.
RatingSum = Annotated[
    Decimal,
    Field(decimal_places=2, ge=0),
    AfterValidator(_whole),
    WithJsonSchema({"type": "number", "minimum": 0, "multipleOf": 1, "description": "a whole number"}),
]
# A total of scores (1, 0.5 or 0 each). multipleOf 0.5 is exact in binary floating point, unlike 0.01.
Points = Annotated[
    Decimal,
    Field(decimal_places=2, ge=0, multiple_of=Decimal("0.5")),
    WithJsonSchema({"type": "number", "minimum": 0, "multipleOf": 0.5, "description": "a total of scores"}),
]
# fide's sum of PD (table 8.1.2 gives hundredths).
PdSum = Annotated[
    Decimal,
    Field(decimal_places=2, ge=0),
    WithJsonSchema({"type": "number", "minimum": 0, "description": "two decimals"}),
]
# tornelo's E (rounded to millionths) and its sums; no multipleOf, as for Volatility.
ExpectedSum = Annotated[
    Decimal,
    Field(decimal_places=6, ge=0),
    WithJsonSchema({"type": "number", "minimum": 0, "description": "at most six decimals"}),
]
# tornelo's PlayerK_Modifier, per player and category.
KModifier = Annotated[
    Decimal,
    Field(decimal_places=2, ge=Decimal("0.01"), le=10),
    WithJsonSchema({"type": "number", "minimum": 0.01, "maximum": 10, "description": "two decimals"}),
]


class _Kind(NamedTuple):
    """What a kind of a per-period system sets (contract v2, the kinds tables of fide and tornelo)."""

    origins: tuple[str, ...]  # what may make it: "game", "close", "import" (the forms of its event id)
    before: bool | None  # rating_before: True set, False null, None either
    after: bool | None  # rating_after: the same
    unchanged: bool  # rating_after is rating_before: a recorded game, a close that changes nothing
    detail: tuple[str, ...]  # the detail fields it sets (a close also sets the period it closes)
    may_set: tuple[str, ...] = ()  # the detail fields it may set or leave null


_FIDE_DETAIL = ("period", "games", "points", "expected", "k_factor")
_FIDE_KINDS = {
    "period_game": _Kind(("game",), None, None, True, ("period",)),
    "period_rating": _Kind(("close",), True, True, False, _FIDE_DETAIL),
    "rating_lost": _Kind(("close",), True, False, False, _FIDE_DETAIL),
    "first_rating": _Kind(("close",), False, True, False, ("period", "games", "points")),
    "period_closed": _Kind(("close",), None, None, True, ("period", "games", "points")),
    "imported": _Kind(("import",), None, None, False, ()),
}
# tornelo: a close or a game rated at once (7.4) rates; a one-game event's tournament is null when the game has none.
_TORNELO_RATED = ("games", "points", "expected", "k_factor", "k_modifier")
_TORNELO_KINDS = {
    "period_game": _Kind(("game",), None, None, True, ("tournament_id",), ("expected",)),
    "period_rating": _Kind(("close", "game"), True, True, False, _TORNELO_RATED, ("tournament_id",)),
    "provisional_rating": _Kind(("close", "game"), None, True, False, ("games", "points"), ("tournament_id",)),
    "period_closed": _Kind(("close",), None, None, True, ("tournament_id", "games", "points")),
    "imported": _Kind(("import",), None, None, False, ()),
}
_MADE_BY = {"game": "a game", "close": "a close", "import": "a seeding"}


def _origin(event_id: str) -> str:
    """The origin whose form `event_id` has: ids hold no `/`, so the three forms never collide."""
    parts = event_id.split("/")
    if len(parts) == 4 and parts[0] == "period":
        return "close"
    if len(parts) == 4 and parts[0] == "import":
        return "import"
    return "game"


def _per_period_problems(
    event: "FideRatingChanged | TorneloRatingChanged", rule: _Kind, period_field: str
) -> list[str]:
    """The envelope's fields against the kind's row: origin, ratings, delta, game fields, detail."""
    origin = _origin(event.event_id)
    period = getattr(event.detail, period_field)
    forms = {
        "game": None if event.game_id is None else f"{event.game_id}/{event.player_id}",
        "close": None if period is None else f"period/{period}/{event.player_id}/{event.category}",
        "import": f"import/{event.player_id}/{event.category}/{event.seq}",
    }
    problems = []
    if origin not in rule.origins:
        problems.append(f"event_id ({_MADE_BY[origin]} makes no {event.kind} event)")
    elif forms[origin] is not None and event.event_id != forms[origin]:
        problems.append(f"event_id (not {forms[origin]!r})")
    if rule.before is not None and (event.rating_before is not None) != rule.before:
        problems.append("rating_before")
    if rule.after is not None and (event.rating_after is not None) != rule.after:
        problems.append("rating_after")
    if rule.unchanged and event.rating_after != event.rating_before:
        problems.append("rating_after (differs from rating_before)")
    if event.rating_after != event.state.rating:
        problems.append("rating_after (differs from state.rating)")
    both = event.rating_before is not None and event.rating_after is not None
    if event.delta != (event.rating_after - event.rating_before if both else None):  # type: ignore[operator]
        problems.append("delta")
    if any((getattr(event, f) is not None) != (origin == "game") for f in GAME_FIELDS):
        problems.append("game fields")
    required = {*rule.detail, *((period_field,) if origin == "close" else ())}
    for name in type(event.detail).model_fields:
        is_set = getattr(event.detail, name) is not None
        if is_set != (name in required) and not (is_set and name in rule.may_set):
            problems.append(f"detail.{name}")
    if event.seq != event.state.seq:
        problems.append("seq (differs from state.seq)")
    return problems


def _refuse(kind: str, problems: list[str]) -> None:
    if problems:
        raise ValueError(f"fields not as the contract sets them for kind {kind!r}: {', '.join(problems)}")


class FideHeldGame(BaseModel):
    """A game recorded before its month's list exists, counted at the month's close."""

    model_config = ConfigDict(frozen=True, extra="forbid", title="fide held game")

    opponent_id: Id
    score: Score


class FidePendingEntry(BaseModel):
    """The games of one month not yet closed: totals of those counted at once, and the held ones."""

    model_config = ConfigDict(frozen=True, extra="forbid", title="fide pending month")

    period: Month
    games: Annotated[int, Field(ge=0)]
    points: Points
    expected: PdSum
    ratings: RatingSum
    held: list[FideHeldGame]

    @model_validator(mode="after")
    def _totals_of_its_games(self) -> "FidePendingEntry":
        if self.points > self.games or self.expected > self.games:
            raise ValueError("points and expected are totals of its games: at most one a game")
        return self


class FideInitialEntry(BaseModel):
    """An unrated player's pooled results of one month (7.2)."""

    model_config = ConfigDict(frozen=True, extra="forbid", title="fide pooled month")

    period: Month
    games: Annotated[int, Field(ge=1)]
    points: Points
    ratings: RatingSum

    @model_validator(mode="after")
    def _totals_of_its_games(self) -> "FideInitialEntry":
        if self.points > self.games:
            raise ValueError("points is a total of its games' scores: at most one a game")
        return self


def _oldest_first(periods: list[str]) -> bool:
    return all(a < b for a, b in pairwise(periods))


class FideStateSnapshot(BaseModel):
    """A `fide` rating's whole state: the rating and what K reads, the latest close, the games of
    the months not yet closed, and an unrated player's pool."""

    model_config = ConfigDict(frozen=True, extra="forbid", title="fide state")

    rating: FideRating | None
    rated_games: Annotated[int, Field(ge=0)]
    seq: Annotated[int, Field(ge=1)]
    reached_2400: bool
    birth_year: Annotated[int, Field(ge=1000, le=9999)] | None
    closed_period: Month | None
    rating_before_close: FideRating | None
    pending: list[FidePendingEntry]
    initial: list[FideInitialEntry]

    @model_validator(mode="after")
    def _consistent(self) -> "FideStateSnapshot":
        problems = []
        rated = self.rating is not None
        high = self.rating is not None and self.rating >= 2400
        if (high and not self.reached_2400) or (self.reached_2400 and not rated):
            problems.append("reached_2400 (set by a rating of 2400 or more, cleared with a lost rating)")
        if self.rating_before_close is not None and self.closed_period is None:
            problems.append("rating_before_close (null while closed_period is)")
        if not _oldest_first([e.period for e in self.pending]):
            problems.append("pending (one entry per month, oldest first)")
        if not _oldest_first([e.period for e in self.initial]):
            problems.append("initial (one entry per month, oldest first)")
        if rated and self.initial:
            problems.append("initial (a rated player has no pool)")
        if problems:
            raise ValueError(f"state not as the contract sets it: {', '.join(problems)}")
        return self


class FideDetail(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", title="fide detail")

    period: Month | None
    games: Annotated[int, Field(ge=0)] | None
    points: Points | None
    expected: PdSum | None
    k_factor: Annotated[int, Field(ge=0, le=40)] | None  # after the 700 rule: 0 with over 700 games (F13)


class FideRatingChanged(BaseModel):
    """A `fide` event (FIDE's rating, one change per monthly period)."""

    model_config = ConfigDict(frozen=True, extra="ignore", title="arena.rating.changed.v2 (fide)")

    event_id: str
    system: Literal["fide"]
    game_id: Id | None
    source_event_id: Annotated[str, Field(min_length=1, max_length=128)] | None
    player_id: Id
    opponent_id: Id | None
    category: CategoryName
    kind: Literal["period_game", "period_rating", "rating_lost", "first_rating", "period_closed", "imported"]
    score: Score | None
    rating_before: FideRating | None
    rating_after: FideRating | None
    display_before: int
    display_after: int
    delta: TwoDecimals | None
    seq: Annotated[int, Field(ge=1)]
    state: FideStateSnapshot
    finished_at: Timestamp | None
    detail: FideDetail

    @model_validator(mode="after")
    def _fields_match_kind(self) -> "FideRatingChanged":
        problems = _per_period_problems(self, _FIDE_KINDS[self.kind], "period")
        period, state = self.detail.period, self.state
        months = {entry.period for entry in state.pending}
        if _origin(self.event_id) == "close":
            if (state.closed_period, state.rating_before_close) != (period, self.rating_before):
                problems.append("state.closed_period/rating_before_close (differ from the close)")
            if period in months:
                problems.append("state.pending (still holds the closed month)")
        if self.kind == "period_game" and period not in months:
            problems.append("state.pending (no entry of detail.period)")
        _refuse(self.kind, problems)
        return self


class TorneloPendingEntry(BaseModel):
    """The games of one open tournament, valued when recorded: the totals of 7.1 (both players
    rated) and of 7.2 (the games with a performance), as the status at the close decides."""

    model_config = ConfigDict(frozen=True, extra="forbid", title="tornelo pending tournament")

    tournament_id: Id
    games: Annotated[int, Field(ge=0)]
    points: Points
    expected: ExpectedSum
    performance_games: Annotated[int, Field(ge=0)]
    performance_points: Points
    performance_sum: int

    @model_validator(mode="after")
    def _totals_of_its_games(self) -> "TorneloPendingEntry":
        if self.points > self.games or self.expected > self.games or self.performance_points > self.performance_games:
            raise ValueError("points, expected and performance_points are totals of their games: at most one a game")
        return self


class TorneloStateSnapshot(BaseModel):
    """A `tornelo` rating's whole state: the rating, its modifier, a provisional rating's sum of
    performances, and the games of the tournaments not yet ended."""

    model_config = ConfigDict(frozen=True, extra="forbid", title="tornelo state")

    rating: TorneloRating | None
    rated_games: Annotated[int, Field(ge=0)]
    seq: Annotated[int, Field(ge=1)]
    k_modifier: KModifier
    performance_sum: int | None
    pending: list[TorneloPendingEntry]

    @model_validator(mode="after")
    def _consistent(self) -> "TorneloStateSnapshot":
        problems = []
        provisional = self.rating is not None and self.rated_games < 20
        if (self.performance_sum is not None) != provisional:
            problems.append("performance_sum (an integer while rated with fewer than 20 games, else null)")
        if provisional and self.rating > 2700:  # type: ignore[operator]
            problems.append("rating (a provisional rating is within 100-2700)")
        ids = [entry.tournament_id for entry in self.pending]
        if len(set(ids)) != len(ids):
            problems.append("pending (one entry per tournament)")
        if problems:
            raise ValueError(f"state not as the contract sets it: {', '.join(problems)}")
        return self


class TorneloDetail(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", title="tornelo detail")

    tournament_id: Id | None
    games: Annotated[int, Field(ge=0)] | None
    points: Points | None
    expected: ExpectedSum | None  # a sum of E; for period_game, the game's E
    k_factor: Annotated[int, Field(ge=1)] | None
    k_modifier: KModifier | None


class TorneloRatingChanged(BaseModel):
    """A `tornelo` event (Tornelo's default Elo, one change per tournament)."""

    model_config = ConfigDict(frozen=True, extra="ignore", title="arena.rating.changed.v2 (tornelo)")

    event_id: str
    system: Literal["tornelo"]
    game_id: Id | None
    source_event_id: Annotated[str, Field(min_length=1, max_length=128)] | None
    player_id: Id
    opponent_id: Id | None
    category: CategoryName
    kind: Literal["period_game", "period_rating", "provisional_rating", "period_closed", "imported"]
    score: Score | None
    rating_before: TorneloRating | None
    rating_after: TorneloRating | None
    display_before: int
    display_after: int
    delta: TwoDecimals | None
    seq: Annotated[int, Field(ge=1)]
    state: TorneloStateSnapshot
    finished_at: Timestamp | None
    detail: TorneloDetail

    @model_validator(mode="after")
    def _fields_match_kind(self) -> "TorneloRatingChanged":
        problems = _per_period_problems(self, _TORNELO_KINDS[self.kind], "tournament_id")
        detail, state = self.detail, self.state
        open_ones = {entry.tournament_id for entry in state.pending}
        if self.kind == "period_game":
            if detail.tournament_id not in open_ones:
                problems.append("state.pending (no entry of detail.tournament_id)")
            if detail.expected is not None and (self.rating_before is None or detail.expected > 1):
                problems.append("detail.expected (one game's E: both players rated)")
        elif self.kind != "imported" and detail.tournament_id in open_ones:
            problems.append("state.pending (still holds the ended tournament)")
        if detail.k_modifier is not None and detail.k_modifier != state.k_modifier:
            problems.append("detail.k_modifier (differs from state.k_modifier)")
        if self.kind == "period_closed" and (detail.games or detail.points):
            problems.append("detail.games/points (0 and 0.00: nothing counted)")
        _refuse(self.kind, problems)
        return self
