"""A system's traffic generator, loaded from its spec (`SystemSpec.traffic`, "module:Class"):
what `sample`, the demo, the benchmarks and the tests generate for a deployment of it. Only the
command line and the embedded stack load one (the import contracts in pyproject.toml)."""

import importlib
from typing import Any

from worker.engine.spec import SystemSpec
from worker.systems.arena.traffic import ArenaSimulation


def traffic(spec: SystemSpec[Any]) -> type[ArenaSimulation]:
    """The class of `spec`'s traffic generator (each extends the arena's, the platform's games)."""
    module, _, name = spec.traffic.partition(":")
    generator = getattr(importlib.import_module(module), name)
    if not (isinstance(generator, type) and issubclass(generator, ArenaSimulation)):
        raise TypeError(f"system {spec.name}: {spec.traffic} is not a traffic generator (an ArenaSimulation)")
    return generator
