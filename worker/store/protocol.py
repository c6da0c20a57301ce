"""What the engine's callers need from a store of rating states, whatever holds them.

Two protocols, each implemented by Redis (`worker.store.redis_store`, the streaming worker's)
and by memory (`worker.replay.memory_store`, the offline replay's and the rebuild's), and held to one
contract test suite (tests/integration/store/test_contract.py):

- `StateStore`: read a batch's states and idempotency records into a `Snapshot`; apply a batch
  of `Write`s, each all or nothing, checked against the seq (version) of every state it read
  and against the absence of its game's record, a failed one tainting every rating it read so
  that no later write touching them goes ahead of it. The events a write announces go to the
  outboxes of its ratings in the same step (a transactional outbox), and the outboxes it
  touched are handed over (`Claimed`) for publication.
- `Outbox`: claim outboxes under a lease (one publisher per rating at a time), renew it before
  a send is tried again, acknowledge the events Kafka took (compare-and-pop), and wait until
  writes are replicated.

Generic over the state type: each rating system has its own state, which only needs a `seq`.
"""

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, NamedTuple, Protocol, TypeVar

from worker.rules.period_interface import Calendar


class Versioned(Protocol):
    """A state: every change raises its seq by one, so an unchanged seq is an unchanged state."""

    @property
    def seq(self) -> int: ...


S = TypeVar("S", bound=Versioned)
S_co = TypeVar("S_co", bound=Versioned, covariant=True)


@dataclass(frozen=True, slots=True)
class Snapshot(Generic[S]):
    """What a batch read: states (the system's unseen state when absent), outbox lengths, game
    records (facts digests), and, for a per-period system, its calendar (what is closed; None
    for the others) and the calendar's version (`calendar_version`: how many marks it has had),
    which the apply checks like a state's seq."""

    states: dict[str, S]
    unconfirmed: dict[str, int]
    records: dict[str, bytes]
    calendar: Calendar = None
    calendar_version: int | None = None


class Effect(Protocol[S_co]):
    """What a write does to one rating: its new state, and the event that announces it (the
    engine's `Update` is one; `StateWrite` another)."""

    @property
    def key(self) -> str: ...  # the rating

    @property
    def state(self) -> S_co: ...

    @property
    def payload(self) -> bytes: ...  # the event, encoded


class StateWrite(NamedTuple, Generic[S]):
    """An `Effect` made by hand (tests, benchmarks, commands that write without the engine)."""

    key: str
    state: S
    payload: bytes


class Write(NamedTuple, Generic[S]):
    """One item of an atomic apply: a game (or a seeding row, with no game id) and its effects.
    (A named tuple: one is made per game, and a tuple is made fastest.)"""

    game_id: str  # "" for a seeding row: nothing to record
    digest: bytes
    reads: tuple[tuple[str, int], ...]  # (rating, seq read)
    writes: Sequence[Effect[S]]
    # Each write's rating's state before it (as the item was computed over), where known: a
    # per-period system's store then adds the rating only to the indexes of the periods the
    # write adds to its `pending` (the others hold it already); () adds it to every one.
    before: Sequence[S] = ()


@dataclass(frozen=True, slots=True)
class Claimed:
    """Outboxes whose lease this process now holds (events in seq order), and those it could not claim."""

    outboxes: dict[str, list[bytes]]
    blocked: list[str]


@dataclass(frozen=True, slots=True)
class Watermark:
    """Raise `topic`/`partition`'s watermark to `offset` with the apply that completes a batch."""

    topic: str
    partition: int
    offset: int  # the next offset: every record below it is done


class StateStore(Protocol[S]):
    async def read(self, ratings: Sequence[str], game_ids: Sequence[str], periods: Sequence[str] = ()) -> Snapshot[S]:
        """The states of `ratings` (unseen when absent), their outboxes' lengths, the records of
        `game_ids`; a per-period system's calendar, as far as the batch needs it: whole when kept
        as one value, else the marks of `periods` and of the periods the states hold entries of."""
        ...

    async def apply(
        self,
        items: Sequence[Write[S]],
        flush: Iterable[str] = (),
        marks: Sequence[Watermark] = (),
        calendar_version: int | None = None,
    ) -> tuple[list[bool], Claimed]:
        """Apply what still checks out, in order (which items applied); raise `marks` if every
        item applied; claim the outboxes the applied items touched, and those of `flush`. With
        `calendar_version` (the snapshot's, a per-period system's), nothing applies if a period
        was marked closed since: the items were computed with a calendar that no longer holds. A
        per-period system's written states enter the index of each period they hold games of."""
        ...

    async def watermarks(self, topic: str) -> dict[int, int]:
        """`topic`'s partitions' watermarks: every record below is applied, recorded or dead-lettered."""
        ...


class Outbox(Protocol):
    async def claim(self, ratings: Iterable[str]) -> Claimed:
        """Claim the outboxes of `ratings` that hold events and no other process's lease."""
        ...

    async def ack(
        self, sent: dict[str, bytes], keep: Collection[str] = (), hold: Mapping[str, float] | None = None
    ) -> list[str]:
        """Drop each sent event from the head of its outbox if our lease holds; release the
        lease (renew it for `keep`; keep it `hold[rating]` seconds more for `hold`); return the
        ratings whose lease was lost."""
        ...

    async def renew(self, ratings: Collection[str]) -> list[str]:
        """Renew the leases of `ratings` still ours; return those that are not."""
        ...

    async def replicated(self) -> None:
        """Return once every write so far is as durable as the store promises (replicas)."""
        ...


class Store(StateStore[S], Outbox, Protocol[S]):
    """Both: what the pipeline drives."""
