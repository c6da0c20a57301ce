"""The rating systems a deployment can run (`RATING_SYSTEM`), by name: their rules. The other
layers keep their part of each system under the same names: its topics, group and key prefix
(`worker.settings.SYSTEM_NAMES`), its event contract (`worker.engine.contracts.CONTRACTS`), its
state's Redis encoding (`worker.store.state_codec.CODECS`, which the one
`worker.store.redis_store.RedisStore` is given) and its traffic generator
(`worker.embedded.traffic_by_name.SIMULATIONS`); a test holds them to the same names."""

from typing import Any

from worker.rules.arena import ArenaRules
from worker.rules.fide import FideRules
from worker.rules.glicko2 import GlickoRules
from worker.rules.interface import RatingSystem
from worker.rules.tornelo import TorneloRules
from worker.rules.uscf_cc import UscfCcRules

# Each system with its default parameters (tornelo's K and bonus factor are settings:
# `worker.settings.RulesSettings.rules` gives a deployment's).
RULES: dict[str, RatingSystem[Any]] = {
    "arena": ArenaRules(),
    "uscf-cc": UscfCcRules(),
    "glicko2": GlickoRules(),
    "fide": FideRules(),
    "tornelo": TorneloRules(),
}
