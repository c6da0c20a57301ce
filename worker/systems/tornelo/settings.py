"""`tornelo`'s own settings (docs/systems/tornelo.md, "Settings"): K per category
(`RATING_TORNELO_K`) and the bonus factor (`RATING_TORNELO_BONUS_FACTOR`), read here; the
settings (`worker.settings.RulesSettings`) declare both variables and check them with these
functions, so that a wrong value stops any command at start; `recorded` gives both in the form a
live prefix records them (`SystemSpec.parameters`). Also its names beyond the usual five: the
topic of tournament ends and the group that reads it."""

import json
from collections.abc import Mapping
from typing import Any

from worker.rules.hundredths import Hundredths, format_fixed2, parse_fixed2
from worker.systems.tornelo.rules import Parameters, TorneloRules

TOURNAMENT_TOPIC = "arena.tournament.finished.v1"
CLOSE_GROUP = f"rating-worker-{TorneloRules.name}-close"
CATEGORIES = ("rapid", "blitz", "bullet")  # `RATING_TORNELO_K`'s keys, in the order it is recorded


def tornelo_k(value: str) -> dict[str, tuple[int, int]]:
    """`RATING_TORNELO_K` read: each of the three categories to its two K; ValueError says what is wrong."""
    try:
        table = json.loads(value)
    except ValueError:
        raise ValueError(f"{value!r} is not JSON") from None
    if not isinstance(table, dict) or sorted(table) != sorted(CATEGORIES):
        raise ValueError("must be a JSON object with exactly the keys rapid, blitz and bullet")
    ks: dict[str, tuple[int, int]] = {}
    for category in CATEGORIES:
        pair = table[category]
        if not (
            isinstance(pair, list)
            and len(pair) == 2
            and all(type(k) is int and k > 0 for k in pair)  # type is: true and 1.0 are not integers here
        ):
            raise ValueError(f"{category}: {json.dumps(pair)} is not a pair of positive integers [K <= 2200, K > 2200]")
        ks[category] = (pair[0], pair[1])
    return ks


def bonus_factor(value: str) -> Hundredths:
    """`RATING_TORNELO_BONUS_FACTOR` read, in hundredths; ValueError says what is wrong."""
    try:
        return parse_fixed2(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a decimal >= 0 with at most two decimals (1.00, 0.5, 0)") from None


def configure(values: Mapping[str, Any]) -> TorneloRules:
    """A deployment's rules: the settings' K and bonus factor."""
    return TorneloRules(Parameters(tornelo_k(values["tornelo_k"]), bonus_factor(values["tornelo_bonus_factor"])))


def recorded(values: Mapping[str, Any]) -> str:
    """Both settings as a live prefix records them (docs/systems/tornelo.md, "Changing the
    parameters"), from the settings' `values`: their parsed values written again in one form, so
    that equal values give equal texts whatever their spelling (`0.5` and `0.50`; K's JSON with
    other spacing or key order): `RATING_TORNELO_K={"rapid": [20, 10], "blitz": [20, 10],
    "bullet": [10, 5]} RATING_TORNELO_BONUS_FACTOR=1.00` for the defaults."""
    ks = tornelo_k(values["tornelo_k"])
    table = json.dumps({category: list(ks[category]) for category in CATEGORIES})
    factor = format_fixed2(bonus_factor(values["tornelo_bonus_factor"]))
    return f"RATING_TORNELO_K={table} RATING_TORNELO_BONUS_FACTOR={factor}"
