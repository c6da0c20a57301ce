"""The rating systems' registries, one per layer, name the same systems: those RATING_SYSTEM
takes. A system added to one layer and forgotten in another fails here, not in a deployment."""

from typing import get_args

from worker.embedded.traffic_by_name import SIMULATIONS
from worker.engine.contracts import CONTRACTS
from worker.rules.by_name import RULES
from worker.rules.period_interface import periodic
from worker.settings import SYSTEM_NAMES, System
from worker.store.state_codec import CODECS


def test_every_layer_knows_the_same_systems() -> None:
    systems = set(get_args(System))
    assert systems == {"arena", "uscf-cc", "glicko2", "fide", "tornelo"}
    for registry in (RULES, CONTRACTS, CODECS, SIMULATIONS, SYSTEM_NAMES):
        assert set(registry) == systems, registry
    for name, rules in RULES.items():
        assert rules.name == name
        assert CODECS[name].unseen == rules.unseen
        assert CONTRACTS[name].version == (1 if name == "arena" else 2)  # the contract's table


def test_the_per_period_systems_are_fide_and_tornelo_and_the_others_rate_game_by_game() -> None:
    assert {name for name, rules in RULES.items() if periodic(rules)} == {"fide", "tornelo"}
