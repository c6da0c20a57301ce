"""Closing a per-period system's periods over the store in memory: a close line of `rate`, and the
steps the service's `close-period` will take over Redis.

The store keeps the calendar (what is closed), the index of the ratings with recorded games of
each period, and the period whose close is in progress (`MemoryBackend`). Each rating is closed by
the engine like a game is applied (`CloseItem` through `apply_in_order`), so a close reads and
writes states the way the worker's batches do.
"""

from collections.abc import Callable, Iterable

from worker.engine.engine import CloseOutcome, Engine, Update
from worker.replay.memory_store import MemoryStore
from worker.rules.interface import S
from worker.store.schedule import CloseItem, apply_in_order

# Ratings closed per batch: as many as a chunk of `rate`'s games (see worker.replay.replay).
CLOSE_BATCH = 64

# Takes each close event, in order, as its batch is applied: a close holds no more than a batch
# of them (a month's close of fide makes one for every rating that played in it).
Emit = Callable[[Update[S]], object]


async def close_period(
    engine: Engine[S], store: MemoryStore[S], period: str, emit: Emit[S], take: Callable[[str], bool] | None = None
) -> tuple[str, ...]:
    """A close of `period`, its events given to `emit` in order (docs/contract-v2.md, "The
    per-period systems", "Order"); the periods it marked closed, in order:

    1. a close still in progress is finished (`finish_close`): a period is marked only once the
       close of the one before it is finished;
    2. each period the close marks (`Engine.marks`: fide every open month up to `period` with
       recorded games, oldest first, then `period`; tornelo `period` unless ended), in turn, is
       marked in the calendar; then every rating with recorded games of it is closed, in the byte
       order of their keys, and the period leaves the index;
    3. of the last period marked, only the ratings `take` accepts are closed at once, when it is
       given: the close stays in progress, and each other rating is closed by its next game (the
       engine closes a player first) or by `finish_close` (the service's close in progress; `rate`
       takes them all).
    """
    backend = store.backend
    await finish_close(engine, store, emit)
    marked = engine.marks(backend.calendar, period, frozenset(backend.index))
    for i, month in enumerate(marked):
        backend.mark(engine.marked(backend.calendar, month))
        backend.closing = month
        if take is not None and i == len(marked) - 1:
            keys = engine.close_order(backend.index.get(month, ()))
            await _close(engine, store, month, [key for key in keys if take(key)], emit)
        else:
            await finish_close(engine, store, emit)
    return marked


async def finish_close(engine: Engine[S], store: MemoryStore[S], emit: Emit[S]) -> None:
    """The close in progress finished: every rating of its period not closed yet (the others hold
    no game of it any more: the engine returns nothing for them), its events given to `emit` in
    order; then none is in progress."""
    backend = store.backend
    period = backend.closing
    if period is None:
        return
    await _close(engine, store, period, engine.close_order(backend.index.get(period, ())), emit)
    backend.index.pop(period, None)
    backend.closing = None


async def _close(engine: Engine[S], store: MemoryStore[S], period: str, keys: Iterable[str], emit: Emit[S]) -> None:
    """The ratings `keys` closed for `period`, in batches, in that order; their close events to `emit`."""
    keys = list(keys)
    for start in range(0, len(keys), CLOSE_BATCH):
        items = [CloseItem(period, key) for key in keys[start : start + CLOSE_BATCH]]
        for p in await apply_in_order(engine, store, items, store.backend.state):
            assert isinstance(p.outcome, CloseOutcome)
            if p.outcome.update is not None:
                emit(p.outcome.update)
