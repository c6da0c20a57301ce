"""The pipeline's paths over the store in memory: publication rounds, conflicts with another
process, a lease lost during publication, an outbox another process holds. No I/O: the
publisher records its rounds, the memory backend's clock is the test's."""

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence

from tests.support.games import ENGINE, make_game, rating, seed_write
from worker.engine.schedule import Item
from worker.replay.memory_store import MemoryBackend, MemoryStore
from worker.rules.state import UNSEEN, RatingState
from worker.store.protocol import Write
from worker.stream.pipeline import Pipeline
from worker.stream.publisher import Publisher

LEASE = 60.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Rounds(Publisher):
    """Keeps every round it is asked to send; `after` runs after each (a fault, a clock jump)."""

    def __init__(self, after: Callable[[int], Awaitable[None]] | None = None) -> None:
        super().__init__(None, "ratings", 1.0)
        self.rounds: list[list[tuple[bytes, bytes]]] = []
        self.after = after

    async def send(self, records: Sequence[tuple[bytes, bytes]]) -> None:
        self.rounds.append(list(records))
        if self.after is not None:
            await self.after(len(self.rounds))

    def seqs(self, key: str) -> list[int]:
        return [json.loads(v)["seq"] for r in self.rounds for k, v in r if k == key.encode()]


def backend() -> tuple[MemoryBackend[RatingState], Clock]:
    clock = Clock()
    return MemoryBackend(UNSEEN, clock=clock), clock


async def seed(store: MemoryStore[RatingState], *players: str) -> None:
    writes: list[Write[RatingState]] = [seed_write(p, 180000 - 1000 * n)[0] for n, p in enumerate(players)]
    applied, claimed = await store.apply(writes)
    assert all(applied)
    await store.ack({k: events[0] for k, events in claimed.outboxes.items()})


async def test_a_players_events_go_out_one_round_each_in_seq_order_and_the_outboxes_end_empty() -> None:
    shared, _ = backend()
    store = MemoryStore(shared, "A", LEASE)
    await seed(store, "a", "b", "c", "d")
    publisher = Rounds()
    games: list[Item] = [make_game(f"g{n}", "a", o) for n, o in enumerate("bcd", 1)]
    planned, stats = await Pipeline(ENGINE, store, publisher).run(games)
    assert [getattr(p.outcome, "verdict", None) for p in planned] == ["applied"] * 3
    assert len(publisher.rounds) == 3 and stats.events_sent == 6
    for r in publisher.rounds:  # never two events of one key in a round
        assert len({k for k, _ in r}) == len(r)
    assert publisher.seqs(rating("a")) == [2, 3, 4]
    assert shared.outboxes == {} and shared.leases == {}


async def test_items_another_process_changed_first_are_planned_again_from_its_states() -> None:
    shared, _ = backend()
    ours, theirs = MemoryStore(shared, "A", LEASE), MemoryStore(shared, "B", LEASE)
    await seed(ours, "a", "b", "c", "d")

    class Overtaken(MemoryStore[RatingState]):
        """B applies (and publishes) a game of a's just before our first apply."""

        overtaken = False

        async def apply(self, items, flush=(), marks=()):  # type: ignore[no-untyped-def]
            if not self.overtaken:
                self.overtaken = True
                await Pipeline(ENGINE, theirs, Rounds()).run([make_game("gB", "a", "d")])
            return await super().apply(items, flush, marks)

    publisher = Rounds()
    games: list[Item] = [make_game("g1", "a", "b"), make_game("g2", "c", "d")]
    planned, stats = await Pipeline(ENGINE, Overtaken(shared, "A", LEASE), publisher).run(games)
    assert stats.conflicts == 2 and stats.attempts == 2  # g1 read a, g2 read d: both changed by gB
    assert [getattr(p.outcome, "verdict", None) for p in planned] == ["applied", "applied"]
    assert publisher.seqs(rating("a")) == [3]  # after gB's seq 2, from the state gB left
    assert shared.states[rating("a")].seq == 3 and shared.states[rating("d")].seq == 3  # seed, gB, g2


async def test_a_lease_lost_during_publication_stops_that_ratings_rounds_until_claimed_again() -> None:
    shared, clock = backend()
    store = MemoryStore(shared, "A", LEASE)
    await seed(store, "a", "b", "c", "d")

    async def outage(round_number: int) -> None:
        if round_number == 1:  # the first round is out; an outage outlasts our leases
            clock.now += LEASE + 1
            await MemoryStore(shared, "B", LEASE).claim([rating("a")])  # B takes a/blitz's

    publisher = Rounds(outage)
    games: list[Item] = [make_game(f"g{n}", "a", o) for n, o in enumerate("bcd", 1)]
    pipeline = Pipeline(ENGINE, store, publisher)
    running = asyncio.create_task(pipeline.run(games))
    await asyncio.sleep(0.05)
    assert not running.done()  # it waits for B's lease: sends nothing of a/blitz meanwhile
    assert publisher.seqs(rating("a")) == [2]
    clock.now += LEASE + 1  # B died: its lease expires
    await asyncio.wait_for(running, 5)
    # a/blitz's round 0 again first (its acknowledgement was lost with the lease), then the rest.
    assert publisher.seqs(rating("a")) == [2, 2, 3, 4]
    assert shared.outboxes == {}


async def test_an_outbox_another_process_holds_is_waited_for_then_flushed_in_order() -> None:
    shared, clock = backend()
    ours, theirs = MemoryStore(shared, "A", LEASE), MemoryStore(shared, "B", LEASE)
    await seed(ours, "a", "b", "c")
    # B applied a game of a's and died before publishing it: its lease holds a's outbox.
    dying = asyncio.create_task(Pipeline(ENGINE, theirs, Rounds(died)).run([make_game("gB", "a", "c")]))
    await asyncio.wait({dying})
    assert dying.cancelled()
    publisher = Rounds()
    running = asyncio.create_task(Pipeline(ENGINE, ours, publisher).run([make_game("g1", "a", "b")]))
    await asyncio.sleep(0.1)
    assert not running.done() and publisher.seqs(rating("a")) == []  # a's outbox is B's
    clock.now += LEASE + 1  # B's lease expires
    await asyncio.wait_for(running, 5)
    assert publisher.seqs(rating("a")) == [2, 3]  # B's event first, then ours
    assert list(shared.outboxes) == [rating("c")]  # gB's other event waits for c's next game


async def died(round_number: int) -> None:
    raise asyncio.CancelledError  # the process is gone before its first round is acknowledged
