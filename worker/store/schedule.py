"""Per-player scheduling of a batch: the engine's calls, in consumed order, over one snapshot.

Games of a batch are computed one after another on the states read once for the whole
batch, each seeing the states the earlier ones produced; the store then applies them in
the same order, each checked against the seq it was computed from. So games touching a
player are applied in the order they were consumed, and games that share no player cost
no extra round trip. `apply_in_order` does the whole of it over any `StateStore` for a caller
that publishes nothing itself (the offline replay, the rebuild); the streaming worker's
`worker.stream.pipeline` adds publication and waits for other processes' leases. (`plan` itself
is pure; the module sits in the store layer because its callers' steps read and apply through a
store, which the engine never does.)

A per-period system's items also include the close of one rating for a period (`CloseItem`),
computed by the engine like a game; its games and closes read the calendar of the snapshot, and
a close (or a game that first closes a player) that counts `fide`'s held games reads their
opponents' states through `lookup`, which the caller gives for the ratings outside the batch.
"""

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple

from schemas.game_finished import GameFinished
from worker.engine.engine import (
    RESTORED,
    Classification,
    CloseOutcome,
    Engine,
    GameOutcome,
    SeedOutcome,
    SeedRow,
    SeedVerdict,
    Update,
    Verdict,
)
from worker.rules.interface import S
from worker.store.protocol import Snapshot, StateStore, Write


@dataclass(frozen=True, slots=True)
class SeedItem:
    """A seeding row. With `expected_seq`, it is imported only over a state of that seq (the
    switch-over's check-and-set); over any other it is `SeedVerdict.MOVED`, and nothing is written."""

    row: SeedRow
    force: bool
    expected_seq: int | None = None
    # A switch-over's: the row carries a rebuilt state whole, imported over a per-period system's
    # games not closed yet too (the rebuild counted its games with the rebuilt ratings).
    whole: bool = False


@dataclass(frozen=True, slots=True)
class Replayed:
    """A game consumed below its partition's watermark: it was done before (a redelivery after a
    rewind). Its idempotency record decides as usual; if the record has expired, the game is
    taken as a duplicate instead of being applied a second time."""

    game: GameFinished


@dataclass(frozen=True, slots=True)
class CloseItem:
    """The close of one rating (`key`) for `period` of a per-period system."""

    period: str
    key: str


Item = GameFinished | SeedItem | Replayed | CloseItem


class Planned(NamedTuple, Generic[S]):
    """An item with what the engine decided and what the store must check and write (a named
    tuple: one is made per game)."""

    item: Item
    outcome: GameOutcome[S] | SeedOutcome[S] | CloseOutcome[S]
    write: Write[S] | None  # None: nothing to write (a duplicate, a conflict, an unchanged seed row, nothing to close)
    forgotten: bool = False  # a Replayed game whose record had expired: kept from a second application


def game_of(item: Item) -> GameFinished | None:
    if isinstance(item, (SeedItem, CloseItem)):
        return None
    return item.game if isinstance(item, Replayed) else item


# A game's `Engine.classify` (None for a seeding row) and the ratings the item reads.
Classified = tuple[Classification | None, tuple[str, ...]]


def classify(engine: Engine[Any], item: Item) -> Classified:
    if isinstance(item, SeedItem):
        return None, (item.row.key,)
    if isinstance(item, CloseItem):
        return None, (item.key,)
    classification = engine.classify(item.game if isinstance(item, Replayed) else item)
    return classification, classification[1] or ()


def plan(
    engine: Engine[S],
    items: Sequence[Item],
    snapshot: Snapshot[S],
    classified: Sequence[Classified] | None = None,
    lookup: Callable[[str], S] | None = None,
) -> list[Planned[S]]:
    """The engine's calls over `snapshot`, item after item, each seeing what the earlier produced
    (`classified`: each item's `classify`, if the caller computed it for the read already;
    `lookup`: the states of ratings outside the snapshot, for a per-period system's closes)."""
    if classified is None:
        classified = [classify(engine, item) for item in items]
    states: dict[str, S] = dict(snapshot.states)
    records: dict[str, bytes] = dict(snapshot.records)
    unseen = engine.rules.unseen
    calendar = snapshot.calendar
    periodic = engine.periods is not None  # each write's states before it, for the indexes (`Write.before`)

    def state_of(key: str) -> S:
        """A rating's state as the batch has it so far, else as the caller's lookup reads it."""
        if key in states:
            return states[key]
        return unseen if lookup is None else lookup(key)

    planned = []
    for item, (classification, ratings) in zip(items, classified, strict=True):
        reads = tuple([(r, states.get(r, unseen).seq) for r in ratings])
        forgotten = False
        if type(item) is SeedItem:
            current = states.get(item.row.key, unseen)
            if item.expected_seq is not None and current.seq != item.expected_seq:
                seeded: SeedOutcome[S] = SeedOutcome(SeedVerdict.MOVED)
            else:
                seeded = engine.seed(item.row, current, item.force, calendar, item.whole)
            updates: tuple[Update[S], ...] = () if seeded.update is None else (seeded.update,)
            game_id, digest, recorded = "", b"", bool(updates)
            outcome: GameOutcome[S] | SeedOutcome[S] | CloseOutcome[S] = seeded
        elif type(item) is CloseItem:
            closed = engine.close(item.period, item.key, states.get(item.key, unseen), state_of)
            updates = () if closed.update is None else (closed.update,)
            game_id, digest, recorded = "", b"", bool(updates)
            outcome = closed
        else:
            game = item.game if type(item) is Replayed else item
            assert isinstance(game, GameFinished)
            known = records.get(game.game_id)
            if known is None and type(item) is Replayed:
                known, forgotten = RESTORED, True
            # It reads the states of `ratings` only (and, to close a player first, `state_of`).
            outcome = engine.apply(game, states, known, classification, calendar, state_of)
            updates = outcome.updates
            recorded = outcome.verdict is Verdict.APPLIED or outcome.verdict is Verdict.SKIPPED
            game_id, digest = game.game_id, outcome.digest
            if recorded:
                records[game.game_id] = outcome.digest
        before = [states.get(update.key, unseen) for update in updates] if periodic else ()
        for update in updates:
            states[update.key] = update.state
        write = Write(game_id, digest, reads, updates, before) if recorded else None
        planned.append(Planned(item, outcome, write, forgotten))
    return planned


# A store's read (`StateStore.read`), or a retrying one: ratings, game ids, periods whose marks it reads.
Read = Callable[[list[str], list[str], list[str]], Awaitable[Snapshot[S]]]


def periods_read(engine: Engine[Any], batch: Sequence[Item]) -> list[str]:
    """The periods whose marks a per-period system's batch reads beside those its states hold
    entries of (a calendar kept by its marks: tornelo's games' tournaments, the closes' periods, a
    rebuilt state's own, which the switch-over's check reads)."""
    periods = engine.periods
    if periods is None:
        return []
    wanted: set[str] = set()
    for item in batch:
        if type(item) is CloseItem:
            wanted.add(item.period)
        elif type(item) is SeedItem:
            if item.whole:
                wanted.update(periods.pending(engine.rules.seeded(item.row, engine.rules.unseen)))
        else:
            game = game_of(item)
            if game is not None:
                wanted.update(periods.periods_of(game))
    return sorted(wanted)


async def read_and_plan(
    engine: Engine[S],
    batch: Sequence[Item],
    read: Read[S],
    lookup: Callable[[str], S] | None = None,
) -> tuple[list[str], Snapshot[S], list[Planned[S]]]:
    """Read what `batch` needs (its ratings' states, their outboxes' lengths, its games' records,
    a per-period system's calendar) with `read` (a store's, or a retrying one), and plan it: the
    ratings read, the snapshot, the plans.

    A per-period system's batch that closes a rating (a close, or a game whose player still holds
    games of a closed period) may need other ratings' states: `fide` counts a held game with its
    opponent's list rating. Without a `lookup`, those are read in a second step, once the first
    has shown which closes the batch makes (`second_read`). They are read, not checked at the
    apply: a list rating does not change while its period is being closed (`fide-period`,
    section 6: it is the rating before the close, whether the opponent was closed first or not;
    seeding and erasing are refused during a close)."""
    classified = [classify(engine, item) for item in batch]
    ratings = sorted({r for _, keys in classified for r in keys})
    game_ids = sorted({g.game_id for g in map(game_of, batch) if g is not None})
    snapshot = await read(ratings, game_ids, periods_read(engine, batch))
    if lookup is None and engine.periods is not None:
        lookup = await second_read(engine, batch, snapshot, read)
    return ratings, snapshot, plan(engine, batch, snapshot, classified, lookup)


async def second_read(
    engine: Engine[S],
    batch: Sequence[Item],
    snapshot: Snapshot[S],
    read: Read[S],
) -> Callable[[str], S] | None:
    """The states of the ratings outside `snapshot` that the batch's closes read (see
    `read_and_plan`), as a lookup; None if they read none."""
    periods = engine.periods
    assert periods is not None
    calendar = periods.opening if snapshot.calendar is None else snapshot.calendar
    closes: dict[str, set[str]] = {}
    for item in batch:
        if type(item) is CloseItem:
            closes.setdefault(item.key, set()).add(item.period)
    wanted: set[str] = set()
    for key, state in snapshot.states.items():
        closed = closes.get(key, set()).union(periods.closing(state, calendar))
        category = key.partition("/")[2]
        for period in closed:
            wanted.update(f"{player}/{category}" for player in periods.opponents(state, period))
    wanted.difference_update(snapshot.states)
    if not wanted:
        return None
    others = (await read(sorted(wanted), [], [])).states
    unseen = engine.rules.unseen
    return lambda key: others.get(key, unseen)


async def apply_in_order(
    engine: Engine[S], store: StateStore[S], items: Sequence[Item], lookup: Callable[[str], S] | None = None
) -> list[Planned[S]]:
    """Apply `items` through `store` in order, as one batch: read, plan, apply; items that did
    not apply (another writer changed a state first) are read and planned again, with every
    later copy of their game. Returns each item's final plan, in order. (`lookup`: see `plan`.)"""
    final: list[Planned[S] | None] = [None] * len(items)
    pending = list(range(len(items)))
    while pending:
        _, snapshot, planned = await read_and_plan(engine, [items[i] for i in pending], store.read, lookup)
        writes = [p.write for p in planned if p.write is not None]
        applied, _ = await store.apply(writes, (), (), snapshot.calendar_version)
        if all(applied) and len(pending) == len(items):  # as it is with a single writer
            return planned
        pending = unapplied(pending, planned, applied, final)
    return [p for p in final if p is not None]


def unapplied(
    pending: Sequence[int], planned: Sequence[Planned[S]], applied: Sequence[bool], final: list[Planned[S] | None]
) -> list[int]:
    """Which of `pending` must be planned again after an apply: those whose write did not apply,
    and every later copy of their game (its verdict, duplicate or conflict, was decided against
    a plan that no longer holds). The others' plans go into `final`."""
    results = iter(applied)
    retry = []
    replanned: set[str] = set()  # games with a copy to plan again
    for index, p in zip(pending, planned, strict=True):
        game = game_of(p.item)
        game_id = None if game is None else game.game_id
        if p.write is not None and not next(results):
            retry.append(index)
            if game_id is not None:
                replanned.add(game_id)
        elif p.write is None and game_id in replanned:
            retry.append(index)
        else:
            final[index] = p
    return retry
