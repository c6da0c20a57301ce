"""Contract v2's events of the per-period systems (`fide`, `tornelo`), byte for byte: the head every
v2 event shares (`worker.engine.events_v2.head`), then the system's `state` (its open periods as
totals, `fide`'s held games and pool) and `detail`, keys in the contract's order, null where a
kind does not set a field. Ratings and totals of scores, PD and ratings with exactly two decimals,
Tornelo's expected scores with exactly six, counts as integers. An event is encoded once; a
re-publication sends the stored bytes.
"""

from decimal import Decimal
from functools import lru_cache

from schemas.rating_changed_periods import FideRatingChanged, TorneloRatingChanged
from worker.engine.events import Published, RatingEvent, rating_key
from worker.engine.events_v2 import SCORES, fixed2, head, hundredths_of, quoted
from worker.rules.fide import Entry as FideEntry
from worker.rules.fide import FideDetail, FideState, Held, Pooled
from worker.rules.hundredths import Hundredths, format_fixed2
from worker.rules.interface import Kind
from worker.rules.tornelo import Entry as TorneloEntry
from worker.rules.tornelo import Millionths, TorneloDetail, TorneloState

_NO_FIDE_DETAIL = FideDetail()
_NO_TORNELO_DETAIL = TorneloDetail()


def _integer(value: int | None) -> str:
    return "null" if value is None else str(value)


def fixed6(value: Millionths | None) -> str:
    """An expected score (or a sum of them, never negative) with exactly six decimals: 240253 -> "0.240253"."""
    return "null" if value is None else f"{value // 1_000_000}.{value % 1_000_000:06d}"


def _fide_entry(e: FideEntry) -> str:
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
        f'"detail":{{"period":{quoted(period)},"games":{_integer(counted)},"points":{fixed2(points)},'
        f'"expected":{fixed2(expected)},"k_factor":{_integer(k)}}}'
    )


@lru_cache(maxsize=1 << 16)
def _fide_list_fields(reached: bool, birth: int | None, closed: str | None, before: Hundredths | None) -> str:
    return (
        f'"reached_2400":{"true" if reached else "false"},"birth_year":{_integer(birth)},'
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


def _tornelo_entry(e: TorneloEntry) -> str:
    tournament, games, points, expected, performance_games, performance_points, performance_sum = e
    return (
        f'{{"tournament_id":"{tournament}","games":{games},"points":{format_fixed2(points)},'
        f'"expected":{fixed6(expected)},"performance_games":{performance_games},'
        f'"performance_points":{format_fixed2(performance_points)},"performance_sum":{performance_sum}}}'
    )


@lru_cache(maxsize=1 << 14)
def _tornelo_detail(detail: TorneloDetail) -> str:
    tournament, counted, points, expected, k, k_modifier = detail
    return (
        f'"detail":{{"tournament_id":{quoted(tournament)},"games":{_integer(counted)},"points":{fixed2(points)},'
        f'"expected":{fixed6(expected)},"k_factor":{_integer(k)},"k_modifier":{fixed2(k_modifier)}}}'
    )


def encode_tornelo(event: RatingEvent[TorneloState]) -> bytes:
    """A `tornelo` event's value bytes."""
    rating, games, seq, modifier, total, pending = event.state
    detail = event.detail if type(event.detail) is TorneloDetail else _NO_TORNELO_DETAIL
    return (
        f'{head(event, "tornelo")},"state":{{"rating":{fixed2(rating)},"rated_games":{games},"seq":{seq},'
        f'"k_modifier":{format_fixed2(modifier)},"performance_sum":{_integer(total)},'
        f'"pending":[{",".join([_tornelo_entry(e) for e in pending]) if pending else ""}]}},'
        f'"finished_at":{quoted(event.finished_at)},{_tornelo_detail(detail)}}}'
    ).encode()


def _h(value: Decimal) -> Hundredths:
    return Hundredths(int(value * 100))  # a Decimal with at most two decimals


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
            FideEntry(
                e.period,
                e.games,
                _h(e.points),
                _h(e.expected),
                _h(e.ratings),
                tuple(Held(h.opponent_id, _h(Decimal(h.score))) for h in e.held),
            )
            for e in s.pending
        ),
        tuple(Pooled(e.period, e.games, _h(e.points), _h(e.ratings)) for e in s.initial),
    )
    opponent = None if event.opponent_id is None else rating_key(event.opponent_id, event.category)
    return Published(rating_key(event.player_id, event.category), state, event.game_id, opponent, Kind(event.kind))


def read_tornelo(payload: bytes) -> Published[TorneloState]:
    """A published `tornelo` event, as `restore` reads it back (validated by the contract's model)."""
    event = TorneloRatingChanged.model_validate_json(payload)
    s = event.state
    state = TorneloState(
        hundredths_of(s.rating),
        s.rated_games,
        s.seq,
        _h(s.k_modifier),
        s.performance_sum,
        tuple(
            TorneloEntry(
                e.tournament_id,
                e.games,
                _h(e.points),
                Millionths(int(e.expected * 1_000_000)),
                e.performance_games,
                _h(e.performance_points),
                e.performance_sum,
            )
            for e in s.pending
        ),
    )
    opponent = None if event.opponent_id is None else rating_key(event.opponent_id, event.category)
    return Published(rating_key(event.player_id, event.category), state, event.game_id, opponent, Kind(event.kind))
