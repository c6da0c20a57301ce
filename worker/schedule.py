"""Per-player scheduling of a batch: the engine's calls, in consumed order, over one snapshot.

Games of a batch are computed one after another on the states read once for the whole
batch, each seeing the states the earlier ones produced; the store then applies them in
the same order, each checked against the seq it was computed from. So games touching a
player are applied in the order they were consumed, and games that share no player cost
no extra round trip.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from schemas.game_finished import GameFinished
from worker.engine import Engine, GameOutcome, SeedOutcome, SeedRow, Update, Verdict
from worker.rules.state import UNSEEN, RatingState
from worker.state_codec import encode_state
from worker.store import Snapshot, Write


@dataclass(frozen=True, slots=True)
class SeedItem:
    row: SeedRow
    force: bool


Item = GameFinished | SeedItem


@dataclass(frozen=True, slots=True)
class Planned:
    """An item with what the engine decided and what the store must check and write."""

    item: Item
    outcome: GameOutcome | SeedOutcome
    write: Write | None  # None: nothing to write (a duplicate, a conflict, an unchanged seed row)
    ratings: tuple[str, ...]  # the ratings whose outboxes must be flushed before it counts as done


def ratings_read(engine: Engine, item: Item) -> tuple[str, ...]:
    if isinstance(item, SeedItem):
        return (item.row.key,)
    return engine.ratings_read(item) or ()


def plan(engine: Engine, items: Sequence[Item], snapshot: Snapshot) -> list[Planned]:
    states: dict[str, RatingState] = dict(snapshot.states)
    records: dict[str, bytes] = dict(snapshot.records)
    planned = []
    for item in items:
        ratings = ratings_read(engine, item)
        reads = tuple((r, states.get(r, UNSEEN).seq) for r in ratings)
        if isinstance(item, SeedItem):
            seeded = engine.seed(item.row, states.get(item.row.key, UNSEEN), item.force)
            updates: tuple[Update, ...] = () if seeded.update is None else (seeded.update,)
            write = Write("", b"", reads, _writes(updates)) if updates else None
            outcome: GameOutcome | SeedOutcome = seeded
        else:
            outcome = engine.apply(item, {r: states.get(r, UNSEEN) for r in ratings}, records.get(item.game_id))
            updates = outcome.updates
            recorded = outcome.verdict in (Verdict.APPLIED, Verdict.SKIPPED)
            write = Write(item.game_id, outcome.digest, reads, _writes(updates)) if recorded else None
            if recorded:
                records[item.game_id] = outcome.digest
        for update in updates:
            states[update.key] = update.state
        planned.append(Planned(item, outcome, write, ratings))
    return planned


def _writes(updates: Sequence[Update]) -> tuple[tuple[str, bytes, bytes], ...]:
    return tuple((u.key, encode_state(u.state), u.payload) for u in updates)
