"""The rating systems the contract suite (tests/unit/contract/) runs over, each with its parts.

`SYSTEMS` is the one list the suite takes its systems from: the registry's built-in systems
(`worker.systems.registry.BUILT_IN`), and one more named by `RATING_TEST_SYSTEM`
(`package.module:SPEC`, as `RATING_SYSTEM` takes it) when that variable is set: how a system
defined outside the package goes through the whole suite (tests/cli/test_outside_system.py).
`parts` gathers what the suite reads of a system from its spec.

A system's streams are drawn by hypothesis, from one or more sources, each with the number of
examples a property draws of it (`sources`, `each_source`): the project's traffic generator
(`SystemSpec.traffic`) from a drawn random seed, with redeliveries mixed
in, its seeding file parsed as `rate --seed` parses it; and those a system's own properties drew
before the suite took them over (tests/support/<system>_streams.py, `OWN_STREAMS`): for `fide`
and `tornelo` in its place (months, offsets and tournaments at their edges, imports between
games), for the others beside it (edge values, skipped games, glicko2's imports between games).
"""

import io
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from schemas.export import SCHEMA_DIR
from schemas.game_finished import GameFinished
from tests.support import arena_streams, cc_streams, fide_streams, glicko2_streams, period_streams, tornelo_streams
from tests.support.period_streams import Close, Item, Replayer, Stream
from worker.embedded.traffic import traffic
from worker.engine.engine import Engine
from worker.engine.seed_rows import parse_seed_rows
from worker.engine.spec import Contract, StateCodec, SystemNames, SystemSpec
from worker.rules.hundredths import Points
from worker.rules.interface import RatingSystem, S
from worker.systems import registry
from worker.systems.arena.traffic import ArenaSimulation

TRAINING = 1200  # RATING_TRAINING_RATING's default: the display of an unrated player
# The exported JSON Schema of each contract version's events (schemas/json/).
EVENT_SCHEMAS = {1: "arena.rating.changed.v1.schema.json", 2: "arena.rating.changed.v2.schema.json"}

Redeliveries = Callable[[dict[str, Any]], tuple[list[dict[str, Any]], list[dict[str, Any]]]]
# The examples a property draws of a source of streams, unless the source says more.
EXAMPLES = 60


@dataclass(frozen=True)
class Source:
    """One source of a system's streams (with imports between games or not), and how many examples
    each stream property draws of it: as many as the property test it was folded from ran."""

    streams: Callable[[bool], st.SearchStrategy[Stream]]
    examples: int = EXAMPLES


@dataclass(frozen=True)
class SystemParts(Generic[S]):
    """What the contract suite reads of one system."""

    spec: SystemSpec[S]
    name: str  # RATING_SYSTEM
    rules: RatingSystem[S]
    contract: Contract[S]  # its events' encoding, and the reader `restore` reads them with
    codec: StateCodec[S]  # its state's Redis encoding
    names: SystemNames  # its default topics, group and key prefix
    rebuild_prefix: str  # `rebuild`'s and `switch-over`'s default key prefix
    simulation: type[ArenaSimulation]  # its traffic generator
    sources: tuple[Source, ...]  # where its streams are drawn
    redeliveries: Redeliveries  # a game's copies that are the same game, and copies that conflict

    def __str__(self) -> str:
        return self.name  # the id of a parametrized test

    def streams(self, imports: bool) -> st.SearchStrategy[Stream]:
        """A stream of any of its sources, with imports between games or not."""
        return st.one_of(*(source.streams(imports) for source in self.sources))

    @property
    def periodic(self) -> bool:
        return self.spec.periodic

    @property
    def event_schema(self) -> dict[str, Any]:
        """The JSON Schema its events are checked against: a published system's, the exported file of its
        contract version (as a consumer reads it); another's, its event model's."""
        if self.spec.published:
            loaded: dict[str, Any] = json.loads((SCHEMA_DIR / EVENT_SCHEMAS[self.contract.version]).read_text("utf-8"))
            return loaded
        return TypeAdapter(self.spec.event_model).json_schema()

    def new_engine(self) -> Engine[S]:
        return Engine(self.spec, Points(TRAINING))

    def parse(self, value: dict[str, Any]) -> GameFinished:
        """A game's message as the system's input model reads it."""
        return self.rules.game_model.model_validate_json(json.dumps(value))

    @property
    def replayer(self) -> Replayer[S]:
        return Replayer(self.new_engine, self.parse)

    def keys(self, stream: Stream) -> list[str]:
        """The ratings a stream may touch: its seeded ones, and its players' in every category."""
        players = {
            value[side] for value in stream.items if isinstance(value, dict) for side in ("white_id", "black_id")
        }
        found = {row.key for row in stream.seeds} | {f"{p}/{c}" for p in players for c in self.rules.categories}
        return sorted(found)

    def takes(self, stream: Stream) -> st.SearchStrategy[list[frozenset[str]] | None]:
        """For each close line, the ratings the service's close takes at once (None: every close
        whole, as `rate`; and for a system without periods)."""
        keys = self.keys(stream)
        if not self.periodic or not keys:
            return st.none()
        return period_streams.takes_for(stream, keys)


def each_source(system: SystemParts[Any], imports: bool, check: Callable[[Stream, st.DataObject], None]) -> None:
    """`check` over the system's streams: of each source, as many examples as it asks."""
    for source in system.sources:

        @settings(max_examples=source.examples, deadline=None)
        @given(source.streams(imports), st.data())
        def examples(stream: Stream, data: st.DataObject) -> None:
            check(stream, data)

        examples()


def simulated(
    simulation: type[ArenaSimulation], rules: RatingSystem[Any], players: int, games: int, seed: int
) -> Stream:
    """The generator's seeding file (parsed as `rate --seed` parses it) and `games` games, some
    delivered twice; its close lines as `Close` items."""
    sim = simulation(players, seed=seed)
    seeds = parse_seed_rows("seed.csv", io.StringIO(sim.seed_csv()), rules)
    items: list[Item] = []
    for line in sim.game_lines(games, redelivery_share=0.1):
        value = json.loads(line)
        items.append(Close(value["period"]) if value.get("control") == "close" else value)
    return Stream(seeds, items)


def simulated_streams(
    simulation: type[ArenaSimulation], rules: RatingSystem[Any]
) -> Callable[[bool], st.SearchStrategy[Stream]]:
    """Streams of the generator: 2-12 players, up to 60 games, from a drawn random seed."""

    def streams(imports: bool) -> st.SearchStrategy[Stream]:  # the generator makes no imports
        return st.builds(
            partial(simulated, simulation, rules),
            players=st.integers(2, 12),
            games=st.integers(0, 60),
            seed=st.integers(0, 2**32 - 1),
        )

    return streams


def same_game(value: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A game again, as it was or with another event id (never a fact, contract "Input"); and with
    `rated` the other way, a v1 fact of every system: a conflicting copy."""
    return [dict(value), {**value, "event_id": "again"}], [{**value, "rated": not value["rated"]}]


# A system's own property tests' streams, with the examples its own copies of the suite's
# properties ran, the redeliveries they made, and whether the traffic generator's streams stay
# beside them (`fide`'s and `tornelo`'s take its place: they reach the edges of months and
# tournaments, and imports between games, that it does not).
OWN_STREAMS: dict[str, tuple[Source, Redeliveries, bool]] = {
    "arena": (Source(arena_streams.streams, 300), same_game, True),
    "uscf-cc": (Source(cc_streams.streams, 200), cc_streams.redeliveries, True),
    "glicko2": (Source(glicko2_streams.streams, 150), glicko2_streams.redeliveries, True),
    "fide": (Source(fide_streams.streams), fide_streams.redeliveries, False),
    "tornelo": (Source(tornelo_streams.streams), tornelo_streams.redeliveries, False),
}


def parts(spec: SystemSpec[Any]) -> SystemParts[Any]:
    """A system's parts, from its spec."""
    rules, simulation = spec.rules, traffic(spec)
    generated = Source(simulated_streams(simulation, rules))
    own, redeliveries, beside = OWN_STREAMS.get(spec.name, (generated, same_game, False))
    sources = (generated, own) if beside else (own,)
    return SystemParts(
        spec=spec,
        name=spec.name,
        rules=rules,
        contract=spec.contract,
        codec=spec.codec,
        names=spec.names,
        rebuild_prefix=spec.rebuild_prefix,
        simulation=simulation,
        sources=sources,
        redeliveries=redeliveries,
    )


# A system from outside the package to run the suite over besides (package.module:SPEC).
OUTSIDE = os.environ.get("RATING_TEST_SYSTEM")
# Every system the suite runs over: the one list.
SYSTEMS: list[SystemParts[Any]] = [
    parts(spec) for spec in (*registry.BUILT_IN, *([registry.spec_of(OUTSIDE)] if OUTSIDE else []))
]
