"""`uscf-cc`'s state as the store keeps it: `seq|rating|credits`, the rating in hundredths (a
leading `-` when negative), empty while unrated.
(What every codec shares: `worker.store.state_codec`.)"""

from worker.rules.hundredths import Hundredths
from worker.systems.uscf_cc.rules import CcState


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
