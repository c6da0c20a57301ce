"""The toy system's state in Redis: `seq|rating|rated_games`, the rating in hundredths or empty."""

from tests.outside.flat_elo.rules import FlatState
from worker.store.state_codec import hundredths_or_none, optional


class FlatStateCodec:
    """`worker.engine.spec.StateCodec` of `FlatState`."""

    unseen = FlatState()

    @staticmethod
    def encode(state: FlatState) -> bytes:
        return f"{state.seq}|{optional(state.rating)}|{state.rated_games}".encode()

    @staticmethod
    def decode(value: bytes) -> FlatState:
        seq, rating, games = value.decode().split("|")
        return FlatState(hundredths_or_none(rating), int(games), int(seq))


CODEC = FlatStateCodec()
