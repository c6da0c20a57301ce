"""A batch's way through the store: read once, compute in order, apply atomically, publish.

Retries until every item is applied (or found to be a duplicate) and every outbox it touched is
published, or parked (below) to be published as soon as it may. The caller commits the batch's
offsets once every rating the batch parked is published (`BatchStats.waiting`).

**Ratings whose publication must wait: parked.** A rating's events cannot always go out with
its batch:
- a send of its previous event had an unknown outcome (`worker.stream.publisher`): a copy of that
  event may still reach the broker, so no later event of the rating is sent until one publication
  lease (RATING_PUBLICATION_LEASE_SECONDS) has passed since the attempt was abandoned (the hold),
  and its lease is kept until then, not released, so that no other process sends one either;
- another process holds its lease (it is publishing it, or it died and its lease must run out);
- its lease was lost while this process published it (an outage longer than the lease).
Such a rating's events stay in its outbox, durable in Redis, and the batch returns without them,
so that the worker's next batches (other ratings, the same partitions) go on. A background task
(`_flush_parked`) claims and publishes each parked rating when it is due: at the end of its hold,
or with backoff while another process holds it. All the publication of one process (a batch's,
the background task's) runs under one lock, so that a rating is never published by two of them
at once, nor appended to by a batch while the background task publishes it.

With an idempotent producer (RATING_KAFKA_IDEMPOTENT_PRODUCER) the broker itself drops a late
copy of this producer's requests, so there is no hold after an uncertain attempt; the lease still
keeps every other writer off a rating until a full lease after a request of ours could be out.
"""

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic

from worker import metrics
from worker.engine.engine import Engine
from worker.rules.interface import S
from worker.store.protocol import Claimed, Store, Watermark
from worker.store.schedule import Item, Planned, read_and_plan, unapplied
from worker.stream.publisher import Publisher
from worker.stream.retry import REDIS_ACK, REDIS_APPLY, REDIS_CLAIM, REDIS_READ, REDIS_WAIT, retrying

log = logging.getLogger(__name__)

# Waiting for an outbox whose lease another process holds: it is normally released within
# one publication (milliseconds); a crashed holder's lease expires after the lease time.
BLOCKED_FIRST_DELAY = 0.02
BLOCKED_MAX_DELAY = 1.0


@dataclass
class BatchStats:
    conflicts: int = 0  # items re-read and recomputed because another process changed a state first
    attempts: int = 0
    events_sent: int = 0
    parked: set[str] = field(default_factory=set)  # ratings whose events wait (see the module's docstring)
    # What their publication waits for, taken while the batch still held the lock: done once each
    # is published, or failed with what stopped it.
    waiting: list["asyncio.Future[None]"] = field(default_factory=list)


@dataclass
class _Parked:
    """A rating whose events wait: when to try it next, the backoff after that, its waiters."""

    due: float  # on the pipeline's clock
    delay: float
    done: "asyncio.Future[None]"


class Pipeline(Generic[S]):
    def __init__(
        self,
        engine: Engine[S],
        store: Store[S],
        publisher: Publisher,
        *,
        hold_seconds: float,  # RATING_PUBLICATION_LEASE_SECONDS: the hold after an uncertain attempt
        fenced: bool = False,  # an idempotent producer: no hold (see the module's docstring)
    ) -> None:
        self.engine = engine
        self.store = store
        self.publisher = publisher
        self.hold_seconds = hold_seconds
        self.fenced = fenced
        self._publishing = asyncio.Lock()
        self._parked: dict[str, _Parked] = {}
        self._holds: dict[str, float] = {}  # rating -> until when no later event of it may be sent
        self._prune_at = 0.0  # when the holds that ended are next dropped
        self._flusher: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()  # a rating was parked: the background task looks again
        self._failure: Exception | None = None  # what stopped the background task, raised to every caller

    async def run(
        self, items: Sequence[Item], marks: Sequence[Watermark] = (), *, wait: bool = True
    ) -> tuple[list[Planned[S]], BatchStats]:
        """Apply `items` in order; return each item's final plan (what was decided for it).

        1. Read every state and idempotency record the pending items need (one script call).
        2. Plan them in order with the engine, each seeing what the earlier ones produced.
        3. Apply the plans (one script call): each is checked against the seqs it read and
           the absence of its record; the call that applies every pending item also raises
           the batch's watermarks (`marks`).
        4. Publish what the call claimed, round by round (`_publish`); park the ratings whose
           events must wait (`stats.parked`).
        5. Items that did not apply are read and planned again (back to 1), and with them
           every later copy of the same game: a copy's verdict (duplicate or conflict) was
           decided against the earlier copy's plan, which no longer holds.
        6. With `wait`, return once the parked ratings are published too (the commands);
           without, the caller waits for `stats.waiting` before it commits (the worker).
        """
        stats = BatchStats()
        if self._failure is not None:
            raise self._failure
        async with self._publishing:
            if not items:  # a batch of bad records alone: its watermarks are raised all the same
                if marks:
                    await retrying(REDIS_APPLY, self.store.apply, (), (), marks)
                    await retrying(REDIS_WAIT, self.store.replicated)
                return [], stats
            final: list[Planned[S] | None] = [None] * len(items)
            pending = list(range(len(items)))
            while pending:
                stats.attempts += 1
                ratings, snapshot, planned = await read_and_plan(
                    self.engine,
                    [items[i] for i in pending],
                    lambda r, g, p: retrying(REDIS_READ, self.store.read, r, g, p),
                )
                writes = [p.write for p in planned if p.write is not None]
                # Unconfirmed events of any rating the batch read are flushed with it: a duplicate
                # game, an unchanged seed row or a crash before publication leaves no event behind.
                flush = [r for r in ratings if snapshot.unconfirmed.get(r)]
                claimed_at = time.monotonic()  # the leases the apply claims run from no earlier than this
                applied, claimed = await retrying(
                    REDIS_APPLY, self.store.apply, writes, flush, marks, snapshot.calendar_version
                )
                await retrying(REDIS_WAIT, self.store.replicated)
                retry = unapplied(pending, planned, applied, final)
                sent, parked = await self._publish(claimed, claimed_at)
                stats.events_sent += sent
                stats.parked |= parked
                if retry:
                    stats.conflicts += len(retry)
                    log.debug("%d of %d items changed under us; recomputing them", len(retry), len(pending))
                    await asyncio.sleep(random.uniform(0, 0.005))  # de-synchronise competing replicas
                pending = retry
            stats.waiting = [self._parked[r].done for r in stats.parked if r in self._parked]
        if wait:
            await settled(stats.waiting)
        return [p for p in final if p is not None], stats

    def due(self, ratings: Iterable[str]) -> float | None:
        """The latest time (time.monotonic()) any of `ratings` parked now is next tried, if any is."""
        dues = [self._parked[r].due for r in ratings if r in self._parked]
        return max(dues) if dues else None

    @property
    def parked(self) -> int:
        """How many ratings wait to be published (see the module's docstring)."""
        return len(self._parked)

    async def close(self) -> None:
        """Stop the background publication; what is parked stays in the outboxes, under leases that
        run out, for whoever touches those ratings next (a redelivery of an uncommitted batch)."""
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
        self._fail_parked(None)

    async def _publish(self, claimed: Claimed, renewed_at: float, flushing: Iterable[str] = ()) -> tuple[int, set[str]]:
        """Send the claimed outboxes in rounds; after each, drop what Kafka acknowledged.

        Round r holds the r-th event of every outbox, so event n+1 of a rating goes out only
        after n is acknowledged; dropping each round at once means a crash can repeat only
        the last event sent of a rating, and only right after its original. A round whose
        outcome was unknown for a while holds its ratings for one lease from then (their
        next events are parked until it ends). A rating parked already (unless it is one the
        background task is `flushing`), held, blocked by another process's lease, whose lease
        was lost meanwhile, or whose round was given up (not acknowledged a lease after its first
        attempt: tried again once its lease has run out) is parked and not sent now. `renewed_at`:
        when the claimed leases were taken. Returns the events sent and the ratings parked.
        """
        now = time.monotonic()
        if now >= self._prune_at:  # the holds that ended, dropped once a lease
            self._holds = {r: until for r, until in self._holds.items() if until > now}
            self._prune_at = now + self.hold_seconds
        mine = set(flushing)
        parked: set[str] = set()
        for rating in claimed.blocked:
            self._park(rating, now, blocked=True)
            parked.add(rating)
        outboxes: dict[str, list[bytes]] = {}
        for rating, events in claimed.outboxes.items():
            held = self._held_until(rating, now)
            if held is not None or (rating in self._parked and rating not in mine):
                self._park(rating, held or now)
                parked.add(rating)
            else:
                outboxes[rating] = events
        sent = 0
        r = 0
        while outboxes:
            heads = {rating: events[r] for rating, events in outboxes.items()}
            delivered = await self.publisher.deliver(
                {k.encode(): v for k, v in heads.items()}, self._renew, renewed_at, self.hold_seconds
            )
            ours = {k.decode() for k in delivered.keys}
            sent += len(ours)
            more = {rating for rating in ours if len(outboxes[rating]) > r + 1}
            hold: dict[str, float] = {}
            if delivered.uncertain_at is not None and not self.fenced:
                until = delivered.uncertain_at + self.hold_seconds
                for rating in ours:
                    self._holds[rating] = until
                hold = dict.fromkeys(ours, max(0.001, until - time.monotonic()))
            acked = {rating: heads[rating] for rating in ours}
            renewed_at = time.monotonic()
            gone = set(await retrying(REDIS_ACK, self.store.ack, acked, more, hold))
            await retrying(REDIS_WAIT, self.store.replicated)  # before the next round goes out
            for key in delivered.given_up:  # ours until its lease runs out, then tried again
                self._park(key.decode(), delivered.lease_until)
                parked.add(key.decode())
            for rating in {k.decode() for k in delivered.lost} | gone:  # whoever holds the lease sends them
                self._park(rating, time.monotonic(), blocked=True)
                parked.add(rating)
            for rating in (more & hold.keys()) - gone:
                self._park(rating, self._holds[rating])
                parked.add(rating)
            outboxes = {
                rating: events
                for rating, events in outboxes.items()
                if rating in more and rating not in gone and rating not in hold
            }
            r += 1
        return sent, parked

    async def _renew(self, keys: list[bytes]) -> list[bytes]:
        """Before a round is sent again: renew its leases, replicated like every lease write."""
        lost = await self.store.renew([k.decode() for k in keys])
        await retrying(REDIS_WAIT, self.store.replicated)
        return [r.encode() for r in lost]

    def _held_until(self, rating: str, now: float) -> float | None:
        until = self._holds.get(rating)
        if until is None:
            return None
        if until <= now:
            del self._holds[rating]
            return None
        return until

    def _park(self, rating: str, due: float, blocked: bool = False) -> None:
        entry = self._parked.get(rating)
        if entry is None:
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            done.add_done_callback(_retrieved)  # its waiters raise the failure; nobody else must see it
            entry = self._parked[rating] = _Parked(due, BLOCKED_FIRST_DELAY, done)
        if blocked:  # tried again after a backoff that doubles up to BLOCKED_MAX_DELAY
            entry.due = max(due, time.monotonic() + entry.delay)
            entry.delay = min(entry.delay * 2, BLOCKED_MAX_DELAY)
        else:
            entry.due = due
        metrics.PUBLICATIONS_WAITING.set(len(self._parked))
        self._wake.set()
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_parked())

    async def _flush_parked(self) -> None:
        """Claim and publish each parked rating when it is due, until none is left. A failure
        (a Kafka error no waiting cures, a command's retry budget spent) goes to the waiters,
        and to every later `run`."""
        try:
            while self._parked:
                self._wake.clear()
                due = min(entry.due for entry in self._parked.values())
                with contextlib.suppress(TimeoutError):  # woken early when a rating is parked
                    async with asyncio.timeout(max(0.0, due - time.monotonic())):
                        await self._wake.wait()
                async with self._publishing:
                    now = time.monotonic()
                    ready = sorted(r for r, entry in self._parked.items() if entry.due <= now)
                    if not ready:
                        continue
                    claimed = await retrying(REDIS_CLAIM, self.store.claim, ready)
                    await retrying(REDIS_WAIT, self.store.replicated)
                    _, parked = await self._publish(claimed, now, ready)
                    for rating in ready:
                        if rating not in parked:  # published, or nothing was left to publish
                            self._parked.pop(rating).done.set_result(None)
                    metrics.PUBLICATIONS_WAITING.set(len(self._parked))
        except Exception as e:
            self._failure = e
            self._fail_parked(e)

    def _fail_parked(self, error: Exception | None) -> None:
        """End every waiter: with `error`, or cancelled (the pipeline closes)."""
        for entry in self._parked.values():
            if not entry.done.done():
                if error is None:
                    entry.done.cancel()
                else:
                    entry.done.set_exception(error)
        self._parked.clear()
        metrics.PUBLICATIONS_WAITING.set(0)


async def settled(waiting: Sequence["asyncio.Future[None]"]) -> None:
    """Return once every future of `waiting` (`BatchStats.waiting`) is done; raise what stopped one."""
    if waiting:
        await asyncio.wait(waiting)  # not gather: a cancelled waiter must not cancel them for all
        for future in waiting:
            future.result()


def _retrieved(future: "asyncio.Future[None]") -> None:
    if not future.cancelled():
        future.exception()
