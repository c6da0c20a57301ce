"""`fide`'s events (contract v2): the head every v2 event has (`worker.engine.events_v2.head`), then
its `state` (its open months as totals, held games, the pool of a first rating) and `detail`, null
where a kind does not set a field; ratings, totals of scores, PD and ratings with exactly two
decimals, counts as integers."""

from decimal import Decimal
from functools import lru_cache

from schemas.rating_changed_periods import FideRatingChanged
from worker.engine.events import Published, RatingEvent, rating_key
from worker.engine.events_v2 import SCORES, fixed2, head, hundredths, hundredths_of, integer, quoted
from worker.rules.hundredths import Hundredths, format_fixed2
from worker.rules.interface import Kind
from worker.systems.fide.rules import Entry, FideDetail, FideState, Held, Pooled

_NO_FIDE_DETAIL = FideDetail()


def _fide_entry(e: Entry) -> str:
    period, games, points, expected, ratings, held = e
    shown = ",".join([f'{{"opponent_id":"{h[0]}","score":{SCORES[h[1]]}}}' for h in held]) if held else ""
    return (
        f'{{"period":"{period}","games":{games},"points":{format_fixed2(points)},'
        f'"expected":{format_fixed2(expected)},"ratings":{format_fixed2(ratings)},"held":[{shown}]}}'
    )


@lru_cache(maxsize=1 << 12)  # a pool changes at its player's closes only: written again at each of his games
def _pooled(e: Pooled) -> str:
    period, games, points, ratings = e
    return (
        f'{{"period":"{period}","games":{games},"points":{format_fixed2(points)},"ratings":{format_fixed2(ratings)}}}'
    )


# A period_game's detail names only its month, and a player's list fields change at his closes
# only: both are the same for most events of a month, so their JSON is kept (a bounded cache).
@lru_cache(maxsize=1 << 12)
def _fide_detail(detail: FideDetail) -> str:
    period, counted, points, expected, k = detail
    return (
        f'"detail":{{"period":{quoted(period)},"games":{integer(counted)},"points":{fixed2(points)},'
        f'"expected":{fixed2(expected)},"k_factor":{integer(k)}}}'
    )


@lru_cache(maxsize=1 << 16)
def _fide_list_fields(reached: bool, birth: int | None, closed: str | None, before: Hundredths | None) -> str:
    return (
        f'"reached_2400":{"true" if reached else "false"},"birth_year":{integer(birth)},'
        f'"closed_period":{quoted(closed)},"rating_before_close":{fixed2(before)}'
    )


def encode_fide(event: RatingEvent[FideState]) -> bytes:
    """A `fide` event's value bytes."""
    rating, games, seq, reached, birth, closed, before, pending, initial = event.state
    detail = event.detail if type(event.detail) is FideDetail else _NO_FIDE_DETAIL
    return (
        f'{head(event, "fide")},"state":{{"rating":{fixed2(rating)},"rated_games":{games},"seq":{seq},'
        f"{_fide_list_fields(reached, birth, closed, before)},"
        f'"pending":[{",".join([_fide_entry(e) for e in pending]) if pending else ""}],'
        f'"initial":[{",".join([_pooled(e) for e in initial]) if initial else ""}]}},'
        f'"finished_at":{quoted(event.finished_at)},{_fide_detail(detail)}}}'
    ).encode()


def read_fide(payload: bytes) -> Published[FideState]:
    """A published `fide` event, as `restore` reads it back (validated by the contract's model)."""
    event = FideRatingChanged.model_validate_json(payload)
    s = event.state
    state = FideState(
        hundredths_of(s.rating),
        s.rated_games,
        s.seq,
        s.reached_2400,
        s.birth_year,
        s.closed_period,
        hundredths_of(s.rating_before_close),
        tuple(
            Entry(
                e.period,
                e.games,
                hundredths(e.points),
                hundredths(e.expected),
                hundredths(e.ratings),
                tuple(Held(h.opponent_id, hundredths(Decimal(h.score))) for h in e.held),
            )
            for e in s.pending
        ),
        tuple(Pooled(e.period, e.games, hundredths(e.points), hundredths(e.ratings)) for e in s.initial),
    )
    opponent = None if event.opponent_id is None else rating_key(event.opponent_id, event.category)
    return Published(rating_key(event.player_id, event.category), state, event.game_id, opponent, Kind(event.kind))
