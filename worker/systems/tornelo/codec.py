"""`tornelo`'s state as the store keeps it: `seq|rating|rated_games|k_modifier|performance_sum|pending`,
`pending` entries `tournament,games,points,expected,performance_games,performance_points,performance_sum`
(expected in millionths).
(What every codec shares: `worker.store.state_codec`.)"""

from collections.abc import Mapping

from worker.rules.hundredths import Hundredths
from worker.store.state_codec import hundredths_or_none, optional
from worker.systems.tornelo.rules import Ended, Entry, Millionths, TorneloState


def encode_tornelo_state(state: TorneloState) -> bytes:
    pending = ";".join(
        f"{e.tournament_id},{e.games},{e.points},{e.expected},{e.performance_games},{e.performance_points},"
        f"{e.performance_sum}"
        for e in state.pending
    )
    return (
        f"{state.seq}|{optional(state.rating)}|{state.rated_games}|{state.k_modifier}|"
        f"{optional(state.performance_sum)}|{pending}"
    ).encode()


def _decode_tornelo_entry(text: str) -> Entry:
    tournament, games, points, expected, performance_games, performance_points, performance_sum = text.split(",")
    return Entry(
        tournament,
        int(games),
        Hundredths(int(points)),
        Millionths(int(expected)),
        int(performance_games),
        Hundredths(int(performance_points)),
        int(performance_sum),
    )


def decode_tornelo_state(value: bytes | str) -> TorneloState:
    text = value.decode() if isinstance(value, bytes) else value
    seq, rating, games, modifier, total, pending = text.split("|")
    return TorneloState(
        hundredths_or_none(rating),
        int(games),
        int(seq),
        Hundredths(int(modifier)),
        int(total) if total else None,
        tuple(_decode_tornelo_entry(e) for e in pending.split(";") if e),
    )


class TorneloStateCodec:
    """`tornelo`'s `TorneloState` as the store keeps it (`worker.store.protocol.StateCodec`)."""

    unseen = TorneloState()
    encode = staticmethod(encode_tornelo_state)
    decode = staticmethod(decode_tornelo_state)


TORNELO_STATES = TorneloStateCodec()


class TorneloCalendarCodec:
    """`tornelo`'s calendar, the ended tournaments in the order they were marked
    (`worker.engine.spec.CalendarCodec`): kept by its marks (each tournament's place in
    `{prefix}marked`, for good), since it only grows; a batch reads the marks of its own
    tournaments and of its players' open ones. The one value kept beside them is the tournament
    marked ended last."""

    partial = True

    @staticmethod
    def encode(calendar: object) -> bytes:
        assert isinstance(calendar, Ended)
        latest = next(reversed(list(calendar)), None) if len(calendar) else None
        return b"" if latest is None else latest.encode()

    @staticmethod
    def decode(value: bytes) -> Ended:
        raise TypeError("tornelo's calendar is read by its marks (from_marks), not from one value")

    @staticmethod
    def from_marks(version: int, places: Mapping[str, int | None]) -> Ended:
        # A mark read after `version` (a newer one) is left out: the calendar is the one of `version`,
        # and `Ended.marked` may then extend its places without meeting it.
        return Ended({t: p for t, p in places.items() if p is not None and p < version}, version)

    @staticmethod
    def number(calendar: object) -> int | None:
        """How many tournaments have ended (`rating_period_latest_closed`): it grows with each mark."""
        assert isinstance(calendar, Ended)
        return len(calendar) or None


TORNELO_CALENDAR = TorneloCalendarCodec()
