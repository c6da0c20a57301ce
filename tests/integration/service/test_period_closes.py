"""The workers' read of tornelo's closes (`worker.service.period_closes.read`) against a real
redis-server, what the store's own scripts leave there: games recorded in tournaments (the
apply that enters a rating in a tournament's index notes the tournament's first recording), a
tournament marked ended (its close in progress) and its close finished. Its calendar is kept by
its marks, which the read never takes whole: the count of marks, and the marks of the open
tournaments only."""

import time
from collections.abc import AsyncIterator, Iterator

import pytest
from prometheus_client import REGISTRY
from redis.asyncio import Redis

from tests.support.backends import RedisService
from worker import metrics
from worker.engine.decoder import ErrorKind
from worker.service.period_closes import Export, read
from worker.store import keys
from worker.store.protocol import StateWrite, Write
from worker.store.redis_store import RedisStore
from worker.stream.retry import OPERATIONS
from worker.systems.arena.rules import ArenaRules
from worker.systems.tornelo.codec import TORNELO_CALENDAR, TORNELO_STATES
from worker.systems.tornelo.rules import Ended, Entry, TorneloRules, TorneloState

pytestmark = pytest.mark.integration

PREFIX = "rating-tornelo:"
RULES = TorneloRules()
DAY = 86400


@pytest.fixture
async def r(redis_server: RedisService) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_server.url)
    yield client
    await client.aclose()


@pytest.fixture
def export() -> Iterator[Export]:
    """A tornelo worker's export, as `watch_for` makes it; the arena's metrics again afterwards."""
    metrics.prepare(RULES, ErrorKind, OPERATIONS, periodic=True)
    try:
        yield Export(RULES, TORNELO_CALENDAR, 3600, 7 * DAY)
    finally:
        metrics.prepare(ArenaRules(), ErrorKind, OPERATIONS)


def value(name: str) -> float | None:
    return REGISTRY.get_sample_value(name, {})


def store(r: Redis) -> RedisStore[TorneloState]:
    return RedisStore(
        r,
        PREFIX,
        "reader-test",
        60.0,
        3600,
        codec=TORNELO_STATES,
        pending=RULES.pending,
        calendar_codec=TORNELO_CALENDAR,
    )


def entered(player: str, *tournaments: str) -> Write[TorneloState]:
    """A game's write that leaves `player`'s blitz rating with games of `tournaments` (the apply
    enters it in their indexes)."""
    state = TorneloState(seq=1, pending=tuple(Entry(t, games=1) for t in tournaments))
    return Write("", b"", ((f"{player}/blitz", 0),), (StateWrite(f"{player}/blitz", state, b"{}"),))


async def test_the_open_tournaments_are_those_recorded_and_not_marked_ended(r: Redis, export: Export) -> None:
    s = store(r)
    applied, _ = await s.apply([entered("A", "t1", "t2"), entered("B", "t1")])
    assert applied == [True, True]
    first = await r.hgetall(keys.opened_key(PREFIX))
    assert set(first) == {b"t1", b"t2"}  # the apply noted each tournament's first recording
    now = int(time.time())

    seen = await read(r, PREFIX, partial=True)
    assert (seen.marks, seen.closing, set(seen.opened)) == (0, None, {"t1", "t2"})
    export.show(seen, now + DAY)
    assert value("rating_period_latest_closed") == -1
    assert DAY - 2 <= (value("rating_period_oldest_open_seconds") or 0) <= DAY
    assert value("rating_period_open_alert_seconds") == 7 * DAY

    # t1's end read: marked ended, its close in progress (its index holds A and B).
    assert await s.mark(0, RULES.marked(Ended(), "t1"), "t1") == 1
    seen = await read(r, PREFIX, partial=True)
    assert (seen.marks, seen.closing, seen.left, set(seen.opened)) == (1, "t1", 2, {"t2"})
    assert await r.hexists(keys.opened_key(PREFIX), "t1")  # still noted until its close finishes
    export.show(seen, now + DAY)
    assert value("rating_period_latest_closed") == 1
    assert value("rating_period_close_in_progress") == 1
    assert value("rating_period_close_ratings_left") == 2

    # Its close finished (its ratings closed and taken out of the index): gone from `opened`.
    await r.srem(keys.index_key(PREFIX, "t1"), "A/blitz", "B/blitz")
    assert await s.finish("t1") == 1
    assert not await r.hexists(keys.opened_key(PREFIX), "t1")
    seen = await read(r, PREFIX, partial=True)
    assert (seen.marks, seen.closing, seen.left, set(seen.opened)) == (1, None, 0, {"t2"})

    # t2 ends with no game of it left open: nothing open, the age 0.
    assert await s.mark(1, RULES.marked(Ended({"t1": 0}, 1), "t2"), "t2") == 1
    await r.srem(keys.index_key(PREFIX, "t2"), "A/blitz")
    assert await s.finish("t2") == 1
    seen = await read(r, PREFIX, partial=True)
    export.show(seen, now + DAY)
    assert (seen.marks, seen.opened) == (2, {})
    assert value("rating_period_latest_closed") == 2
    assert value("rating_period_oldest_open_seconds") == 0


async def test_a_period_marked_is_open_until_finished_unless_the_calendar_is_kept_by_its_marks(r: Redis) -> None:
    """Read as fide's calendar (kept as one value), a period marked but not finished is still
    open; read by its marks (tornelo's), it is the close's, not an open tournament."""
    s = store(r)
    await s.apply([entered("A", "t1")])
    assert await s.mark(0, RULES.marked(Ended(), "t1"), "t1") == 1
    assert set((await read(r, PREFIX)).opened) == {"t1"}
    assert (await read(r, PREFIX, partial=True)).opened == {}
