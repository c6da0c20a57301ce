"""The arena's events (`arena.rating.changed.v1`, contract v1) and their encoding, byte for byte
as the contract says: compact UTF-8 JSON, keys in the contract's order, ratings with exactly two
decimals. An event is encoded once; a re-publication sends the stored bytes, never a re-encoding.
These bytes never change."""

from decimal import Decimal
from json.encoder import encode_basestring  # C-accelerated; keeps non-ASCII as UTF-8

from schemas.rating_changed import RatingChanged
from worker.engine.events import Published, RatingEvent, rating_key
from worker.rules.hundredths import Hundredths, format_fixed2
from worker.rules.interface import Kind
from worker.systems.arena.state import QualifyingGame, RatingState

_SCORES = {100: "1", 50: "0.5", 0: "0"}


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
