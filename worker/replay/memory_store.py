"""The store in memory: the offline replay's and the rebuild's, and the pipeline's in unit tests.

The same protocols as Redis (`worker.store.protocol`), with the same semantics, held to the
same contract tests: check-and-set over each read state's seq and the absence of the game's
record, taint, outboxes under leases with compare-and-pop acknowledgements, watermarks. A
`MemoryBackend` is what a Redis server holds; each `MemoryStore` on it is one process's client
(its own token), so that tests can run several "processes" on one backend. Time is passed in
(`clock`), for lease expiry.

Memory grows with the number of ratings and of distinct games only. A game is remembered by a
16-byte digest of its id (a collision among 10^9 games has probability ~10^-21) mapped to its
8-byte facts digest, packed as Python ints, which are smaller than bytes objects. The offline
replay keeps no outboxes (`keep_outboxes=False`): it writes each game's events as it goes.

For a per-period system it also holds what the service will keep beside the states: the
calendar (what is closed, the snapshot's), the index of the ratings with recorded games in
each period (`index`, kept by `apply` from each written state's pending periods: a rating is
added when it records a game of a period, and the period's set is dropped by whoever finishes
its close; a rating closed meanwhile by its next game stays listed, and its close then finds
nothing left to close), and the period whose close is in progress (`closing`; see
`worker.replay.closes`).
"""

import hashlib
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Generic

from worker.engine.engine import RESTORED
from worker.rules.period_interface import Calendar
from worker.store.protocol import Claimed, S, Snapshot, Watermark, Write

_RESTORED = -1  # a game recorded without its facts (engine.RESTORED)


def _game_key(game_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(game_id.encode(), digest_size=16).digest())


def _digest(recorded: int) -> bytes:
    return RESTORED if recorded == _RESTORED else recorded.to_bytes(8)


def _packed(digest: bytes) -> int:
    """A facts digest as kept in memory (the inverse of `_digest`)."""
    return _RESTORED if digest == RESTORED else int.from_bytes(digest)


class MemoryBackend(Generic[S]):
    """What the store holds: states, game records, outboxes, leases, watermarks."""

    def __init__(
        self,
        unseen: S,
        clock: Callable[[], float] = time.monotonic,
        keep_outboxes: bool = True,
        calendar: Calendar = None,
        pending: Callable[[S], Iterable[str]] | None = None,
    ) -> None:
        self.unseen = unseen
        self.clock = clock
        self.keep_outboxes = keep_outboxes
        self.calendar = calendar  # a per-period system's: what is closed
        self.calendar_version = 0  # how many marks the calendar has had (`mark` raises it)
        self.pending = pending  # a per-period system's: the periods a state has recorded games of
        self.index: dict[str, set[str]] = {}  # period -> the ratings with recorded games of it
        self.closing: str | None = None  # a per-period system's period marked whose close is not finished
        self.states: dict[str, S] = {}
        self.games: dict[int, int] = {}
        self.outboxes: dict[str, list[bytes]] = {}
        self.leases: dict[str, tuple[str, float]] = {}  # rating -> (token, expires at)
        self.marks: dict[tuple[str, int], int] = {}

    def mark(self, calendar: Calendar) -> None:
        """The calendar once a period is marked closed: a batch computed with the one before
        applies nothing (as in Redis)."""
        self.calendar = calendar
        self.calendar_version += 1

    def state(self, rating: str) -> S:
        """A rating's state (the unseen state if it has none)."""
        return self.states.get(rating, self.unseen)

    def record(self, game_id: str) -> bytes | None:
        """The game's idempotency record (its facts digest), if it was applied or skipped."""
        recorded = self.games.get(_game_key(game_id))
        return None if recorded is None else _digest(recorded)

    def remember(self, game_id: str, digest: bytes) -> None:
        """Record a game as done elsewhere (its facts digest, or `RESTORED` for unknown facts)."""
        self.games[_game_key(game_id)] = _packed(digest)

    def holder(self, rating: str) -> str | None:
        lease = self.leases.get(rating)
        if lease is None or lease[1] <= self.clock():
            return None
        return lease[0]


class MemoryStore(Generic[S]):
    """One process's client of a `MemoryBackend` (see `worker.store.protocol`)."""

    def __init__(self, backend: MemoryBackend[S], token: str = "memory", lease_seconds: float = 60.0) -> None:
        self.backend = backend
        self.token = token
        self.lease_seconds = lease_seconds
        self._keys: dict[str, int] = {}  # the last read's game keys (16-byte digests of the ids)

    async def read(self, ratings: Sequence[str], game_ids: Sequence[str], periods: Sequence[str] = ()) -> Snapshot[S]:
        """(The calendar whole: `periods` asks for nothing more.)"""
        b = self.backend
        get, unseen = b.states.get, b.unseen
        states = {r: get(r, unseen) for r in ratings}
        outboxes = b.outboxes
        unconfirmed = {r: len(outboxes[r]) if r in outboxes else 0 for r in ratings}
        records = {}
        games = b.games
        self._keys = keyed = {game_id: _game_key(game_id) for game_id in game_ids}  # for the apply that follows
        for game_id, game_key in keyed.items():
            recorded = games.get(game_key)
            if recorded is not None:
                records[game_id] = _digest(recorded)
        version = None if b.pending is None else b.calendar_version
        return Snapshot(states, unconfirmed, records, b.calendar, version)

    async def apply(
        self,
        items: Sequence[Write[S]],
        flush: Iterable[str] = (),
        marks: Sequence[Watermark] = (),
        calendar_version: int | None = None,
    ) -> tuple[list[bool], Claimed]:
        b = self.backend
        moved = calendar_version is not None and calendar_version != b.calendar_version
        states, games, unseen, keep, pending, index = b.states, b.games, b.unseen, b.keep_outboxes, b.pending, b.index
        keyed = self._keys
        tainted: set[str] = set()
        touched: dict[str, None] = {}  # in the order first touched
        results = []
        for item in items:
            ok = not moved  # a period was marked closed since the items were computed
            for r, seq in item.reads:
                if r in tainted or states.get(r, unseen).seq != seq:
                    ok = False
                    break
            game_id = item.game_id
            game_key = (keyed.get(game_id) or _game_key(game_id)) if game_id else None
            if ok and game_key is not None and game_key in games:
                ok = False
            if not ok:
                tainted.update(r for r, _ in item.reads)
                results.append(False)
                continue
            for w in item.writes:
                states[w.key] = w.state
                if pending is not None:
                    for period in pending(w.state):
                        if period in index:
                            index[period].add(w.key)
                        else:
                            index[period] = {w.key}
                if keep:
                    b.outboxes.setdefault(w.key, []).append(w.payload)
                    touched[w.key] = None
            if game_key is not None:
                games[game_key] = _packed(item.digest)
            results.append(True)
        if all(results):
            for mark in marks:
                where = (mark.topic, mark.partition)
                b.marks[where] = max(b.marks.get(where, 0), mark.offset)
        for rating in flush:
            touched[rating] = None
        return results, await self.claim(touched)

    async def claim(self, ratings: Iterable[str]) -> Claimed:
        b = self.backend
        claimed: dict[str, list[bytes]] = {}
        blocked = []
        for rating in ratings:
            outbox = b.outboxes.get(rating)
            if not outbox:
                continue
            if b.holder(rating) in (None, self.token):
                b.leases[rating] = (self.token, b.clock() + self.lease_seconds)
                claimed[rating] = list(outbox)
            else:
                blocked.append(rating)
        return Claimed(claimed, blocked)

    async def ack(
        self, sent: dict[str, bytes], keep: Collection[str] = (), hold: Mapping[str, float] | None = None
    ) -> list[str]:
        b = self.backend
        lost = []
        for rating, payload in sent.items():
            if b.holder(rating) != self.token:
                lost.append(rating)
                continue
            outbox = b.outboxes.get(rating, [])
            if outbox and outbox[0] == payload:
                outbox.pop(0)
                if not outbox:
                    del b.outboxes[rating]
            if hold and rating in hold:
                b.leases[rating] = (self.token, b.clock() + hold[rating])
            elif rating in keep:
                b.leases[rating] = (self.token, b.clock() + self.lease_seconds)
            else:
                del b.leases[rating]
        return lost

    async def renew(self, ratings: Collection[str]) -> list[str]:
        b = self.backend
        lost = []
        for rating in ratings:
            if b.holder(rating) == self.token:
                b.leases[rating] = (self.token, b.clock() + self.lease_seconds)
            else:
                lost.append(rating)
        return lost

    async def replicated(self) -> None:
        """Memory has no replicas: every write is as durable as it gets at once."""

    async def watermarks(self, topic: str) -> dict[int, int]:
        found: dict[int, int] = defaultdict(int)
        for (t, partition), offset in self.backend.marks.items():
            if t == topic:
                found[partition] = offset
        return dict(found)
