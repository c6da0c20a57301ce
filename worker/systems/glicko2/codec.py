"""`glicko2`'s state as the store keeps it: `seq|rating|deviation|volatility|rated_games|last_rated_at`,
the volatility in units of 10^-9, `last_rated_at` the timestamp verbatim or empty.
(What every codec shares: `worker.store.state_codec`.)"""

from worker.rules.hundredths import Hundredths
from worker.systems.glicko2.rules import GlickoState, Nanos


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
