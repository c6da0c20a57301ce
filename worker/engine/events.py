"""Output events (`arena.rating.changed.v1`) and their encoding, byte for byte as the contract says.

Compact UTF-8 JSON, keys in the contract's order, ratings with exactly two decimals. An event
is encoded once; a re-publication sends the stored bytes, never a re-encoding.
"""

from typing import Generic, NamedTuple

from worker.rules.hundredths import Hundredths, Points
from worker.rules.interface import Kind, S


def rating_key(player_id: str, category: str) -> str:
    """The key of one rating: the output record key, `{player_id}/{category}`.

    Ids cannot contain "/", so two different ratings never share a key.
    """
    return f"{player_id}/{category}"


class RatingEvent(NamedTuple, Generic[S]):
    """One change of one rating, in any system (each system's contract encodes it: v1 here,
    v2 in `worker.engine.events_v2`). Numbers are hundredths; `seq` is `state.seq`."""

    event_id: str
    game_id: str | None
    source_event_id: str | None
    player_id: str
    opponent_id: str | None
    category: str
    kind: Kind
    score: Hundredths | None
    rating_before: Hundredths | None
    rating_after: Hundredths | None
    display_before: Points
    display_after: Points
    k_factor: int | None
    expected_score: Hundredths | None
    state: S
    finished_at: str | None
    detail: object = None  # the system's own detail (its change's), which only its contract reads

    @property
    def key(self) -> str:
        return rating_key(self.player_id, self.category)

    @property
    def seq(self) -> int:
        return self.state.seq

    @property
    def delta(self) -> Hundredths | None:
        if self.rating_before is None or self.rating_after is None:
            return None
        return Hundredths(self.rating_after - self.rating_before)


class Published(NamedTuple, Generic[S]):
    """A published event as `restore` reads it back: the rating it changed and its whole state,
    the game that made it (if any), the opponent's rating and the kind of change."""

    key: str
    state: S
    game_id: str | None
    opponent_key: str | None
    kind: Kind
    # A close event's period, where `restore` needs it (tornelo: its ends are not in the states).
    period: str | None = None
