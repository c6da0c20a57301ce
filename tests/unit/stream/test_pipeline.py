"""The pipeline's paths over the store in memory: publication rounds, conflicts with another
process, a lease lost during publication, an outbox another process holds. No I/O: the
publisher records its rounds, the memory backend's clock is the test's."""

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Collection, Sequence

from tests.support.games import ENGINE, make_game, rating, seed_write
from worker.replay.memory_store import MemoryBackend, MemoryStore
from worker.store.protocol import Claimed, Write
from worker.store.schedule import Item
from worker.stream.pipeline import Pipeline, settled
from worker.stream.publisher import Publisher
from worker.systems.arena.state import UNSEEN, RatingState

LEASE = 60.0
HOLD = 1.0  # the publication lease: how long a rating is held after a send of unknown outcome


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Rounds(Publisher):
    """Keeps every round it is asked to send; `after` runs after each (a fault, a clock jump)."""

    def __init__(self, after: Callable[[int], Awaitable[None]] | None = None) -> None:
        super().__init__(None, "ratings", 1.0)
        self.rounds: list[list[tuple[bytes, bytes | None]]] = []
        self.after = after

    async def send(self, records: Sequence[tuple[bytes, bytes | None]]) -> bool:
        self.rounds.append(list(records))
        if self.after is not None:
            await self.after(len(self.rounds))
        return True

    def seqs(self, key: str) -> list[int]:
        return [json.loads(v or b"{}")["seq"] for r in self.rounds for k, v in r if k == key.encode()]


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
    planned, stats = await Pipeline(ENGINE, store, publisher, hold_seconds=HOLD).run(games)
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

        async def apply(self, items, flush=(), marks=(), calendar_version=None):  # type: ignore[no-untyped-def]
            if not self.overtaken:
                self.overtaken = True
                await Pipeline(ENGINE, theirs, Rounds(), hold_seconds=HOLD).run([make_game("gB", "a", "d")])
            return await super().apply(items, flush, marks, calendar_version)

    publisher = Rounds()
    games: list[Item] = [make_game("g1", "a", "b"), make_game("g2", "c", "d")]
    planned, stats = await Pipeline(ENGINE, Overtaken(shared, "A", LEASE), publisher, hold_seconds=HOLD).run(games)
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
    pipeline = Pipeline(ENGINE, store, publisher, hold_seconds=HOLD)
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
    dying = asyncio.create_task(
        Pipeline(ENGINE, theirs, Rounds(died), hold_seconds=HOLD).run([make_game("gB", "a", "c")])
    )
    await asyncio.wait({dying})
    assert dying.cancelled()
    publisher = Rounds()
    running = asyncio.create_task(Pipeline(ENGINE, ours, publisher, hold_seconds=HOLD).run([make_game("g1", "a", "b")]))
    await asyncio.sleep(0.1)
    assert not running.done() and publisher.seqs(rating("a")) == []  # a's outbox is B's
    clock.now += LEASE + 1  # B's lease expires
    await asyncio.wait_for(running, 5)
    assert publisher.seqs(rating("a")) == [2, 3]  # B's event first, then ours
    assert list(shared.outboxes) == [rating("c")]  # gB's other event waits for c's next game


async def died(round_number: int) -> None:
    raise asyncio.CancelledError  # the process is gone before its first round is acknowledged


class Uncertain(Rounds):
    """Fails the rounds whose numbers are in `fail` (a timeout: the outcome unknown), records all."""

    def __init__(self, fail: set[int]) -> None:
        super().__init__()
        self.fail = fail
        self.times: list[float] = []  # when each round was sent (time.monotonic)

    async def send(self, records: Sequence[tuple[bytes, bytes | None]]) -> bool:
        await super().send(records)
        self.times.append(time.monotonic())
        if len(self.rounds) in self.fail:
            raise TimeoutError("no acknowledgement within the delivery timeout")
        return True

    def sent_at(self, key: str, seq: int) -> list[float]:
        return [
            t
            for t, r in zip(self.times, self.rounds, strict=True)
            for k, v in r
            if k == key.encode() and json.loads(v or b"{}")["seq"] == seq
        ]


async def test_after_a_send_of_unknown_outcome_no_later_event_of_its_ratings_goes_out_for_one_lease() -> None:
    shared, _ = backend()
    store = MemoryStore(shared, "A", LEASE)
    await seed(store, "a", "b", "c", "d")
    publisher = Uncertain(fail={1})  # the first round (a's and b's seq 2) times out once
    pipeline = Pipeline(ENGINE, store, publisher, hold_seconds=HOLD)
    games: list[Item] = [make_game("g1", "a", "b"), make_game("g2", "a", "b")]
    _, stats = await pipeline.run(games, wait=False)
    assert stats.parked == {rating("a"), rating("b")}  # their seq 3 waits
    assert publisher.seqs(rating("a")) == [2, 2]  # the round again, at once: the same event
    abandoned = publisher.times[0]
    # The lease is kept, not released: no other process may send a later event meanwhile.
    assert shared.holder(rating("a")) == "A"
    assert await MemoryStore(shared, "B", LEASE).claim([rating("a")]) == Claimed({}, [rating("a")])
    # Other ratings keep flowing: a batch of c and d is published at once, during the hold.
    await pipeline.run([make_game("g3", "c", "d")])
    assert publisher.seqs(rating("c")) == [2] and publisher.sent_at(rating("c"), 2)[0] < abandoned + HOLD
    await asyncio.wait_for(settled(stats.waiting), 5)
    assert publisher.seqs(rating("a")) == [2, 2, 3]
    assert publisher.sent_at(rating("a"), 3)[0] >= abandoned + HOLD
    assert shared.outboxes == {}
    await pipeline.close()


async def test_a_later_batch_of_a_held_rating_waits_for_the_hold_and_keeps_its_order() -> None:
    shared, _ = backend()
    store = MemoryStore(shared, "A", LEASE)
    await seed(store, "a", "b", "c")
    publisher = Uncertain(fail={1})
    pipeline = Pipeline(ENGINE, store, publisher, hold_seconds=HOLD)
    first = await pipeline.run([make_game("g1", "a", "b")], wait=False)  # seq 2 sent twice, acknowledged
    assert first[1].parked == set()  # nothing of a or b left to send
    _, stats = await pipeline.run([make_game("g2", "a", "c")], wait=False)
    assert stats.parked == {rating("a")}  # a is held: its seq 3 waits; c (never uncertain) went out
    assert publisher.seqs(rating("a")) == [2, 2] and publisher.seqs(rating("c")) == [2]
    await asyncio.wait_for(settled(stats.waiting), 5)
    assert publisher.seqs(rating("a")) == [2, 2, 3]
    assert publisher.sent_at(rating("a"), 3)[0] >= publisher.times[0] + HOLD
    await pipeline.close()


async def test_a_round_tried_again_renews_its_leases_and_drops_a_rating_whose_lease_was_lost() -> None:
    shared, _ = backend()
    store = MemoryStore(shared, "A", LEASE)
    await seed(store, "a", "b", "c")

    class LosesA(Uncertain):
        async def send(self, records: Sequence[tuple[bytes, bytes | None]]) -> bool:
            if len(self.rounds) == 0:  # a's lease ran out (an outage), and B took it meanwhile
                del shared.leases[rating("a")]
                await MemoryStore(shared, "B", LEASE).claim([rating("a")])
            return await super().send(records)

    publisher = LosesA(fail={1})
    pipeline = Pipeline(ENGINE, store, publisher, hold_seconds=HOLD)
    _, stats = await pipeline.run([make_game("g1", "a", "b")], wait=False)
    assert publisher.rounds[1] == [(rating("b").encode(), publisher.rounds[0][1][1])]  # b again, a dropped
    assert rating("a") in stats.parked and shared.holder(rating("a")) == "B"
    await pipeline.close()


async def test_with_an_idempotent_producer_nothing_is_held_after_a_send_of_unknown_outcome() -> None:
    shared, _ = backend()
    store = MemoryStore(shared, "A", LEASE)
    await seed(store, "a", "b")
    publisher = Uncertain(fail={1})
    pipeline = Pipeline(ENGINE, store, publisher, hold_seconds=HOLD, fenced=True)
    _, stats = await pipeline.run([make_game("g1", "a", "b"), make_game("g2", "a", "b")], wait=False)
    assert stats.parked == set()
    assert publisher.seqs(rating("a")) == [2, 2, 3]
    assert publisher.sent_at(rating("a"), 3)[0] < publisher.times[0] + HOLD
    assert shared.leases == {}
    await pipeline.close()


async def test_a_round_not_acknowledged_within_a_lease_is_given_up_until_its_lease_runs_out() -> None:
    """A process cut off from the broker does not keep its ratings from the others for ever."""
    shared, _ = backend()
    store = MemoryStore(shared, "A", LEASE)
    await seed(store, "a", "b")
    publisher = Uncertain(fail=set(range(1, 1000)))  # the broker never acknowledges
    pipeline = Pipeline(ENGINE, store, publisher, hold_seconds=0.3)
    started = time.monotonic()
    _, stats = await pipeline.run([make_game("g1", "a", "b")], wait=False)
    assert 0.3 <= time.monotonic() - started < 5.0  # it gave up a lease after the first attempt
    assert stats.parked == {rating("a"), rating("b")} and not any(f.done() for f in stats.waiting)
    tried = len(publisher.rounds)
    await asyncio.sleep(0.3)
    assert len(publisher.rounds) == tried  # no attempt while its lease runs out
    assert shared.holder(rating("a")) == "A"  # (the memory backend's clock stands still: not yet)
    await pipeline.close()


async def test_the_leases_are_renewed_while_a_request_is_out() -> None:
    shared, _ = backend()

    class Counting(MemoryStore[RatingState]):
        renewals = 0

        async def renew(self, ratings: Collection[str]) -> list[str]:
            Counting.renewals += 1
            return await super().renew(ratings)

    store = Counting(shared, "A", LEASE)
    await seed(store, "a", "b")

    class Slow(Rounds):
        async def send(self, records: Sequence[tuple[bytes, bytes | None]]) -> bool:
            await asyncio.sleep(0.35)  # the client holds the request 3.5 half delivery timeouts
            return await super().send(records)

    publisher = Slow()
    publisher.delivery_timeout = 0.2
    await Pipeline(ENGINE, store, publisher, hold_seconds=HOLD).run([make_game("g1", "a", "b")])
    assert Counting.renewals >= 2
    assert publisher.seqs(rating("a")) == [2]
