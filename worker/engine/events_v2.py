"""Contract v2's events (`arena.rating.changed.v2.{system}`) of the `uscf-cc` and `glicko2`
systems, and their encoding byte for byte: compact UTF-8 JSON, keys in the contract's order,
ratings, deviations, deltas and expected scores with exactly two decimals (a negative one with a
leading `-`), volatilities with exactly nine, integers as integers. An event is encoded once; a
re-publication sends the stored bytes.

The events are the engine's (`worker.engine.events.RatingEvent`), as for every system; the
arena's are encoded as v1 (`worker.engine.events.encode`), which never changes. The per-period
systems' encodings (`fide`, `tornelo`) are `worker.engine.events_periods`', on the same head.
"""

from decimal import Decimal
from json.encoder import encode_basestring  # C-accelerated; keeps non-ASCII as UTF-8
from typing import Any, cast

from schemas.rating_changed_v2 import CcRatingChanged, Glicko2RatingChanged
from worker.engine.events import Published, RatingEvent, rating_key
from worker.rules.glicko2 import GlickoState, Nanos
from worker.rules.hundredths import Hundredths, format_fixed2
from worker.rules.interface import Kind
from worker.rules.uscf_cc import CcState

SYSTEM = "uscf-cc"
SCORES = {100: "1", 50: "0.5", 0: "0"}  # a score as the contract writes it


def fixed2(value: Hundredths | None) -> str:
    return "null" if value is None else format_fixed2(value)


def quoted(value: str | None) -> str:
    """An id or a validated timestamp: their characters never need escaping."""
    return "null" if value is None else f'"{value}"'


def head(event: RatingEvent[Any], system: str) -> str:
    """The fields every v2 event has, from `event_id` to `seq` (`state` and `detail` follow)."""
    # The hot path of every event: unpacked once (a named tuple's fields are properties), and each
    # number formatted once (a recorded game's rating_before and rating_after are the same).
    (event_id, game_id, source, player_id, opponent_id, category, kind, score, before, after) = event[:10]
    if before is None:
        rating_before = delta = "null"
        rating_after = "null" if after is None else format_fixed2(after)
    elif after is None:
        rating_before, rating_after, delta = format_fixed2(before), "null", "null"
    else:
        rating_before = format_fixed2(before)
        rating_after = rating_before if after == before else format_fixed2(after)
        delta = format_fixed2(Hundredths(after - before))
    game = "null" if game_id is None else '"' + game_id + '"'
    opponent = "null" if opponent_id is None else '"' + opponent_id + '"'
    return (
        f'{{"event_id":"{event_id}","system":"{system}","game_id":{game},'
        f'"source_event_id":{"null" if source is None else encode_basestring(source)},"player_id":"{player_id}",'
        f'"opponent_id":{opponent},'
        f'"category":"{category}","kind":"{kind}","score":{"null" if score is None else SCORES[score]},'
        f'"rating_before":{rating_before},"rating_after":{rating_after},'
        f'"display_before":{event.display_before},"display_after":{event.display_after},"delta":{delta},'
        f'"seq":{event.state.seq}'
    )


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


def encode_cc(event: RatingEvent[CcState]) -> bytes:
    """The event's value bytes, keys in the order of the contract's table."""
    state = event.state
    return (
        f'{head(event, SYSTEM)},"state":{{"rating":{fixed2(state.rating)},"rated_games":{state.credits},'
        f'"seq":{state.seq}}},"finished_at":{quoted(event.finished_at)},'
        f'"detail":{{"k_factor":{"null" if event.k_factor is None else event.k_factor}}}}}'
    ).encode()


def hundredths_of(value: Decimal | None) -> Hundredths | None:
    """A read two-decimal number in hundredths (None stays None)."""
    return None if value is None else Hundredths(int(value * 100))


def read_cc(payload: bytes) -> Published[CcState]:
    """A published `uscf-cc` event, as `restore` reads it back (validated by the contract's model)."""
    event = CcRatingChanged.model_validate_json(payload)
    s = event.state
    state = CcState(hundredths_of(s.rating), s.rated_games, s.seq)
    opponent = None if event.opponent_id is None else rating_key(event.opponent_id, event.category)
    return Published(rating_key(event.player_id, event.category), state, event.game_id, opponent, Kind(event.kind))
