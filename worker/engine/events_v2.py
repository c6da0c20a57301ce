"""Contract v2's events (`arena.rating.changed.v2.{system}`) of the `uscf-cc` system, and their
encoding byte for byte: compact UTF-8 JSON, keys in the contract's order, ratings and deltas with
exactly two decimals (a negative one with a leading `-`), integers as integers. An event is
encoded once; a re-publication sends the stored bytes.

The arena's events are v1's (`worker.engine.events`) and never change. The other systems of v2
(`glicko2`, `fide`, `tornelo`) add their own `state` and `detail` fields here when built.
"""

from json.encoder import encode_basestring  # C-accelerated; keeps non-ASCII as UTF-8
from typing import NamedTuple

from worker.rules.hundredths import Hundredths, Points, display, format_fixed2
from worker.rules.uscf_cc import CATEGORY, CcChange, CcKind, CcSeed, CcState

SYSTEM = "uscf-cc"
_SCORES = {100: "1", 50: "0.5", 0: "0"}


class CcEvent(NamedTuple):
    """One change of one `uscf-cc` rating. Numbers are hundredths; `seq` is `state.seq`."""

    event_id: str
    game_id: str | None
    source_event_id: str | None
    player_id: str
    opponent_id: str | None
    kind: CcKind
    score: Hundredths | None
    rating_before: Hundredths | None
    state: CcState  # after the change
    finished_at: str | None
    k_factor: int | None
    training_rating: Points  # shown for a null rating

    @property
    def key(self) -> str:
        return f"{self.player_id}/{CATEGORY}"


def game_event(
    game_id: str,
    source_event_id: str,
    finished_at: str,
    player_id: str,
    opponent_id: str,
    score: Hundredths,
    before: CcState,
    change: CcChange,
    training_rating: Points,
) -> CcEvent:
    """The event of a game's change to one player's rating; `change.after.seq` is the old seq."""
    state = change.after._replace(seq=before.seq + 1)
    return CcEvent(
        f"{game_id}/{player_id}",
        game_id,
        source_event_id,
        player_id,
        opponent_id,
        change.kind,
        score,
        before.rating,
        state,
        finished_at,
        change.k_factor,
        training_rating,
    )


def imported_event(seed: CcSeed, before: CcState, training_rating: Points) -> CcEvent:
    """A seeding row (or a switch-over) applied over `before` (the default state if none)."""
    state = CcState(seed.rating, seed.credits, before.seq + 1)
    event_id = f"import/{seed.player_id}/{CATEGORY}/{state.seq}"
    return CcEvent(
        event_id,
        None,
        None,
        seed.player_id,
        None,
        CcKind.IMPORTED,
        None,
        before.rating,
        state,
        None,
        None,
        training_rating,
    )


def _fixed2(value: Hundredths | None) -> str:
    return "null" if value is None else format_fixed2(value)


def _shown(value: Hundredths | None, training_rating: Points) -> Points:
    return training_rating if value is None else display(value)


def _id(value: str | None) -> str:
    """An id or a validated timestamp: their characters never need escaping."""
    return "null" if value is None else f'"{value}"'


def encode_cc(event: CcEvent) -> bytes:
    """The event's value bytes, keys in the order of the contract's table."""
    before, after = event.rating_before, event.state.rating
    delta = None if before is None or after is None else Hundredths(after - before)
    source = "null" if event.source_event_id is None else str(encode_basestring(event.source_event_id))
    state = event.state
    return (
        f'{{"event_id":"{event.event_id}","system":"{SYSTEM}","game_id":{_id(event.game_id)},'
        f'"source_event_id":{source},"player_id":"{event.player_id}","opponent_id":{_id(event.opponent_id)},'
        f'"category":"{CATEGORY}","kind":"{event.kind}",'
        f'"score":{"null" if event.score is None else _SCORES[event.score]},'
        f'"rating_before":{_fixed2(before)},"rating_after":{_fixed2(after)},'
        f'"display_before":{_shown(before, event.training_rating)},'
        f'"display_after":{_shown(after, event.training_rating)},"delta":{_fixed2(delta)},'
        f'"seq":{state.seq},"state":{{"rating":{_fixed2(state.rating)},"rated_games":{state.credits},'
        f'"seq":{state.seq}}},"finished_at":{_id(event.finished_at)},'
        f'"detail":{{"k_factor":{"null" if event.k_factor is None else event.k_factor}}}}}'
    ).encode()
