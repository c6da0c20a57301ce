"""The toy system's events: the head every v2-shaped event has, its `state` and `detail`; a
pydantic model of them (the schema its events are checked against), and the reader `restore` uses."""

from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict

from tests.outside.flat_elo.rules import NAME, FlatState
from worker.engine.events import Published, RatingEvent, rating_key
from worker.engine.events_v2 import fixed2, head, hundredths_of, integer, quoted
from worker.rules.interface import Kind


def encode(event: RatingEvent[FlatState]) -> bytes:
    state = event.state
    return (
        f'{head(event, NAME)},"state":{{"rating":{fixed2(state.rating)},"rated_games":{state.rated_games},'
        f'"seq":{state.seq}}},"finished_at":{quoted(event.finished_at)},'
        f'"detail":{{"k_factor":{integer(event.k_factor)},"expected_score":{fixed2(event.expected_score)}}}}}'
    ).encode()


class _State(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rating: Decimal | None
    rated_games: int
    seq: int


class _Detail(BaseModel):
    model_config = ConfigDict(extra="forbid")
    k_factor: int | None
    expected_score: Decimal | None


class FlatRatingChanged(BaseModel):
    """One event of the toy system (outside the published contract)."""

    model_config = ConfigDict(extra="forbid")
    event_id: str
    system: Literal["flat-elo"]
    game_id: str | None
    source_event_id: str | None
    player_id: str
    opponent_id: str | None
    category: str
    kind: Kind
    score: Decimal | None
    rating_before: Decimal | None
    rating_after: Decimal | None
    display_before: int
    display_after: int
    delta: Decimal | None
    seq: int
    state: _State
    finished_at: str | None
    detail: _Detail


def read(payload: bytes) -> Published[FlatState]:
    event = FlatRatingChanged.model_validate_json(payload)
    state = FlatState(hundredths_of(event.state.rating), event.state.rated_games, event.state.seq)
    opponent = None if event.opponent_id is None else rating_key(event.opponent_id, event.category)
    return Published(rating_key(event.player_id, event.category), state, event.game_id, opponent, event.kind)
