"""Contract v2's events of the per-period systems (`fide`, `tornelo`), byte for byte: the head every
v2 event shares (`worker.engine.events_v2.head`), then the system's `state` (its open periods as
totals, `fide`'s held games and pool) and `detail`, keys in the contract's order, null where a
kind does not set a field. Ratings and totals of scores, PD and ratings with exactly two decimals,
Tornelo's expected scores with exactly six, counts as integers. An event is encoded once; a
re-publication sends the stored bytes.
"""

from decimal import Decimal

from schemas.rating_changed_periods import FideRatingChanged, TorneloRatingChanged
from worker.engine.events import Published, RatingEvent, rating_key
from worker.engine.events_v2 import fixed2, head, quoted
from worker.rules.fide import Entry as FideEntry
from worker.rules.fide import FideDetail, FideState, Held, Pooled
from worker.rules.hundredths import Hundredths
from worker.rules.system import Kind
from worker.rules.tornelo import Entry as TorneloEntry
from worker.rules.tornelo import Millionths, TorneloDetail, TorneloState

_SCORES = {100: "1", 50: "0.5", 0: "0"}
_NO_FIDE_DETAIL = FideDetail()
_NO_TORNELO_DETAIL = TorneloDetail()


def _integer(value: int | None) -> str:
    return "null" if value is None else str(value)


def fixed6(value: Millionths | None) -> str:
    """An expected score (or a sum of them, never negative) with exactly six decimals: 240253 -> "0.240253"."""
    return "null" if value is None else f"{value // 1_000_000}.{value % 1_000_000:06d}"


def _fide_entry(e: FideEntry) -> str:
    held = ",".join(f'{{"opponent_id":"{h.opponent_id}","score":{_SCORES[h.score]}}}' for h in e.held)
    return (
        f'{{"period":"{e.period}","games":{e.games},"points":{fixed2(e.points)},"expected":{fixed2(e.expected)},'
        f'"ratings":{fixed2(e.ratings)},"held":[{held}]}}'
    )


def _pooled(e: Pooled) -> str:
    return f'{{"period":"{e.period}","games":{e.games},"points":{fixed2(e.points)},"ratings":{fixed2(e.ratings)}}}'


def encode_fide(event: RatingEvent[FideState]) -> bytes:
    """A `fide` event's value bytes."""
    s = event.state
    d = event.detail if isinstance(event.detail, FideDetail) else _NO_FIDE_DETAIL
    return (
        f'{head(event, "fide")},"state":{{"rating":{fixed2(s.rating)},"rated_games":{s.rated_games},"seq":{s.seq},'
        f'"reached_2400":{"true" if s.reached_2400 else "false"},"birth_year":{_integer(s.birth_year)},'
        f'"closed_period":{quoted(s.closed_period)},"rating_before_close":{fixed2(s.rating_before_close)},'
        f'"pending":[{",".join(map(_fide_entry, s.pending))}],"initial":[{",".join(map(_pooled, s.initial))}]}},'
        f'"finished_at":{quoted(event.finished_at)},"detail":{{"period":{quoted(d.period)},"games":{_integer(d.games)},'
        f'"points":{fixed2(d.points)},"expected":{fixed2(d.expected)},"k_factor":{_integer(d.k_factor)}}}}}'
    ).encode()


def _tornelo_entry(e: TorneloEntry) -> str:
    return (
        f'{{"tournament_id":"{e.tournament_id}","games":{e.games},"points":{fixed2(e.points)},'
        f'"expected":{fixed6(e.expected)},"performance_games":{e.performance_games},'
        f'"performance_points":{fixed2(e.performance_points)},"performance_sum":{e.performance_sum}}}'
    )


def encode_tornelo(event: RatingEvent[TorneloState]) -> bytes:
    """A `tornelo` event's value bytes."""
    s = event.state
    d = event.detail if isinstance(event.detail, TorneloDetail) else _NO_TORNELO_DETAIL
    return (
        f'{head(event, "tornelo")},"state":{{"rating":{fixed2(s.rating)},"rated_games":{s.rated_games},"seq":{s.seq},'
        f'"k_modifier":{fixed2(s.k_modifier)},"performance_sum":{_integer(s.performance_sum)},'
        f'"pending":[{",".join(map(_tornelo_entry, s.pending))}]}},"finished_at":{quoted(event.finished_at)},'
        f'"detail":{{"tournament_id":{quoted(d.tournament_id)},"games":{_integer(d.games)},"points":{fixed2(d.points)},'
        f'"expected":{fixed6(d.expected)},"k_factor":{_integer(d.k_factor)},"k_modifier":{fixed2(d.k_modifier)}}}}}'
    ).encode()


def _h(value: Decimal) -> Hundredths:
    return Hundredths(int(value * 100))  # a Decimal with at most two decimals


def _h_or_none(value: Decimal | None) -> Hundredths | None:
    return None if value is None else _h(value)


def read_fide(payload: bytes) -> Published[FideState]:
    """A published `fide` event, as `restore` reads it back (validated by the contract's model)."""
    event = FideRatingChanged.model_validate_json(payload)
    s = event.state
    state = FideState(
        _h_or_none(s.rating),
        s.rated_games,
        s.seq,
        s.reached_2400,
        s.birth_year,
        s.closed_period,
        _h_or_none(s.rating_before_close),
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
        _h_or_none(s.rating),
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
