"""The rating systems a deployment can run (`RATING_SYSTEM`), by name: their rules. The other
layers keep their part of each system under the same names: its topics, group and key prefix
(`worker.settings.SYSTEM_NAMES`, which also reserves the names of systems not built yet), its
event contract (`worker.engine.contracts.CONTRACTS`), its state's Redis encoding and store
(`worker.store.state_codec.CODECS`, `worker.store.redis_store.STORES`) and its traffic generator
(`worker.embedded.simulation.SIMULATIONS`); a test holds them to the same names."""

from typing import Any

from worker.rules.arena import ArenaRules
from worker.rules.glicko2 import GlickoRules
from worker.rules.system import RatingSystem
from worker.rules.uscf_cc import CcRules

RULES: dict[str, RatingSystem[Any]] = {"arena": ArenaRules(), "uscf-cc": CcRules(), "glicko2": GlickoRules()}
