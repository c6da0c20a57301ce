"""A batch's way through the store: read once, compute in order, apply atomically, publish.

Retries until every item is applied (or found to be a duplicate) and every outbox it
touched is acknowledged by Kafka. Only then may the caller commit the batch's offsets.
"""

import asyncio
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic

from worker.engine.engine import Engine
from worker.engine.schedule import Item, Planned, read_and_plan, unapplied
from worker.rules.system import S
from worker.store.protocol import Claimed, Store, Watermark
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


class Pipeline(Generic[S]):
    def __init__(self, engine: Engine[S], store: Store[S], publisher: Publisher) -> None:
        self.engine = engine
        self.store = store
        self.publisher = publisher

    async def run(self, items: Sequence[Item], marks: Sequence[Watermark] = ()) -> tuple[list[Planned[S]], BatchStats]:
        """Apply `items` in order; return each item's final plan (what was decided for it).

        1. Read every state and idempotency record the pending items need (one script call).
        2. Plan them in order with the engine, each seeing what the earlier ones produced.
        3. Apply the plans (one script call): each is checked against the seqs it read and
           the absence of its record; the call that applies every pending item also raises
           the batch's watermarks (`marks`).
        4. Publish what the call claimed, round by round (`_publish`).
        5. Items that did not apply are read and planned again (back to 1), and with them
           every later copy of the same game: a copy's verdict (duplicate or conflict) was
           decided against the earlier copy's plan, which no longer holds.
        6. Outboxes another process was flushing are waited for and flushed.
        """
        stats = BatchStats()
        if not items:  # a batch of bad records alone: its watermarks are raised all the same
            if marks:
                await retrying(REDIS_APPLY, self.store.apply, (), (), marks)
                await retrying(REDIS_WAIT, self.store.replicated)
            return [], stats
        final: list[Planned[S] | None] = [None] * len(items)
        pending = list(range(len(items)))
        blocked: set[str] = set()
        while pending:
            stats.attempts += 1
            ratings, snapshot, planned = await read_and_plan(
                self.engine, [items[i] for i in pending], lambda r, g: retrying(REDIS_READ, self.store.read, r, g)
            )
            writes = [p.write for p in planned if p.write is not None]
            # Unconfirmed events of any rating the batch read are flushed with it: a duplicate
            # game, an unchanged seed row or a crash before publication leaves no event behind.
            flush = [r for r in ratings if snapshot.unconfirmed.get(r)]
            applied, claimed = await retrying(REDIS_APPLY, self.store.apply, writes, flush, marks)
            await retrying(REDIS_WAIT, self.store.replicated)
            retry = unapplied(pending, planned, applied, final)
            sent, lost = await self._publish(claimed)
            stats.events_sent += sent
            blocked = (blocked | set(claimed.blocked) | lost) - (set(claimed.outboxes) - lost)
            if retry:
                stats.conflicts += len(retry)
                log.debug("%d of %d items changed under us; recomputing them", len(retry), len(pending))
                await asyncio.sleep(random.uniform(0, 0.005))  # de-synchronise competing replicas
            pending = retry
        delay = BLOCKED_FIRST_DELAY
        while blocked:
            await asyncio.sleep(delay)
            delay = min(delay * 2, BLOCKED_MAX_DELAY)
            claimed = await retrying(REDIS_CLAIM, self.store.claim, sorted(blocked))
            await retrying(REDIS_WAIT, self.store.replicated)
            sent, lost = await self._publish(claimed)
            stats.events_sent += sent
            blocked = set(claimed.blocked) | lost
        return [p for p in final if p is not None], stats

    async def _publish(self, claimed: Claimed) -> tuple[int, set[str]]:
        """Send the claimed outboxes in rounds; after each, drop what Kafka acknowledged.

        Round r holds the r-th event of every outbox, so event n+1 of a rating goes out only
        after n is acknowledged; dropping each round at once means a crash can repeat only
        the last event sent of a rating, and only right after its original. A rating whose
        lease was lost meanwhile (an outage longer than the lease) is sent no further: its
        events wait for whoever holds the lease next, who re-sends the last one first.
        Returns the events sent and the ratings whose lease was lost.
        """
        outboxes = dict(claimed.outboxes)
        lost: set[str] = set()
        sent = 0
        r = 0
        while outboxes:
            heads = {rating: events[r] for rating, events in outboxes.items()}
            await self.publisher.send([(rating.encode(), payload) for rating, payload in heads.items()])
            sent += len(heads)
            more = {rating for rating in heads if len(outboxes[rating]) > r + 1}
            gone = set(await retrying(REDIS_ACK, self.store.ack, heads, more))
            await retrying(REDIS_WAIT, self.store.replicated)  # before the next round goes out
            lost |= gone
            outboxes = {rating: events for rating, events in outboxes.items() if rating in more and rating not in gone}
            r += 1
        return sent, lost
