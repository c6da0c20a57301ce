"""The arena's state as the store keeps it: `seq|rating|rated_games|qualifying`, `qualifying` of
`game,opponent,rating,score` entries joined by `;`; `rating` in hundredths, empty while unrated.
(What every codec shares: `worker.store.state_codec`.)"""

from worker.rules.hundredths import Hundredths
from worker.systems.arena.state import UNSEEN, QualifyingGame, RatingState


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
