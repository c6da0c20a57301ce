"""Every rating system's traffic generator, by RATING_SYSTEM (`worker.rules.by_name`): what `sample`,
the demo, the benchmarks and the tests generate for a deployment of it."""

from worker.embedded.period_traffic import FideSimulation, TorneloSimulation
from worker.embedded.traffic import ArenaSimulation, CorrespondenceSimulation, Glicko2Simulation

SIMULATIONS: dict[str, type[ArenaSimulation]] = {
    "arena": ArenaSimulation,
    "uscf-cc": CorrespondenceSimulation,
    "glicko2": Glicko2Simulation,
    "fide": FideSimulation,
    "tornelo": TorneloSimulation,
}
