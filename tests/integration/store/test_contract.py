"""One contract for every store (`worker.store.protocol`): the Redis one and the one in memory.

Each test runs against both, through the protocols only: check-and-set over the seqs read,
taint, idempotency records, watermarks, outboxes under leases, compare-and-pop
acknowledgements, lease expiry. Two stores on one backend play two worker processes. The
memory backend's clock is the test's; Redis's leases expire in real time (short ones).
"""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from redis.asyncio import Redis

from tests.support.games import ENGINE, game_write, make_game, rating, seed_write
from tests.support.processes import Processes
from worker.engine.engine import RESTORED, facts_digest
from worker.replay.memory_store import MemoryBackend, MemoryStore
from worker.rules.state import UNSEEN, RatingState
from worker.store.protocol import Store, Watermark, Write
from worker.store.redis_store import RedisStore

PREFIX = "contract:"
LEASE = 0.5  # seconds: short enough to wait out in real time against Redis


@dataclass
class Backend:
    """Stores sharing one backend, and the passing of time for their leases."""

    store: Callable[[str], Store[RatingState]]  # token -> a process's store
    advance: Callable[[float], Awaitable[None]]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "redis"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path, processes: Processes) -> AsyncIterator[Backend]:
    if request.param == "memory":
        clock = Clock()
        shared: MemoryBackend[RatingState] = MemoryBackend(UNSEEN, clock=clock)

        async def tick(seconds: float) -> None:
            clock.now += seconds

        yield Backend(lambda token: MemoryStore(shared, token, LEASE), tick)
        return
    server = processes.redis(tmp_path)  # killed by the fixture `processes`
    clients: list[Redis] = []

    def store(token: str) -> Store[RatingState]:
        client = Redis.from_url(server.url)
        clients.append(client)
        return RedisStore(client, PREFIX, token, LEASE, 3600)

    try:
        yield Backend(store, asyncio.sleep)
    finally:
        for client in clients:
            await client.aclose()


async def seeded(store: Store[RatingState], players: dict[str, int]) -> dict[str, RatingState]:
    """Rated players, their seeding events published and acknowledged."""
    made = [seed_write(p, h) for p, h in players.items()]
    applied, claimed = await store.apply([w for w, _ in made])
    assert all(applied)
    assert await store.ack({k: events[0] for k, events in claimed.outboxes.items()}) == []
    return {u.key: u.state for _, u in made}


async def test_an_apply_writes_states_records_and_outboxes_and_hands_the_outboxes_over(backend: Backend) -> None:
    store = backend.store("A")
    states = await seeded(store, {"a": 180000, "b": 170000})
    write, updates = game_write(make_game("g1", "a", "b"), states)
    applied, claimed = await store.apply([write])
    assert applied == [True]
    assert claimed.outboxes == {u.key: [u.payload] for u in updates} and claimed.blocked == []
    snapshot = await store.read([rating("a"), rating("b"), rating("z")], ["g1", "g2"])
    assert snapshot.states == {**{u.key: u.state for u in updates}, rating("z"): UNSEEN}
    assert snapshot.unconfirmed == {rating("a"): 1, rating("b"): 1, rating("z"): 0}
    assert snapshot.records == {"g1": write.digest}


async def test_a_stale_item_is_not_applied_and_taints_the_later_ones_reading_its_ratings(backend: Backend) -> None:
    store = backend.store("A")
    states = await seeded(store, {p: 180000 - 1000 * n for n, p in enumerate("abcdef")})
    first, _ = game_write(make_game("g1", "a", "b"), states)
    assert (await store.apply([first]))[0] == [True]
    stale, _ = game_write(make_game("g2", "a", "c"), states)  # computed before g1: a's seq moved
    later, _ = game_write(make_game("g3", "c", "d"), states)  # reads c, which the stale one read
    apart, _ = game_write(make_game("g4", "e", "f"), states)  # shares no rating with them
    applied, _ = await store.apply([stale, later, apart])
    assert applied == [False, False, True]
    assert (await store.read([], ["g2", "g3", "g4"])).records.keys() == {"g4"}


async def test_a_recorded_game_is_never_applied_again(backend: Backend) -> None:
    store = backend.store("A")
    states = await seeded(store, {"a": 180000, "b": 170000})
    write, _ = game_write(make_game("g1", "a", "b"), states)
    assert (await store.apply([write]))[0] == [True]
    current = (await store.read([rating("a"), rating("b")], [])).states
    again, _ = game_write(make_game("g1", "a", "b"), current)  # fresh seqs, same game
    assert (await store.apply([again]))[0] == [False]
    skipped: Write[RatingState] = Write("g9", facts_digest(make_game("g9", "a", "b", rated=False)), (), ())
    assert (await store.apply([skipped]))[0] == [True]
    assert (await store.apply([skipped]))[0] == [False]
    assert (await store.read([], ["g9"])).records == {"g9": skipped.digest}


async def test_watermarks_rise_only_with_an_apply_of_every_item_and_never_fall(backend: Backend) -> None:
    store = backend.store("A")
    states = await seeded(store, {"a": 180000, "b": 170000})
    write, _ = game_write(make_game("g1", "a", "b"), states)
    assert (await store.apply([write], (), [Watermark("games", 0, 10)]))[0] == [True]
    stale, _ = game_write(make_game("g2", "a", "b"), states)
    assert (await store.apply([stale], (), [Watermark("games", 0, 20)]))[0] == [False]
    assert await store.watermarks("games") == {0: 10}
    await store.apply([], (), [Watermark("games", 0, 5), Watermark("games", 1, 7)])
    assert await store.watermarks("games") == {0: 10, 1: 7}
    assert await store.watermarks("other") == {}


async def test_a_held_lease_blocks_another_process_until_acknowledged(backend: Backend) -> None:
    a, b = backend.store("A"), backend.store("B")
    states = await seeded(a, {"a": 180000, "b": 170000})
    write, updates = game_write(make_game("g1", "a", "b"), states)
    _, claimed = await a.apply([write])
    assert set(claimed.outboxes) == {rating("a"), rating("b")}
    blocked = await b.claim([rating("a"), rating("b")])
    assert blocked.outboxes == {} and sorted(blocked.blocked) == [rating("a"), rating("b")]
    assert await a.ack({u.key: u.payload for u in updates}) == []
    free = await b.claim([rating("a"), rating("b")])
    assert free.outboxes == {} and free.blocked == []  # nothing left to publish


async def test_an_acknowledgement_pops_only_the_event_it_sent_and_keep_renews_the_lease(backend: Backend) -> None:
    a, b = backend.store("A"), backend.store("B")
    states = await seeded(a, {"a": 180000, "b": 170000, "c": 160000})
    first, u1 = game_write(make_game("g1", "a", "b"), states)
    after = {**states, **{u.key: u.state for u in u1}}
    second, u2 = game_write(make_game("g2", "a", "c"), after)
    _, claimed = await a.apply([first, second])
    assert claimed.outboxes[rating("a")] == [u1[0].payload, u2[0].payload]
    assert (await a.read([rating("a")], [])).states[rating("a")] == u2[0].state  # the later of one call's writes
    sent = {rating("a"): u1[0].payload}
    assert await a.ack(sent, keep=[rating("a")]) == []
    assert await a.ack(sent, keep=[rating("a")]) == []  # retried after a lost reply: drops nothing else
    assert (await a.read([rating("a")], [])).unconfirmed == {rating("a"): 1}
    assert (await b.claim([rating("a")])).blocked == [rating("a")]  # renewed: still A's
    assert await a.ack({rating("a"): u2[0].payload}) == []
    assert (await a.read([rating("a")], [])).unconfirmed == {rating("a"): 0}


async def test_a_lease_expires_after_the_lease_time_and_the_old_holder_learns_it_lost_it(backend: Backend) -> None:
    a, b = backend.store("A"), backend.store("B")
    states = await seeded(a, {"a": 180000, "b": 170000})
    write, updates = game_write(make_game("g1", "a", "b"), states)
    await a.apply([write])
    await backend.advance(LEASE + 0.2)
    taken = await b.claim([rating("a"), rating("b")])
    assert taken.outboxes == {u.key: [u.payload] for u in updates}
    assert sorted(await a.ack({u.key: u.payload for u in updates})) == [rating("a"), rating("b")]
    assert (await a.read([rating("a")], [])).unconfirmed == {rating("a"): 1}  # B publishes it


async def test_a_flush_claims_an_outbox_left_by_a_process_that_died(backend: Backend) -> None:
    a, b = backend.store("A"), backend.store("B")
    states = await seeded(a, {"a": 180000, "b": 170000})
    write, updates = game_write(make_game("g1", "a", "b"), states)
    await a.apply([write])  # A dies before publishing
    await backend.advance(LEASE + 0.2)
    _, claimed = await b.apply([], [rating("a")])
    assert claimed.outboxes == {rating("a"): [updates[0].payload]}


async def test_a_record_without_facts_reads_back_as_restored(backend: Backend) -> None:
    store = backend.store("A")
    restored: Write[RatingState] = Write("g1", RESTORED, (), ())
    assert (await store.apply([restored]))[0] == [True]
    assert (await store.read([], ["g1"])).records == {"g1": RESTORED}
    assert ENGINE.apply(make_game("g1", "a", "b"), {}, RESTORED).verdict == "duplicate"
