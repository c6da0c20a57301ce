"""Output events (`arena.rating.changed.v1`) and their encoding, byte for byte as the contract says.

Compact UTF-8 JSON, keys in the contract's order, ratings with exactly two decimals. An event
is encoded once; a re-publication sends the stored bytes, never a re-encoding.
"""

from decimal import Decimal
from json.encoder import encode_basestring  # C-accelerated; keeps non-ASCII as UTF-8
from typing import Generic, NamedTuple

from schemas.rating_changed import RatingChanged
from worker.rules.arena_state import QualifyingGame, RatingState
from worker.rules.hundredths import Hundredths, Points, format_fixed2
from worker.rules.interface import Kind, S

_SCORES = {100: "1", 50: "0.5", 0: "0"}


def rating_key(player_id: str, category: str) -> str:
    """The key of one rating: the output record key, `{player_id}/{category}`.

    Ids cannot contain "/", so two different ratings never share a key.
    """
    return f"{player_id}/{category}"


class RatingEvent(NamedTuple, Generic[S]):
    """One change of one rating, in any system (each system's contract encodes it: v1 here,
    v2 in `worker.engine.events_v2`). Numbers are hundredths; `seq` is `state.seq`."""

    event_id: str
    game_id: str | None
    source_event_id: str | None
    player_id: str
    opponent_id: str | None
    category: str
    kind: Kind
    score: Hundredths | None
    rating_before: Hundredths | None
    rating_after: Hundredths | None
    display_before: Points
    display_after: Points
    k_factor: int | None
    expected_score: Hundredths | None
    state: S
    finished_at: str | None
    detail: object = None  # the system's own detail (its change's), which only its contract reads

    @property
    def key(self) -> str:
        return rating_key(self.player_id, self.category)

    @property
    def seq(self) -> int:
        return self.state.seq

    @property
    def delta(self) -> Hundredths | None:
        if self.rating_before is None or self.rating_after is None:
            return None
        return Hundredths(self.rating_after - self.rating_before)


def _string(value: str | None) -> str:
    """A JSON string, non-ASCII kept as UTF-8 (quotes, backslashes and controls escaped)."""
    return "null" if value is None else str(encode_basestring(value))


def _id(value: str | None) -> str:
    """An id or a validated timestamp: their characters never need escaping."""
    return "null" if value is None else f'"{value}"'


def _fixed2(value: Hundredths | None) -> str:
    return "null" if value is None else format_fixed2(value)


def encode_state(state: RatingState) -> str:
    qualifying = ",".join(
        f'{{"game_id":"{q.game_id}","opponent_id":"{q.opponent_id}",'
        f'"opponent_rating":{format_fixed2(q.opponent_rating)},"score":{_SCORES[q.score]}}}'
        for q in state.qualifying
    )
    status = "rated" if state.rated else "unrated"
    return (
        f'{{"status":"{status}","rating":{_fixed2(state.rating)},"rated_games":{state.rated_games},'
        f'"qualifying":[{qualifying}],"seq":{state.seq}}}'
    )


def encode(event: RatingEvent[RatingState]) -> bytes:
    """The event's value bytes: compact JSON, keys in the order of the contract's table."""
    # The hot path of every game: the nullable fields are written inline, not through helpers.
    before, after = event.rating_before, event.rating_after
    delta = "null" if before is None or after is None else format_fixed2(Hundredths(after - before))
    return (
        f'{{"event_id":"{event.event_id}","game_id":{_id(event.game_id)},'
        f'"source_event_id":{_string(event.source_event_id)},"player_id":"{event.player_id}",'
        f'"opponent_id":{_id(event.opponent_id)},"category":"{event.category}","kind":"{event.kind}",'
        f'"score":{"null" if event.score is None else _SCORES[event.score]},'
        f'"rating_before":{"null" if before is None else format_fixed2(before)},'
        f'"rating_after":{"null" if after is None else format_fixed2(after)},'
        f'"display_before":{event.display_before},"display_after":{event.display_after},"delta":{delta},'
        f'"k_factor":{"null" if event.k_factor is None else event.k_factor},'
        f'"expected_score":{_fixed2(event.expected_score)},'
        f'"seq":{event.state.seq},"state":{encode_state(event.state)},"finished_at":{_id(event.finished_at)}}}'
    ).encode()


class Published(NamedTuple, Generic[S]):
    """A published event as `restore` reads it back: the rating it changed and its whole state,
    the game that made it (if any), the opponent's rating and the kind of change."""

    key: str
    state: S
    game_id: str | None
    opponent_key: str | None
    kind: Kind


def _hundredths(value: Decimal) -> Hundredths:
    return Hundredths(int(value * 100))  # a Decimal with at most two decimals


def read_v1(payload: bytes) -> Published[RatingState]:
    """A published v1 event (validated by the contract's model)."""
    event = RatingChanged.model_validate_json(payload)
    s = event.state
    qualifying = tuple(
        QualifyingGame(q.game_id, q.opponent_id, _hundredths(q.opponent_rating), _hundredths(q.score))
        for q in s.qualifying
    )
    state = RatingState(None if s.rating is None else _hundredths(s.rating), s.rated_games, qualifying, s.seq)
    opponent = None if event.opponent_id is None else rating_key(event.opponent_id, event.category)
    return Published(rating_key(event.player_id, event.category), state, event.game_id, opponent, Kind(event.kind))
