"""A rating system as the rest of the worker sees it: one `SystemSpec` per system, made in the
system's own package (`worker.systems.<name>.spec`) and listed by the registry
(`worker.systems.registry`, the one place that names every built-in system). Every layer is given
the deployment's spec (`RATING_SYSTEM`) and reads from it what differs between systems: the
rules, the event contract, the state's Redis encoding, the default names, whether it changes
ratings per period and whether it runs as a service. None looks a system up by name or branches
on one.

A spec holds no I/O: it lives beside the engine, so that every layer above can be given one.
"""

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, Protocol, TypeVar, cast

from pydantic import BaseModel

from worker.engine.events import Published, RatingEvent
from worker.rules.interface import RatingSystem, S
from worker.rules.period_interface import Calendar, PeriodSystem

T = TypeVar("T")  # a state, as the store sees it (`worker.store.protocol.Versioned`)


class StateCodec(Protocol[T]):
    """How a system's state is stored as bytes (in Redis); the encoding starts with `seq|`,
    which the scripts read to check a state's version."""

    unseen: T  # the state of a rating never seen

    def encode(self, state: T) -> bytes: ...

    def decode(self, value: bytes) -> T: ...


class CalendarCodec(Protocol):
    """How a per-period system's calendar (what is closed: `worker.rules.period_interface`) is kept
    in the store, beside the states (`worker.store.keys.PERIODS`): as one value (`partial` False,
    fide: the latest closed month, read whole by every batch), or by its marks (`partial` True,
    tornelo: the ended tournaments, which only grow; each mark's place kept in `keys.MARKED`, and a
    batch reads the marks of its own periods only: `from_marks`). Either way the one value
    (`encode`) is kept, and shown: fide's L, tornelo's tournament marked ended last."""

    @property
    def partial(self) -> bool: ...

    def encode(self, calendar: Calendar) -> bytes: ...

    # b"": the opening calendar (nothing closed); only for a calendar kept as one value.
    def decode(self, value: bytes) -> Calendar: ...

    # The calendar after `version` marks, as far as `places` shows it (each period read -> its place
    # in the order of the marks, or None: not marked): whole when `places` holds every mark.
    def from_marks(self, version: int, places: Mapping[str, int | None]) -> Calendar: ...

    # The calendar as a number that grows with each mark, for the metrics (`rating_period_latest_closed`);
    # None while nothing is closed.
    def number(self, calendar: Calendar) -> int | None: ...


# The platform's topic of finished games: every system's input but `uscf-cc`'s.
GAMES_TOPIC = "arena.game.finished.v1"


class SystemNames(NamedTuple):
    """The names a rating system's deployment uses by default (docs/operations.md, "Rating systems side by side")."""

    topic_games: str
    topic_ratings: str
    topic_dead_letters: str
    kafka_group_id: str
    redis_key_prefix: str


def v2_names(system: str, topic_games: str = GAMES_TOPIC) -> SystemNames:
    """The default names of a contract v2 system (docs/contract-v2.md): its own output and
    dead-letter topics, group and key prefix, all named after it."""
    return SystemNames(
        topic_games,
        f"arena.rating.changed.v2.{system}",
        f"{GAMES_TOPIC}.dlq.{system}",
        f"rating-worker-{system}",
        f"rating-{system}:",
    )


@dataclass(frozen=True, slots=True)
class Contract(Generic[S]):
    """A system's event contract: its version, how its events are encoded (once, for good) and
    how `restore` reads them back."""

    version: int
    encode: Callable[[RatingEvent[S]], bytes]
    read: Callable[[bytes], Published[S]]


class Reserved(NamedTuple):
    """A name of a system's own beyond its `SystemNames` (tornelo's tournament topic), which no
    other deployment may take."""

    field: str  # the SystemNames field it may not be used as: "topic_ratings", "kafka_group_id", ...
    value: str
    what: str  # how a message calls it: "tournament topic"


@dataclass(frozen=True, slots=True)
class SystemSpec(Generic[S]):
    """One rating system, everything the layers above the rules need of it."""

    name: str  # the `RATING_SYSTEM` value, in metrics labels, owner keys and v2 events' `system`
    rules: RatingSystem[S]  # with its default parameters (`configure` gives a deployment's)
    contract: Contract[S]
    # The pydantic model of its events (the schema of record): the published systems' are in the
    # exported JSON Schema of their contract version (schemas/json/), a test holds them to it.
    event_model: type[BaseModel]
    codec: StateCodec[S]
    names: SystemNames
    rebuild_prefix: str  # `rebuild`'s and `switch-over`'s default key prefix
    # "module:Class" of its traffic generator; only the command line and the embedded stack load it
    # (worker.embedded.traffic), so that no layer below them imports a generator.
    traffic: str
    periodic: bool = False  # its rules are a `PeriodSystem` (one change per period)
    published: bool = True  # part of the published contract (exported schemas, AsyncAPI)
    reserved: tuple[Reserved, ...] = ()
    # The deployment's rules from the settings' values (None: `rules` as is).
    configure: Callable[[Mapping[str, Any]], RatingSystem[S]] | None = None
    # The system's own problems with a deployment's names, one line each (uscf-cc: not the live games).
    name_check: Callable[[SystemNames], list[str]] | None = None
    # The settings a live prefix records (`worker.store.keys.PARAMETERS`), as one canonical text from
    # the settings' values (equal values, equal texts: tornelo's K and bonus factor); a command started
    # with other values stops at start. None: nothing recorded, any values taken.
    parameters: Callable[[Mapping[str, Any]], str] | None = None
    # A per-period system's: how the store keeps its calendar.
    calendar_codec: CalendarCodec | None = None
    # Its periods end by a record on a topic of their own (tornelo's tournament ends), which
    # `close-period --follow` reads; otherwise by the clock (fide's months: `close-period --due`).
    ends_by_record: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.rules, PeriodSystem) != self.periodic:
            what = "are not" if self.periodic else "are"
            raise TypeError(f"system {self.name}: periodic={self.periodic}, but its rules {what} a PeriodSystem")
        if self.periodic and self.calendar_codec is None:
            raise TypeError(f"system {self.name}: rated per period, but it has no calendar codec")
        if self.rules.name != self.name:
            raise TypeError(f"system {self.name}: its rules are named {self.rules.name}")

    @property
    def periods(self) -> PeriodSystem[S, Any] | None:
        """The per-period entry point of its rules, or None for a system that rates game by game."""
        return cast(PeriodSystem[S, Any], self.rules) if self.periodic else None

    def configured(self, values: Mapping[str, Any]) -> "SystemSpec[S]":
        """This spec with a deployment's rules (its parameters from the settings' `values`)."""
        return self if self.configure is None else self.with_rules(self.configure(values))

    def with_rules(self, rules: RatingSystem[S]) -> "SystemSpec[S]":
        """This spec with other parameters of its rules."""
        return dataclasses.replace(self, rules=rules)
