"""`fide`'s state as the store keeps it:
`seq|rating|rated_games|reached_2400|birth_year|closed_period|rating_before_close|pending|initial`,
`reached_2400` 1 or 0; `pending` entries `period,games,points,expected,ratings,held` with `held` of
`opponent=score` joined by `+`; `initial` entries `period,games,points,ratings`.
(What every codec shares: `worker.store.state_codec`.)"""

from collections.abc import Mapping

from worker.rules.finished_at import month_number
from worker.rules.hundredths import Hundredths
from worker.store.state_codec import hundredths_or_none, optional
from worker.systems.fide.rules import Entry, FideState, Held, Pooled


def _fide_entry(e: Entry) -> str:
    held = "+".join(f"{h.opponent_id}={h.score}" for h in e.held)
    return f"{e.period},{e.games},{e.points},{e.expected},{e.ratings},{held}"


def encode_fide_state(state: FideState) -> bytes:
    pending = ";".join(map(_fide_entry, state.pending))
    initial = ";".join(f"{e.period},{e.games},{e.points},{e.ratings}" for e in state.initial)
    return (
        f"{state.seq}|{optional(state.rating)}|{state.rated_games}|{int(state.reached_2400)}|"
        f"{optional(state.birth_year)}|{optional(state.closed_period)}|{optional(state.rating_before_close)}|"
        f"{pending}|{initial}"
    ).encode()


def _decode_fide_entry(text: str) -> Entry:
    period, games, points, expected, ratings, held = text.split(",")
    return Entry(
        period,
        int(games),
        Hundredths(int(points)),
        Hundredths(int(expected)),
        Hundredths(int(ratings)),
        tuple(Held(o, Hundredths(int(score))) for o, _, score in (h.partition("=") for h in held.split("+") if h)),
    )


def _decode_pooled(text: str) -> Pooled:
    period, games, points, ratings = text.split(",")
    return Pooled(period, int(games), Hundredths(int(points)), Hundredths(int(ratings)))


def decode_fide_state(value: bytes | str) -> FideState:
    text = value.decode() if isinstance(value, bytes) else value
    seq, rating, games, reached, birth, closed, before, pending, initial = text.split("|")
    return FideState(
        hundredths_or_none(rating),
        int(games),
        int(seq),
        reached == "1",
        int(birth) if birth else None,
        closed or None,
        hundredths_or_none(before),
        tuple(_decode_fide_entry(e) for e in pending.split(";") if e),
        tuple(_decode_pooled(e) for e in initial.split(";") if e),
    )


class FideStateCodec:
    """`fide`'s `FideState` as the store keeps it (`worker.store.protocol.StateCodec`)."""

    unseen = FideState()
    encode = staticmethod(encode_fide_state)
    decode = staticmethod(decode_fide_state)


FIDE_STATES = FideStateCodec()


class FideCalendarCodec:
    """`fide`'s calendar, the latest closed month L (`YYYY-MM`, or nothing before any close), as the
    store keeps it (`worker.engine.spec.CalendarCodec`): one value, which every batch reads whole."""

    partial = False

    @staticmethod
    def encode(calendar: object) -> bytes:
        return b"" if calendar is None else str(calendar).encode()

    @staticmethod
    def decode(value: bytes) -> str | None:
        return value.decode() or None

    @staticmethod
    def from_marks(version: int, places: Mapping[str, int | None]) -> str | None:
        raise TypeError("fide's calendar is one value (decode): its marks are not kept")

    @staticmethod
    def number(calendar: object) -> int | None:
        """L as months since 0000-01 (`rating_period_latest_closed`): months subtract."""
        return None if calendar is None else month_number(str(calendar))


FIDE_CALENDAR = FideCalendarCodec()
