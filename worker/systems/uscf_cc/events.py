"""`uscf-cc`'s events (contract v2): the head every v2 event has (`worker.engine.events_v2.head`),
then its `state` (the rating and its game credits as `rated_games`) and `detail` (K)."""

from schemas.rating_changed_v2 import CcRatingChanged
from worker.engine.events import Published, RatingEvent, rating_key
from worker.engine.events_v2 import fixed2, head, hundredths_of, quoted
from worker.rules.interface import Kind
from worker.systems.uscf_cc.rules import CcState

SYSTEM = "uscf-cc"


def encode_cc(event: RatingEvent[CcState]) -> bytes:
    """The event's value bytes, keys in the order of the contract's table."""
    state = event.state
    return (
        f'{head(event, SYSTEM)},"state":{{"rating":{fixed2(state.rating)},"rated_games":{state.credits},'
        f'"seq":{state.seq}}},"finished_at":{quoted(event.finished_at)},'
        f'"detail":{{"k_factor":{"null" if event.k_factor is None else event.k_factor}}}}}'
    ).encode()


def read_cc(payload: bytes) -> Published[CcState]:
    """A published `uscf-cc` event, as `restore` reads it back (validated by the contract's model)."""
    event = CcRatingChanged.model_validate_json(payload)
    s = event.state
    state = CcState(hundredths_of(s.rating), s.rated_games, s.seq)
    opponent = None if event.opponent_id is None else rating_key(event.opponent_id, event.category)
    return Published(rating_key(event.player_id, event.category), state, event.game_id, opponent, Kind(event.kind))
