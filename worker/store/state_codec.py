"""A rating's state as stored in Redis: `seq|rating|rated_games|qualifying` (the arena),
`seq|rating|credits` (US Chess correspondence, `uscf-cc`) and
`seq|rating|deviation|volatility|rated_games|last_rated_at` (`glicko2`: the volatility in units
of 10^-9, `last_rated_at` the timestamp verbatim or empty).

`rating` is hundredths or empty while unrated; `qualifying` is `game,opponent,rating,score`
entries joined by ";". Ids never contain "|", "," or ";". The seq comes first so that the
check-and-set script reads the version with one pattern match.
"""

from typing import Any

from worker.rules.glicko2 import GlickoState, Nanos
from worker.rules.hundredths import Hundredths
from worker.rules.state import UNSEEN, QualifyingGame, RatingState
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

# Each rating system's codec, by RATING_SYSTEM (`worker.rules.systems`).
CODECS: dict[str, StateCodec[Any]] = {"arena": RATING_STATES, "uscf-cc": CC_STATES, "glicko2": GLICKO2_STATES}
