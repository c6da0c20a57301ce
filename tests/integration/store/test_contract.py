"""One contract for every store (`worker.store.protocol`): the Redis one and the one in memory,
for every rating system's states: the arena's (`RatingState`), US Chess correspondence's
(`uscf-cc`, `CcState`), and the per-period systems' FIDE (`fide`, `FideState`: a game recorded in
its month, held before the month's list exists) and Tornelo (`tornelo`, `TorneloState`: a game
recorded in its tournament).

Each test runs against both stores for every system, through the protocols only: check-and-set
over the seqs read, taint, idempotency records, watermarks, outboxes under leases, compare-and-pop
acknowledgements, lease expiry. Its games, seeding rows and rating keys are the system's (the
per-period systems' ratings are whole numbers: every rating seeded here is), and its writes are
what the system's engine makes of them. Two stores on one backend play two worker
processes. The memory backend's clock is the test's; Redis's leases expire in real time (short
ones). (What is particular to one system's states, as uscf-cc's negative ratings, is its own
file's: tests/integration/store/test_cc_states.py.)
"""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol

import pytest
from redis.asyncio import Redis

from schemas.correspondence_game import CorrespondenceGameFinished
from schemas.game_finished import GameFinished
from schemas.system_game import SystemGameFinished
from schemas.tornelo_game import TorneloGameFinished
from tests.support.games import BLITZ, ENGINE, make_game
from tests.support.processes import Processes
from worker.engine.engine import RESTORED, Engine, SeedRow, Update, Verdict
from worker.engine.events import rating_key
from worker.engine.spec import StateCodec
from worker.replay.memory_store import MemoryBackend, MemoryStore
from worker.rules.hundredths import ONE, Hundredths, Points
from worker.rules.interface import S
from worker.store.protocol import StateWrite, Store, Watermark, Write
from worker.store.redis_store import RedisStore
from worker.systems.arena.codec import RATING_STATES
from worker.systems.arena.state import UNSEEN
from worker.systems.fide.codec import FIDE_STATES
from worker.systems.fide.rules import FideState
from worker.systems.registry import FIDE, TORNELO, USCF_CC
from worker.systems.tornelo.codec import TORNELO_STATES
from worker.systems.tornelo.rules import DEFAULT_MODIFIER, TorneloState
from worker.systems.uscf_cc.codec import CC_STATES
from worker.systems.uscf_cc.rules import CATEGORY, CcState

PREFIX = "contract:"
LEASE = 0.5  # seconds: short enough to wait out in real time against Redis


class MakeGame(Protocol):
    def __call__(
        self, game_id: str, white: str, black: str, result: str = "1-0", rated: bool = True
    ) -> GameFinished: ...


def make_cc_game(game_id: str, white: str, black: str, result: str = "1-0", rated: bool = True) -> GameFinished:
    """The same game as `make_game`'s, as a correspondence game (3 days a move)."""
    game = make_game(game_id, white, black, result, rated).model_dump()
    return CorrespondenceGameFinished.model_validate(
        {**game, "time_control": {"base_seconds": 259200, "increment_seconds": 0}}
    )


def make_fide_game(game_id: str, white: str, black: str, result: str = "1-0", rated: bool = True) -> GameFinished:
    """The same game as `make_game`'s, as `fide` decodes it (November 2026: held, no month closed)."""
    return SystemGameFinished.model_validate(make_game(game_id, white, black, result, rated).model_dump())


def make_tornelo_game(game_id: str, white: str, black: str, result: str = "1-0", rated: bool = True) -> GameFinished:
    """The same game as `make_game`'s, as `tornelo` decodes it, of the open tournament T1."""
    game = make_game(game_id, white, black, result, rated).model_dump()
    return TorneloGameFinished.model_validate({**game, "tournament_id": "T1"})


@dataclass(frozen=True)
class System(Generic[S]):
    """A rating system as the contract drives its stores: its engine, the state of a rating never
    seen, the category its games are rated in, a valid game of it, and its state's Redis encoding."""

    engine: Engine[S]
    unseen: S
    category: str
    game: MakeGame
    codec: StateCodec[S]  # its state's Redis encoding, which its RedisStore is given
    seed_extra: tuple[object, ...] = ()  # the system's own fields of a seeding row (`SeedRow.extra`)
    whole: bool = False  # its ratings are whole numbers (hundredths a multiple of 100)

    @property
    def name(self) -> str:
        return self.engine.rules.name

    def rating(self, player: str) -> str:
        """The key of the player's rating in the system's category."""
        return rating_key(player, self.category)

    def seed_write(self, player: str, hundredths: int) -> tuple[Write[S], Update[S]]:
        """The write of an imported rating (40 rated games, or game credits) over a rating never seen."""
        assert not self.whole or hundredths % ONE == 0, f"{self.name} seeds whole ratings only: {hundredths}"
        row = SeedRow(player, self.category, Hundredths(hundredths), 40, self.seed_extra)
        outcome = self.engine.seed(row, self.unseen, force=True)
        assert outcome.update is not None
        u = outcome.update
        return Write("", b"", ((u.key, self.unseen.seq),), (StateWrite(u.key, u.state, u.payload),)), u

    def game_write(self, game: GameFinished, states: Mapping[str, S]) -> tuple[Write[S], tuple[Update[S], ...]]:
        """The write of `game` computed on `states` (the seqs it read are theirs)."""
        ratings = self.engine.ratings_read(game)
        assert ratings is not None
        outcome = self.engine.apply(game, {r: states.get(r, self.unseen) for r in ratings}, None)
        assert outcome.verdict is Verdict.APPLIED, outcome
        reads = tuple((r, states.get(r, self.unseen).seq) for r in ratings)
        return Write(game.game_id, outcome.digest, reads, outcome.updates), outcome.updates

    def assert_own(self, states: Mapping[str, S]) -> None:
        """The states read are the system's own type (a tuple of the same values is not one)."""
        assert all(type(state) is type(self.unseen) for state in states.values()), states


ARENA_SYSTEM = System(ENGINE, UNSEEN, BLITZ, make_game, RATING_STATES)
CC_SYSTEM = System(Engine(USCF_CC, Points(1200)), CcState(), CATEGORY, make_cc_game, CC_STATES)
# fide's row: reached_2400 false (every rating seeded here is under 2400), no birth year; tornelo's:
# the K modifier 1.00.
FIDE_SYSTEM = System(
    Engine(FIDE, Points(1200)), FideState(), BLITZ, make_fide_game, FIDE_STATES, (False, None), whole=True
)
TORNELO_SYSTEM = System(
    Engine(TORNELO, Points(1200)),
    TorneloState(),
    BLITZ,
    make_tornelo_game,
    TORNELO_STATES,
    (DEFAULT_MODIFIER,),
    whole=True,
)
SYSTEMS: dict[str, System[Any]] = {s.name: s for s in (ARENA_SYSTEM, CC_SYSTEM, FIDE_SYSTEM, TORNELO_SYSTEM)}


@dataclass
class Backend(Generic[S]):
    """Stores sharing one backend, and the passing of time for their leases."""

    store: Callable[[str], Store[S]]  # token -> a process's store
    advance: Callable[[float], Awaitable[None]]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=list(SYSTEMS))
def system(request: pytest.FixtureRequest) -> System[Any]:
    return SYSTEMS[request.param]


@pytest.fixture(params=["memory", "redis"])
async def backend(
    request: pytest.FixtureRequest, system: System[S], tmp_path: Path, processes: Processes
) -> AsyncIterator[Backend[S]]:
    if request.param == "memory":
        clock = Clock()
        shared: MemoryBackend[S] = MemoryBackend(system.unseen, clock=clock)

        async def tick(seconds: float) -> None:
            clock.now += seconds

        yield Backend(lambda token: MemoryStore(shared, token, LEASE), tick)
        return
    server = processes.redis(tmp_path)  # killed by the fixture `processes`
    clients: list[Redis] = []

    def store(token: str) -> Store[S]:
        client = Redis.from_url(server.url)
        clients.append(client)
        return RedisStore(client, PREFIX, token, LEASE, 3600, codec=system.codec)

    try:
        yield Backend(store, asyncio.sleep)
    finally:
        for client in clients:
            await client.aclose()


async def seeded(system: System[S], store: Store[S], players: dict[str, int]) -> dict[str, S]:
    """Rated players, their seeding events published and acknowledged."""
    made = [system.seed_write(p, h) for p, h in players.items()]
    applied, claimed = await store.apply([w for w, _ in made])
    assert all(applied)
    assert await store.ack({k: events[0] for k, events in claimed.outboxes.items()}) == []
    return {u.key: u.state for _, u in made}


async def test_an_apply_writes_states_records_and_outboxes_and_hands_the_outboxes_over(
    system: System[S], backend: Backend[S]
) -> None:
    rating = system.rating
    store = backend.store("A")
    states = await seeded(system, store, {"a": 180000, "b": 170000})
    write, updates = system.game_write(system.game("g1", "a", "b"), states)
    applied, claimed = await store.apply([write])
    assert applied == [True]
    assert claimed.outboxes == {u.key: [u.payload] for u in updates} and claimed.blocked == []
    snapshot = await store.read([rating("a"), rating("b"), rating("z")], ["g1", "g2"])
    assert snapshot.states == {**{u.key: u.state for u in updates}, rating("z"): system.unseen}
    system.assert_own(snapshot.states)
    assert snapshot.unconfirmed == {rating("a"): 1, rating("b"): 1, rating("z"): 0}
    assert snapshot.records == {"g1": write.digest}


async def test_a_stale_item_is_not_applied_and_taints_the_later_ones_reading_its_ratings(
    system: System[S], backend: Backend[S]
) -> None:
    rating, game = system.rating, system.game
    store = backend.store("A")
    states = await seeded(system, store, {p: 180000 - 1000 * n for n, p in enumerate("abcdef")})
    first, updates = system.game_write(game("g1", "a", "b"), states)
    assert (await store.apply([first]))[0] == [True]
    stale, _ = system.game_write(game("g2", "a", "c"), states)  # computed before g1: a's seq moved
    later, _ = system.game_write(game("g3", "c", "d"), states)  # reads c, which the stale one read
    apart, _ = system.game_write(game("g4", "e", "f"), states)  # shares no rating with them
    applied, _ = await store.apply([stale, later, apart])
    assert applied == [False, False, True]
    assert (await store.read([], ["g2", "g3", "g4"])).records.keys() == {"g4"}
    # The refused ones changed nothing: a as g1 left it, c and d as seeded.
    untouched = (await store.read([rating("a"), rating("c"), rating("d")], [])).states
    assert untouched == {
        rating("a"): updates[0].state,
        rating("c"): states[rating("c")],
        rating("d"): states[rating("d")],
    }
    system.assert_own(untouched)


async def test_a_recorded_game_is_never_applied_again(system: System[S], backend: Backend[S]) -> None:
    rating, game = system.rating, system.game
    store = backend.store("A")
    states = await seeded(system, store, {"a": 180000, "b": 170000})
    write, _ = system.game_write(game("g1", "a", "b"), states)
    assert (await store.apply([write]))[0] == [True]
    current = (await store.read([rating("a"), rating("b")], [])).states
    again, _ = system.game_write(game("g1", "a", "b"), current)  # fresh seqs, same game
    assert (await store.apply([again]))[0] == [False]
    unrated = system.engine.apply(game("g9", "a", "b", rated=False), {}, None)
    assert unrated.verdict is Verdict.SKIPPED
    skipped: Write[S] = Write("g9", unrated.digest, (), ())
    assert (await store.apply([skipped]))[0] == [True]
    assert (await store.apply([skipped]))[0] == [False]
    assert (await store.read([], ["g9"])).records == {"g9": skipped.digest}


async def test_watermarks_rise_only_with_an_apply_of_every_item_and_never_fall(
    system: System[S], backend: Backend[S]
) -> None:
    store = backend.store("A")
    states = await seeded(system, store, {"a": 180000, "b": 170000})
    write, _ = system.game_write(system.game("g1", "a", "b"), states)
    assert (await store.apply([write], (), [Watermark("games", 0, 10)]))[0] == [True]
    stale, _ = system.game_write(system.game("g2", "a", "b"), states)
    assert (await store.apply([stale], (), [Watermark("games", 0, 20)]))[0] == [False]
    assert await store.watermarks("games") == {0: 10}
    await store.apply([], (), [Watermark("games", 0, 5), Watermark("games", 1, 7)])
    assert await store.watermarks("games") == {0: 10, 1: 7}
    assert await store.watermarks("other") == {}


async def test_a_held_lease_blocks_another_process_until_acknowledged(system: System[S], backend: Backend[S]) -> None:
    rating = system.rating
    a, b = backend.store("A"), backend.store("B")
    states = await seeded(system, a, {"a": 180000, "b": 170000})
    write, updates = system.game_write(system.game("g1", "a", "b"), states)
    _, claimed = await a.apply([write])
    assert set(claimed.outboxes) == {rating("a"), rating("b")}
    blocked = await b.claim([rating("a"), rating("b")])
    assert blocked.outboxes == {} and sorted(blocked.blocked) == [rating("a"), rating("b")]
    assert await a.ack({u.key: u.payload for u in updates}) == []
    free = await b.claim([rating("a"), rating("b")])
    assert free.outboxes == {} and free.blocked == []  # nothing left to publish


async def test_an_acknowledgement_pops_only_the_event_it_sent_and_keep_renews_the_lease(
    system: System[S], backend: Backend[S]
) -> None:
    rating = system.rating
    a, b = backend.store("A"), backend.store("B")
    states = await seeded(system, a, {"a": 180000, "b": 170000, "c": 160000})
    first, u1 = system.game_write(system.game("g1", "a", "b"), states)
    after = {**states, **{u.key: u.state for u in u1}}
    second, u2 = system.game_write(system.game("g2", "a", "c"), after)
    _, claimed = await a.apply([first, second])
    assert claimed.outboxes[rating("a")] == [u1[0].payload, u2[0].payload]
    latest = (await a.read([rating("a")], [])).states
    assert latest[rating("a")] == u2[0].state  # the later of one call's writes
    system.assert_own(latest)
    sent = {rating("a"): u1[0].payload}
    assert await a.ack(sent, keep=[rating("a")]) == []
    assert await a.ack(sent, keep=[rating("a")]) == []  # retried after a lost reply: drops nothing else
    assert (await a.read([rating("a")], [])).unconfirmed == {rating("a"): 1}
    assert (await b.claim([rating("a")])).blocked == [rating("a")]  # renewed: still A's
    assert await a.ack({rating("a"): u2[0].payload}) == []
    assert (await a.read([rating("a")], [])).unconfirmed == {rating("a"): 0}


async def test_a_lease_expires_after_the_lease_time_and_the_old_holder_learns_it_lost_it(
    system: System[S], backend: Backend[S]
) -> None:
    rating = system.rating
    a, b = backend.store("A"), backend.store("B")
    states = await seeded(system, a, {"a": 180000, "b": 170000})
    write, updates = system.game_write(system.game("g1", "a", "b"), states)
    await a.apply([write])
    await backend.advance(LEASE + 0.2)
    taken = await b.claim([rating("a"), rating("b")])
    assert taken.outboxes == {u.key: [u.payload] for u in updates}
    assert sorted(await a.ack({u.key: u.payload for u in updates})) == [rating("a"), rating("b")]
    assert (await a.read([rating("a")], [])).unconfirmed == {rating("a"): 1}  # B publishes it


async def test_a_flush_claims_an_outbox_left_by_a_process_that_died(system: System[S], backend: Backend[S]) -> None:
    rating = system.rating
    a, b = backend.store("A"), backend.store("B")
    states = await seeded(system, a, {"a": 180000, "b": 170000})
    write, updates = system.game_write(system.game("g1", "a", "b"), states)
    await a.apply([write])  # A dies before publishing
    await backend.advance(LEASE + 0.2)
    _, claimed = await b.apply([], [rating("a")])
    assert claimed.outboxes == {rating("a"): [updates[0].payload]}


async def test_a_record_without_facts_reads_back_as_restored(system: System[S], backend: Backend[S]) -> None:
    store = backend.store("A")
    restored: Write[S] = Write("g1", RESTORED, (), ())
    assert (await store.apply([restored]))[0] == [True]
    assert (await store.read([], ["g1"])).records == {"g1": RESTORED}
    assert system.engine.apply(system.game("g1", "a", "b"), {}, RESTORED).verdict == "duplicate"


async def test_an_ack_with_a_hold_keeps_the_lease_that_long_then_lets_it_go(
    system: System[S], backend: Backend[S]
) -> None:
    """After a send of unknown outcome the lease is neither released nor renewed for a whole lease:
    it is kept for the hold (here 2 leases), and no other process takes it before."""
    rating = system.rating
    a, b = backend.store("A"), backend.store("B")
    states = await seeded(system, a, {"a": 180000, "b": 170000})
    write, updates = system.game_write(system.game("g1", "a", "b"), states)
    await a.apply([write])
    sent = {u.key: u.payload for u in updates}
    assert await a.ack(sent, hold=dict.fromkeys(sent, 2 * LEASE)) == []
    assert (await a.read([rating("a")], [])).unconfirmed == {rating("a"): 0}  # acknowledged all the same
    await backend.advance(LEASE + 0.2)  # a whole lease later: still held
    assert await a.renew([rating("a")]) == []
    assert await a.renew([rating("b")]) == []
    await backend.advance(2 * LEASE + 0.2)  # past the hold and the renewal: gone
    write2, _ = system.game_write(system.game("g2", "a", "b"), {**states, **{u.key: u.state for u in updates}})
    applied, claimed = await b.apply([write2])
    assert applied == [True] and set(claimed.outboxes) == set(sent)  # B may take them now


async def test_a_renewal_keeps_only_the_leases_still_ours(system: System[S], backend: Backend[S]) -> None:
    rating = system.rating
    a, b = backend.store("A"), backend.store("B")
    states = await seeded(system, a, {"a": 180000, "b": 170000})
    write, _ = system.game_write(system.game("g1", "a", "b"), states)
    await a.apply([write])
    await backend.advance(LEASE + 0.2)
    await b.claim([rating("a")])  # a's lease ran out and B took it; b's ran out and nobody took it
    assert sorted(await a.renew([rating("a"), rating("b")])) == [rating("a"), rating("b")]
    assert (await a.claim([rating("a")])).blocked == [rating("a")]  # still B's
