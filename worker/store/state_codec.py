"""A rating's state as stored in Redis: `seq|rating|rated_games|qualifying` (the arena),
`seq|rating|credits` (US Chess correspondence, `uscf-cc`) and
`seq|rating|deviation|volatility|rated_games|last_rated_at` (`glicko2`: the volatility in units
of 10^-9, `last_rated_at` the timestamp verbatim or empty),
`seq|rating|rated_games|reached_2400|birth_year|closed_period|rating_before_close|pending|initial`
(`fide`: `reached_2400` 1 or 0; `pending` entries `period,games,points,expected,ratings,held` with
`held` of `opponent=score` joined by `+`; `initial` entries `period,games,points,ratings`) and
`seq|rating|rated_games|k_modifier|performance_sum|pending` (`tornelo`: entries
`tournament,games,points,expected,performance_games,performance_points,performance_sum`).
Numbers are integers in the rules' units (hundredths; tornelo's expected in millionths); an
empty field is a null. Entries are joined by `;`.

`rating` is hundredths or empty while unrated; `qualifying` is `game,opponent,rating,score`
entries joined by ";". Ids never contain "|", "," or ";". The seq comes first so that the
check-and-set script reads the version with one pattern match.
"""

from typing import Any

from worker.rules.arena_state import UNSEEN, QualifyingGame, RatingState
from worker.rules.fide import Entry as FideEntry
from worker.rules.fide import FideState, Held, Pooled
from worker.rules.glicko2 import GlickoState, Nanos
from worker.rules.hundredths import Hundredths
from worker.rules.tornelo import Entry as TorneloEntry
from worker.rules.tornelo import Millionths, TorneloState
from worker.rules.uscf_cc import CcState
from worker.store.protocol import StateCodec


def encode_state(state: RatingState) -> bytes:
    rating = "" if state.rating is None else str(state.rating)
    qualifying = ";".join(f"{q.game_id},{q.opponent_id},{q.opponent_rating},{q.score}" for q in state.qualifying)
    return f"{state.seq}|{rating}|{state.rated_games}|{qualifying}".encode()


def decode_state(value: bytes | str) -> RatingState:
    text = value.decode() if isinstance(value, bytes) else value
    seq, rating, rated_games, qualifying = text.split("|")
    entries = []
    if qualifying:
        for entry in qualifying.split(";"):
            game_id, opponent_id, opponent_rating, score = entry.split(",")
            entries.append(
                QualifyingGame(game_id, opponent_id, Hundredths(int(opponent_rating)), Hundredths(int(score)))
            )
    return RatingState(Hundredths(int(rating)) if rating else None, int(rated_games), tuple(entries), int(seq))


class RatingStateCodec:
    """The arena's `RatingState` as the store keeps it (`worker.store.protocol.StateCodec`)."""

    unseen = UNSEEN  # the rules' own value, so that `is UNSEEN` holds for a state never stored

    # The functions themselves, not wrappers: one call less per state on the worker's path.
    encode = staticmethod(encode_state)
    decode = staticmethod(decode_state)


RATING_STATES = RatingStateCodec()


def encode_cc_state(state: CcState) -> bytes:
    """`seq|rating|credits`: the rating in hundredths (a leading `-` when negative), empty while unrated."""
    rating = "" if state.rating is None else str(state.rating)
    return f"{state.seq}|{rating}|{state.credits}".encode()


def decode_cc_state(value: bytes | str) -> CcState:
    text = value.decode() if isinstance(value, bytes) else value
    seq, rating, credits = text.split("|")
    return CcState(Hundredths(int(rating)) if rating else None, int(credits), int(seq))


class CcStateCodec:
    """`uscf-cc`'s `CcState` as the store keeps it (`worker.store.protocol.StateCodec`)."""

    unseen = CcState()
    encode = staticmethod(encode_cc_state)
    decode = staticmethod(decode_cc_state)


CC_STATES = CcStateCodec()


def encode_glicko2_state(state: GlickoState) -> bytes:
    """`seq|rating|deviation|volatility|rated_games|last_rated_at` (timestamps hold no `|`)."""
    last = "" if state.last_rated_at is None else state.last_rated_at
    return f"{state.seq}|{state.rating}|{state.deviation}|{state.volatility}|{state.rated_games}|{last}".encode()


def decode_glicko2_state(value: bytes | str) -> GlickoState:
    text = value.decode() if isinstance(value, bytes) else value
    seq, rating, deviation, volatility, games, last = text.split("|")
    return GlickoState(
        Hundredths(int(rating)), Hundredths(int(deviation)), Nanos(int(volatility)), int(games), last or None, int(seq)
    )


class Glicko2StateCodec:
    """`glicko2`'s `GlickoState` as the store keeps it (`worker.store.protocol.StateCodec`)."""

    unseen = GlickoState()
    encode = staticmethod(encode_glicko2_state)
    decode = staticmethod(decode_glicko2_state)


GLICKO2_STATES = Glicko2StateCodec()


def _optional(value: int | str | None) -> str:
    return "" if value is None else str(value)


def _h(text: str) -> Hundredths | None:
    return Hundredths(int(text)) if text else None


def _fide_entry(e: FideEntry) -> str:
    held = "+".join(f"{h.opponent_id}={h.score}" for h in e.held)
    return f"{e.period},{e.games},{e.points},{e.expected},{e.ratings},{held}"


def encode_fide_state(state: FideState) -> bytes:
    pending = ";".join(map(_fide_entry, state.pending))
    initial = ";".join(f"{e.period},{e.games},{e.points},{e.ratings}" for e in state.initial)
    return (
        f"{state.seq}|{_optional(state.rating)}|{state.rated_games}|{int(state.reached_2400)}|"
        f"{_optional(state.birth_year)}|{_optional(state.closed_period)}|{_optional(state.rating_before_close)}|"
        f"{pending}|{initial}"
    ).encode()


def _decode_fide_entry(text: str) -> FideEntry:
    period, games, points, expected, ratings, held = text.split(",")
    return FideEntry(
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
        _h(rating),
        int(games),
        int(seq),
        reached == "1",
        int(birth) if birth else None,
        closed or None,
        _h(before),
        tuple(_decode_fide_entry(e) for e in pending.split(";") if e),
        tuple(_decode_pooled(e) for e in initial.split(";") if e),
    )


class FideStateCodec:
    """`fide`'s `FideState` as the store keeps it (`worker.store.protocol.StateCodec`)."""

    unseen = FideState()
    encode = staticmethod(encode_fide_state)
    decode = staticmethod(decode_fide_state)


FIDE_STATES = FideStateCodec()


def encode_tornelo_state(state: TorneloState) -> bytes:
    pending = ";".join(
        f"{e.tournament_id},{e.games},{e.points},{e.expected},{e.performance_games},{e.performance_points},"
        f"{e.performance_sum}"
        for e in state.pending
    )
    return (
        f"{state.seq}|{_optional(state.rating)}|{state.rated_games}|{state.k_modifier}|"
        f"{_optional(state.performance_sum)}|{pending}"
    ).encode()


def _decode_tornelo_entry(text: str) -> TorneloEntry:
    tournament, games, points, expected, performance_games, performance_points, performance_sum = text.split(",")
    return TorneloEntry(
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
        _h(rating),
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

# Each rating system's codec, by RATING_SYSTEM (`worker.rules.by_name`).
CODECS: dict[str, StateCodec[Any]] = {
    "arena": RATING_STATES,
    "uscf-cc": CC_STATES,
    "glicko2": GLICKO2_STATES,
    "fide": FIDE_STATES,
    "tornelo": TORNELO_STATES,
}
