"""`glicko2`'s events (contract v2): the head every v2 event has (`worker.engine.events_v2.head`),
then its `state` (deviations with exactly two decimals, volatilities with exactly nine) and `detail`."""

from typing import cast

from schemas.rating_changed_v2 import Glicko2RatingChanged
from worker.engine.events import Published, RatingEvent, rating_key
from worker.engine.events_v2 import fixed2, head, quoted
from worker.rules.hundredths import Hundredths, format_fixed2
from worker.rules.interface import Kind
from worker.systems.glicko2.rules import GlickoState, Nanos


def _fixed9(value: Nanos | None) -> str:
    """A volatility, in units of 10^-9, with exactly nine decimals: 89998199 -> "0.089998199"."""
    return "null" if value is None else f"{value // 10**9}.{value % 10**9:09d}"


# The detail of a glicko2 change: the RD and sigma before (the type built once: a `|` of types
# evaluated per call cost more than the rest of the encoding).
_Before = tuple[Hundredths | None, Nanos | None]


def encode_glicko2(event: RatingEvent[GlickoState]) -> bytes:
    """A `glicko2` event's value bytes: `state` with the deviation, volatility and `last_rated_at`;
    `detail` with the expected score and the RD and sigma before (the game's, after their growth;
    an import's, the previous stored ones) and after (the stored ones)."""
    # The hot path of every game: the values written twice are formatted once.
    state = event.state
    rd_before, sigma_before = cast(_Before, event.detail)
    rating, deviation, volatility = (
        format_fixed2(state.rating),
        format_fixed2(state.deviation),
        _fixed9(state.volatility),
    )
    return (
        f'{head(event, "glicko2")},"state":{{"rating":{rating},"rated_games":{state.rated_games},'
        f'"seq":{state.seq},"deviation":{deviation},"volatility":{volatility},'
        f'"last_rated_at":{quoted(state.last_rated_at)}}},"finished_at":{quoted(event.finished_at)},'
        f'"detail":{{"expected_score":{fixed2(event.expected_score)},"deviation_before":{fixed2(rd_before)},'
        f'"deviation_after":{deviation},"volatility_before":{_fixed9(sigma_before)},'
        f'"volatility_after":{volatility}}}}}'
    ).encode()


def read_glicko2(payload: bytes) -> Published[GlickoState]:
    """A published `glicko2` event, as `restore` reads it back (validated by the contract's model)."""
    event = Glicko2RatingChanged.model_validate_json(payload)
    s = event.state
    state = GlickoState(
        Hundredths(int(s.rating * 100)),
        Hundredths(int(s.deviation * 100)),
        Nanos(int(s.volatility * 10**9)),
        s.rated_games,
        s.last_rated_at,
        s.seq,
    )
    opponent = None if event.opponent_id is None else rating_key(event.opponent_id, event.category)
    return Published(rating_key(event.player_id, event.category), state, event.game_id, opponent, Kind(event.kind))
