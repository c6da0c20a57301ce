"""`tornelo`'s events (contract v2): the head every v2 event has (`worker.engine.events_v2.head`),
then its `state` (its open tournaments as totals) and `detail`, null where a kind does not set a
field; ratings and totals of scores with exactly two decimals, expected scores with exactly six,
counts as integers."""

from functools import lru_cache

from schemas.rating_changed_periods import TorneloRatingChanged
from worker.engine.events import Published, RatingEvent, rating_key
from worker.engine.events_v2 import fixed2, head, hundredths, hundredths_of, integer, quoted
from worker.rules.hundredths import format_fixed2
from worker.rules.interface import Kind
from worker.systems.tornelo.rules import Entry, Millionths, TorneloDetail, TorneloState

_NO_TORNELO_DETAIL = TorneloDetail()


def fixed6(value: Millionths | None) -> str:
    """An expected score (or a sum of them, never negative) with exactly six decimals: 240253 -> "0.240253"."""
    return "null" if value is None else f"{value // 1_000_000}.{value % 1_000_000:06d}"


def _tornelo_entry(e: Entry) -> str:
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
        f'"detail":{{"tournament_id":{quoted(tournament)},"games":{integer(counted)},"points":{fixed2(points)},'
        f'"expected":{fixed6(expected)},"k_factor":{integer(k)},"k_modifier":{fixed2(k_modifier)}}}'
    )


def encode_tornelo(event: RatingEvent[TorneloState]) -> bytes:
    """A `tornelo` event's value bytes."""
    rating, games, seq, modifier, total, pending = event.state
    detail = event.detail if type(event.detail) is TorneloDetail else _NO_TORNELO_DETAIL
    return (
        f'{head(event, "tornelo")},"state":{{"rating":{fixed2(rating)},"rated_games":{games},"seq":{seq},'
        f'"k_modifier":{format_fixed2(modifier)},"performance_sum":{integer(total)},'
        f'"pending":[{",".join([_tornelo_entry(e) for e in pending]) if pending else ""}]}},'
        f'"finished_at":{quoted(event.finished_at)},{_tornelo_detail(detail)}}}'
    ).encode()


def read_tornelo(payload: bytes) -> Published[TorneloState]:
    """A published `tornelo` event, as `restore` reads it back (validated by the contract's model)."""
    event = TorneloRatingChanged.model_validate_json(payload)
    s = event.state
    state = TorneloState(
        hundredths_of(s.rating),
        s.rated_games,
        s.seq,
        hundredths(s.k_modifier),
        s.performance_sum,
        tuple(
            Entry(
                e.tournament_id,
                e.games,
                hundredths(e.points),
                Millionths(int(e.expected * 1_000_000)),
                e.performance_games,
                hundredths(e.performance_points),
                e.performance_sum,
            )
            for e in s.pending
        ),
    )
    opponent = None if event.opponent_id is None else rating_key(event.opponent_id, event.category)
    # A close's event has no game and is not a seeding's: its tournament is the one closed.
    closed = event.detail.tournament_id if event.game_id is None and event.kind != Kind.IMPORTED.value else None
    return Published(
        rating_key(event.player_id, event.category), state, event.game_id, opponent, Kind(event.kind), closed
    )
