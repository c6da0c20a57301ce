"""Streams of a per-period system (`fide`, `tornelo`) and their replay through the engine harness
(`tests.support.ratings.Ratings`), for the property tests of each system
(tests/unit/engine/test_{fide,tornelo}_stream_properties.py; tests/support/{fide,tornelo}_streams.py
draw the streams), the contract suite (tests/unit/contract/) and the partial closes over the store
in memory (tests/unit/replay/test_partial_closes.py).

A stream is seeding rows (`rate --seed`), then items: a game's message, a close line, or an import
between games. Its replay closes every close line whole, as `rate` does, or, given for each close
line the ratings it takes at once, as the service may: the others closed by their next game, or
when the close is finished (before the next mark, an import, or at the end)."""

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic

from hypothesis import strategies as st

from schemas.game_finished import GameFinished
from tests.support.ratings import Ratings
from worker.engine.engine import Engine, Update
from worker.rules.interface import S, SeedRow


@dataclass(frozen=True)
class Close:
    """A close line: `{"control": "close", "period": period}`."""

    period: str


@dataclass(frozen=True)
class Import:
    """A seeding row imported between games, forced or not; `again`: for the test of imports, the
    row is instead a rated rating's own values again (the `again`-th rated rating, cyclically)."""

    row: SeedRow
    force: bool
    again: int | None = None


Item = dict[str, Any] | Close | Import


@dataclass(frozen=True)
class Stream:
    seeds: list[SeedRow]  # `rate --seed`: one per rating, before every line
    items: list[Item]

    @property
    def closes(self) -> int:
        return sum(isinstance(item, Close) for item in self.items)


def close_of(event_id: str) -> str | None:
    """The period (a month, a tournament) an event id `period/{P}/{player}/{category}` closes, or None
    for another origin (docs/contract-v2.md, "The per-period systems: `fide` and `tornelo`":
    Origins)."""
    parts = event_id.split("/")
    return parts[1] if parts[0] == "period" else None


def line(item: Item) -> bytes:
    """An item as a line of `rate`'s input file (an import has none: `rate` seeds first only)."""
    assert not isinstance(item, Import)
    return json.dumps({"control": "close", "period": item.period} if isinstance(item, Close) else item).encode()


def per_key(updates: Iterable[Update[Any]]) -> dict[str, list[bytes]]:
    found: dict[str, list[bytes]] = defaultdict(list)
    for update in updates:
        found[update.key].append(update.payload)
    return dict(found)


def takes_for(stream: Stream, keys: Sequence[str]) -> st.SearchStrategy[list[frozenset[str]]]:
    """For each close line, the ratings (among `keys`) the service's close takes at once."""
    return st.lists(st.frozensets(st.sampled_from(keys)), min_size=stream.closes, max_size=stream.closes)


@dataclass(frozen=True)
class Replayer(Generic[S]):
    """A system's streams through the harness: its engine and its input model's parser."""

    new_engine: Callable[[], Engine[S]]
    parse: Callable[[dict[str, Any]], GameFinished]

    def new_store(self) -> Ratings[S]:
        return Ratings(self.new_engine())

    def seeded(self, stream: Stream) -> tuple[list[Update[S]], Ratings[S]]:
        store = self.new_store()
        updates = []
        for row in stream.seeds:
            update = store.seed(row).update
            assert update is not None  # a rating never seen is always seeded
            updates.append(update)
        return updates, store

    def step(self, store: Ratings[S], item: Item, take: Callable[[str], bool] | None = None) -> list[Update[S]]:
        """One item: a close line closes whole (`take` None, as `rate`) or as the service may (only
        the ratings `take` accepts at once); an import first finishes a close in progress (the
        service refuses imports while one is)."""
        if isinstance(item, Close):
            return store.close(item.period) if take is None else store.close_some(item.period, take)
        if isinstance(item, Import):
            finished = store.finish()
            imported = store.seed(item.row, item.force).update
            return finished if imported is None else [*finished, imported]
        return list(store.apply(self.parse(item)).updates)

    def replay(
        self, stream: Stream, takes: Sequence[frozenset[str]] | None = None
    ) -> tuple[list[Update[S]], Ratings[S]]:
        """The stream through the harness: every close whole (`rate`'s close lines), or, with
        `takes`, the k-th close taking at once only the ratings of `takes[k]`, the others closed by
        their next game or at the end."""
        updates, store = self.seeded(stream)
        closes = 0
        for item in stream.items:
            take = None
            if takes is not None and isinstance(item, Close):
                take, closes = takes[closes].__contains__, closes + 1
            updates += self.step(store, item, take)
        updates += store.finish()
        return updates, store
