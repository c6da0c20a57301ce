"""The rating systems' registries, one per layer, name the same systems: those RATING_SYSTEM
takes. A system added to one layer and forgotten in another fails here, not in a deployment."""

from typing import get_args

from worker.embedded.simulation import SIMULATIONS
from worker.engine.contracts import CONTRACTS
from worker.rules.systems import RULES
from worker.settings import SYSTEM_NAMES, System
from worker.store.redis_store import STORES
from worker.store.state_codec import CODECS


def test_every_layer_knows_the_same_systems() -> None:
    systems = set(get_args(System))
    assert systems == {"arena", "uscf-cc", "glicko2"}
    for registry in (RULES, CONTRACTS, CODECS, STORES, SIMULATIONS):
        assert set(registry) == systems, registry
    assert systems <= set(SYSTEM_NAMES)  # which also reserves the names of the systems to come
    for name, rules in RULES.items():
        assert rules.name == name
        assert STORES[name].codec is CODECS[name]
        assert CODECS[name].unseen == rules.unseen
        assert CONTRACTS[name].version == (1 if name == "arena" else 2)  # the contract's table
