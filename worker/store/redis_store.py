"""Rating states, idempotency records and outboxes in Redis, written by atomic check-and-set.

Three scripts, each one round trip for a whole batch:
- `read`: the states, outbox lengths and game records a batch needs (records: see
  `worker.store.records`; the scripts also sweep the expired ones);
- `apply`: for each game in order, checks that every state it read still has the seq it
  read (and that the game is still unrecorded), then writes its new states, appends its
  events to the outboxes and records the game, all or nothing per game; a game that fails
  the check taints every rating it read, so no later game of the batch touching them is
  applied before it (per-player order). Then it claims the publication lease of every
  outbox it touched and returns their contents, but for the events it has just appended,
  which the caller holds (not sending them back halves the bytes a batch moves);
- `ack`: removes acknowledged events from the outboxes whose lease is still ours, after each
  round of publication, so that a crash can only repeat the last event sent of a rating,
  right after its original. It removes an outbox's head only if the head is the very event
  that was sent (compare-and-pop), so an ack retried after a lost reply, or run after the
  outbox moved on, never drops an event it did not send.

With RATING_REDIS_WAIT_REPLICAS > 0, every apply **and every ack** is waited for (`WAIT`)
before anything further is published or committed: a replica promoted after a round was
sent then holds that round's acknowledgement too, so whoever flushes the outbox next never
sends an event after a newer one of its key.

The apply that completes a batch also raises the batch's input watermarks (`{prefix}w:`):
every record below them is applied, recorded or dead-lettered, so a redelivery from below
(committed offsets lost, a group renamed) is recognized even after its idempotency record
expired.

**A store that went back in time refuses work.** Each script first checks the store's
`epoch` and `writes` counters (`{prefix}store`) against the highest this process saw after
its own writes were acknowledged (and, with WAIT, replicated). Lower values mean Redis lost
acknowledged writes (a failover to a replica that lacked them, a restart from a missing or
incomplete file): the script marks the store untrusted (`{prefix}untrusted`, with the reason)
and every script of every process then refuses until `rating-worker restore` has rebuilt
the state and cleared the mark. The counters, not the primary's replication id, are the
signal: the id changes at every restart, also from a complete append-only file, while the
counters show the loss itself.

The seq of a state is its version: every write increases it by one, so an unchanged seq is
an unchanged state. Keys are built inside the scripts from the prefix, so the worker needs
a single Redis primary (standalone or Sentinel), not Redis Cluster.
"""

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Generic

import msgpack
from redis.asyncio import Redis
from redis.commands.core import AsyncScript
from redis.exceptions import ResponseError

from worker import metrics
from worker.engine.spec import CalendarCodec, StateCodec
from worker.rules.period_interface import Calendar
from worker.store import keys, scripts
from worker.store.protocol import Claimed, Effect, S, Snapshot, Watermark, Write
from worker.store.records import pack, record_hash

log = logging.getLogger(__name__)


class StoreUntrusted(Exception):
    """The store refuses work until `rating-worker restore` has run: it lost acknowledged writes."""


class ReplicasBehind(Exception):
    """Fewer replicas than RATING_REDIS_WAIT_REPLICAS hold the last write: nothing may go on yet."""


class RedisStore(Generic[S]):
    """The store in Redis, for any state type `S` (see `worker.store.protocol`): a rating system's
    states are written and read through its codec (`worker.store.state_codec`), the one thing
    that differs between systems here."""

    def __init__(
        self,
        redis: "Redis",
        prefix: str,
        token: str,
        lease_seconds: float,
        retention_seconds: int,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        *,
        codec: StateCodec[S],
        pending: Callable[[S], Sequence[str]] | None = None,
        calendar_codec: CalendarCodec | None = None,
    ) -> None:
        self.codec = codec
        # A per-period system's: which periods a state holds games of (the indexes it enters:
        # `PeriodSystem.pending`) and how its calendar is kept; each batch reads the calendar.
        self.pending = pending
        self.calendar_codec = calendar_codec
        if (pending is None) != (calendar_codec is None):
            raise TypeError("a per-period system's store needs both its rules and its calendar codec")
        self.redis = redis
        self.prefix = prefix
        self.token = token
        # How long a claim or a renewal keeps a lease: the publication lease plus the delivery
        # timeout (`worker.service.wiring.lease_seconds`; see `worker.stream.publisher`).
        self.lease_ms = int(lease_seconds * 1000)
        self.retention_ms = retention_seconds * 1000
        self.wait_replicas = wait_replicas
        self.wait_timeout_ms = wait_timeout_ms
        # The highest (epoch, writes) this process saw after its own write was acknowledged
        # (and replicated): the store may never be found below it again.
        self.known = (0, 0)
        self._unreplicated = (0, 0)  # the last apply's, until `replicated` confirms it
        self._read = redis.register_script(scripts.READ)
        self._apply = redis.register_script(scripts.APPLY)
        self._ack = redis.register_script(scripts.ACK)
        self._renew = redis.register_script(scripts.RENEW)
        self._mark = redis.register_script(scripts.MARK)
        self._finish = redis.register_script(scripts.FINISH)

    async def read(self, ratings: Sequence[str], game_ids: Sequence[str], periods: Sequence[str] = ()) -> Snapshot[S]:
        codec = self.calendar_codec
        partial = codec is not None and codec.partial
        wanted = sorted(set(periods)) if partial else []
        with metrics.REDIS_SECONDS.labels("read").time():
            packed = await self._run(
                self._read,
                pack(ratings),
                pack(game_ids),
                pack([record_hash(g) for g in game_ids]),
                int(time.time()),
                int(self.pending is not None),
                pack(wanted),
            )
        reply = msgpack.unpackb(packed, raw=True)  # a missing key is `false`
        states: dict[str, S] = {}
        unconfirmed = {}
        for n, rating in enumerate(ratings):
            value, pending = reply[2 * n], reply[2 * n + 1]
            states[rating] = self.codec.unseen if value is False else self.codec.decode(value)
            unconfirmed[rating] = int(pending)
        records = {}
        for n, game_id in enumerate(game_ids):
            value = reply[2 * len(ratings) + n]
            if value is not False:
                records[game_id] = value
        if codec is None:
            return Snapshot(states, unconfirmed, records)
        version, calendar, *found = reply[2 * len(ratings) + len(game_ids) :]
        if not partial:
            return Snapshot(states, unconfirmed, records, codec.decode(calendar), version)
        return Snapshot(states, unconfirmed, records, await self._marks(version, wanted, found, states), version)

    async def _marks(self, version: int, wanted: list[str], found: list[Any], states: dict[str, S]) -> Calendar:
        """A calendar kept by its marks, as far as a batch needs it: the marks of the periods asked
        for (read by the script) and of those its states hold entries of (read here, when they were
        not asked for: a player's other open tournaments). Read after the script, a mark may be
        newer than `version`: the calendar of `version` leaves it out, and the apply, checked
        against `version`, fails and the batch is computed again."""
        assert self.pending is not None and self.calendar_codec is not None
        places: dict[str, int | None] = {}
        for period, place in zip(wanted, found[0] if found else (), strict=True):
            places[period] = None if place is False else int(place)
        held = sorted({p for state in states.values() for p in self.pending(state)}.difference(places))
        if held:
            more = await self.redis.hmget(keys.marked_key(self.prefix), held)
            places.update(
                (period, None if place is None else int(place)) for period, place in zip(held, more, strict=True)
            )
        return self.calendar_codec.from_marks(version, places)

    async def apply(
        self,
        items: Sequence[Write[S]],
        flush: Iterable[str] = (),
        marks: Sequence[Watermark] = (),
        calendar_version: int | None = None,
    ) -> tuple[list[bool], Claimed]:
        """Apply what still checks out, in order; claim the touched outboxes (and `flush`).

        `marks` are raised only if every item applies: they are the batch's, and an item that
        does not apply is recomputed and applied by a later call, which carries them again.
        With `calendar_version`, no item applies if the calendar has had another mark since.
        """
        encode, held = self.codec.encode, self.pending
        effects: list[list[tuple[Any, ...]]]
        if held is None:
            effects = [[(w.key, encode(w.state), w.payload) for w in i.writes] for i in items]
        else:
            effects = [
                [(w.key, encode(w.state), w.payload, _added(held, w, i, n)) for n, w in enumerate(i.writes)]
                for i in items
            ]
        packed = pack(
            [
                (
                    i.game_id,
                    i.digest,
                    [x for read in i.reads for x in read],
                    written,
                    record_hash(i.game_id) if i.game_id else b"",
                )
                for i, written in zip(items, effects, strict=True)
            ]
        )
        flat_marks = [x for m in marks for x in (m.topic, m.partition, m.offset)]
        with metrics.REDIS_SECONDS.labels("apply").time():
            results, claimed, blocked, epoch, writes = await self._run(
                self._apply,
                self.lease_ms,
                self.retention_ms,
                packed,
                pack(list(flush)),
                pack(flat_marks),
                int(time.time()),
                -1 if calendar_version is None else calendar_version,
            )
        self._unreplicated = (int(epoch), int(writes))
        if self.wait_replicas == 0:
            self.known = max(self.known, self._unreplicated)
        applied = [r == 1 for r in results]
        # The script returns the events older than this call's; ours follow them, in item order.
        ours: dict[str, list[bytes]] = defaultdict(list)
        for item, ok in zip(items, applied, strict=True):
            if ok:
                for w in item.writes:
                    ours[w.key].append(w.payload)
        return applied, _claimed(claimed, blocked, ours)

    async def claim(self, ratings: Iterable[str]) -> Claimed:
        return (await self.apply((), ratings))[1]

    async def ack(
        self, sent: dict[str, bytes], keep: Collection[str] = (), hold: Mapping[str, float] | None = None
    ) -> list[str]:
        """Drop the event Kafka acknowledged from the head of each outbox, if our lease holds.

        Only an outbox whose head is still that event loses it: an ack that is retried
        (its first reply lost) or that comes after the outbox changed hands drops nothing
        else. Events carry their seq, so no two events of one outbox are equal. The lease
        is released, except for the ratings in `keep` (more of their events are still to
        be sent), whose lease is renewed instead, and those in `hold` (a send of theirs had an
        unknown outcome), whose lease is kept that many seconds more, neither released nor
        renewed. Returns the ratings whose lease
        was lost (it expired, during an outage): their events stay for the next holder.
        With RATING_REDIS_WAIT_REPLICAS > 0 the caller waits for `replicated` before the next
        round, so that it is never sent while a replica still holds this one.
        """
        if not sent:
            return []
        held = hold or {}
        flat = [x for rating, payload in sent.items() for x in (rating, payload, self._lease_after(rating, keep, held))]
        with metrics.REDIS_SECONDS.labels("ack").time():
            lost = await self._run(self._ack, pack(flat))
        return [r.decode() for r in lost]

    def _lease_after(self, rating: str, keep: Collection[str], hold: Mapping[str, float]) -> int:
        """The ms a rating's lease is kept after an ack (0: released)."""
        if rating in hold:
            return max(1, int(hold[rating] * 1000))
        return self.lease_ms if rating in keep else 0

    async def renew(self, ratings: Collection[str]) -> list[str]:
        """Renew the leases of `ratings` that are still ours (before a send is tried again);
        return those that are not (their events wait for whoever holds the lease)."""
        if not ratings:
            return []
        lost = await self._run(self._renew, pack(list(ratings)), self.lease_ms)
        return [r.decode() for r in lost]

    async def check(self) -> bool:
        """Run the store's guard alone (the health check's Redis ping): False once the store
        refuses work. It also keeps this process's `seen` key alive while it idles. Not timed in
        `rating_redis_seconds`, which is the batches' latency."""
        try:
            await self._run(self._read, pack([]), pack([]), pack([]), int(time.time()))
        except StoreUntrusted as e:
            metrics.STORE_UNTRUSTED.set(1)
            log.error("the Redis store is not trusted: %s; run `rating-worker restore`", e)
            return False
        return True

    async def watermarks(self, topic: str) -> dict[int, int]:
        """The input partitions' watermarks: every record below is applied, recorded or dead-lettered."""
        stored = await self.redis.hgetall(keys.watermark_key(self.prefix, topic))
        return {int(p): int(o) for p, o in stored.items()}

    async def mark(self, version: int, calendar: Calendar, period: str) -> int:
        """Mark `period` closed (the calendar becomes `calendar`) if the calendar is still at
        `version` and no close is in progress: 1; -1 a close is in progress; 0 the calendar moved."""
        codec = self.calendar_codec
        assert codec is not None, "not a per-period system's store"
        return int(await self._run(self._mark, version, codec.encode(calendar), period, int(codec.partial)))

    async def finish(self, period: str) -> int:
        """The close in progress of `period` finished if its index is empty: 1; -1 its index still
        holds ratings; 0 it is not the close in progress."""
        return int(await self._run(self._finish, period, int(time.time())))

    async def _run(self, script: "AsyncScript", *args: Any) -> Any:
        """Run a script behind the store's guard: a store that went back in time raises StoreUntrusted."""
        epoch, writes = self.known
        try:
            return await script(args=[self.prefix, self.token, epoch, writes, *args])
        except ResponseError as e:
            message = str(e)
            if message.startswith("UNTRUSTED "):
                raise StoreUntrusted(message.removeprefix("UNTRUSTED ")) from None
            raise

    async def replicated(self) -> None:
        """With RATING_REDIS_WAIT_REPLICAS > 0, return once that many replicas hold every write
        made so far, or raise ReplicasBehind (the caller retries it, never the write itself):
        nothing is published or committed before. Call it after each apply, claim and ack.

        `WAIT` counts the replicas that hold the last write of *its own connection*, and the
        script may have run on another pooled connection (or on one that was since
        reconnected), so each WAIT follows a small write of its own on the same connection
        (`syncs`): replicas that hold it hold everything written before it.
        """
        # Only the applies made before this call: another task's apply during the WAIT is not covered.
        applied = self._unreplicated
        if self.wait_replicas > 0:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.hincrby(keys.store_key(self.prefix), "syncs", 1)
                pipe.wait(self.wait_replicas, self.wait_timeout_ms)
                _, acknowledged = await pipe.execute()
            if int(acknowledged) < self.wait_replicas:
                raise ReplicasBehind(
                    f"{acknowledged} of RATING_REDIS_WAIT_REPLICAS={self.wait_replicas} replicas acknowledged "
                    f"a write within {self.wait_timeout_ms} ms"
                )
        self.known = max(self.known, applied)


def _claimed(claimed: list[Any], blocked: list[bytes], ours: dict[str, list[bytes]]) -> Claimed:
    outboxes = {}
    for i in range(0, len(claimed), 2):
        rating = claimed[i].decode()
        outboxes[rating] = [*claimed[i + 1], *ours.get(rating, ())]
    return Claimed(outboxes, [b.decode() for b in blocked])


def _added(held: Callable[[S], Sequence[str]], effect: Effect[S], item: Write[S], n: int) -> list[str]:
    """The periods whose index `effect`'s rating enters: those its state holds games of and the
    state before it (when the item knows it) did not; a rating stays in an index until its close."""
    periods = held(effect.state)
    if not item.before or not periods:
        return list(periods)
    had = held(item.before[n])
    return [p for p in periods if p not in had]
