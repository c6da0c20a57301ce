"""A close that takes some ratings at once and leaves the others to be closed by their next game,
over the store in memory (`MemoryBackend`, `MemoryStore`) with the close procedure of `rate`
(`worker.replay.closes`, given the ratings to take at once), as the service will run closes:
each rating gets the same events as `rate`, whose close lines close whole (docs/contract-v2.md,
"The per-period systems: `fide` and `tornelo`": close lines, and the order of the events).

The games go through the store in batches of several (as the worker's batches), so a game whose
player is closed first by it reads, for fide's held games, its opponents' list ratings through the
schedule's lookup of the ratings outside the batch. The streams are the property tests' of each
system (tests/support/{fide,tornelo}_streams.py)."""

from collections import defaultdict
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.game_finished import GameFinished
from tests.support import fide_streams as fide
from tests.support import tornelo_streams as tornelo
from tests.support.period_streams import Close, per_key
from worker.engine.engine import CloseOutcome, Engine, GameOutcome, SeedOutcome, Update
from worker.replay.closes import close_period, finish_close
from worker.replay.memory_store import MemoryBackend, MemoryStore
from worker.store.schedule import Item, SeedItem, apply_in_order

BATCH = 4  # games applied together, as one batch of the worker


class Service:
    """The store in memory, closed as the service will close it (`worker.replay.closes`): the last
    period a close marks takes only some ratings at once; a close in progress is finished before
    the next one and before an import."""

    def __init__(self, engine: Engine[Any]) -> None:
        periods = engine.periods
        assert periods is not None
        self.engine = engine
        self.backend: MemoryBackend[Any] = MemoryBackend(
            engine.rules.unseen, keep_outboxes=False, calendar=periods.opening, pending=periods.pending
        )
        self.store = MemoryStore(self.backend)
        self.payloads: dict[str, list[bytes]] = defaultdict(list)

    def keep(self, updates: Sequence[Update[Any]]) -> None:
        for update in updates:
            self.keep_one(update)

    def keep_one(self, update: Update[Any]) -> None:
        self.payloads[update.key].append(update.payload)

    async def apply(self, items: Sequence[Item]) -> None:
        for p in await apply_in_order(self.engine, self.store, items, self.backend.state):
            outcome = p.outcome
            if isinstance(outcome, GameOutcome):
                self.keep(outcome.updates)
            elif isinstance(outcome, (SeedOutcome, CloseOutcome)) and outcome.update is not None:
                self.keep([outcome.update])

    async def close(self, period: str, take: Callable[[str], bool]) -> None:
        await close_period(self.engine, self.store, period, self.keep_one, take)

    async def finish(self) -> None:
        await finish_close(self.engine, self.store, self.keep_one)


async def run(system: ModuleType, stream: Any, takes: list[frozenset[str]]) -> dict[str, list[bytes]]:
    service = Service(system.new_engine())
    await service.apply([SeedItem(row, force=False) for row in stream.seeds])
    pending_games: list[GameFinished] = []
    closes = iter(takes)
    for item in stream.items:
        if isinstance(item, dict):
            pending_games.append(system.parse(item))
            if len(pending_games) == BATCH:
                await service.apply(pending_games)
                pending_games = []
            continue
        await service.apply(pending_games)
        pending_games = []
        if isinstance(item, Close):
            await service.close(item.period, next(closes).__contains__)
        else:  # an import: refused while a close is in progress, so the close is finished first
            await service.finish()
            await service.apply([SeedItem(item.row, item.force)])
    await service.apply(pending_games)
    await service.finish()
    return dict(service.payloads)


async def check(system: ModuleType, stream: Any, data: st.DataObject) -> None:
    whole, _ = system.replay(stream)  # every close whole, as `rate`'s close lines
    takes = data.draw(system.takes_for(stream))
    assert await run(system, stream, takes) == per_key(whole)


@settings(max_examples=60, deadline=None)
@given(fide.streams(), st.data())
async def test_fide_closes_taking_some_ratings_give_each_rating_rates_events(stream: Any, data: st.DataObject) -> None:
    await check(fide, stream, data)


@settings(max_examples=60, deadline=None)
@given(tornelo.streams(), st.data())
async def test_tornelo_closes_taking_some_ratings_give_each_rating_rates_events(
    stream: Any, data: st.DataObject
) -> None:
    await check(tornelo, stream, data)
