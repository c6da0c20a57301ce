"""Glicko-2 game by game (`glicko2`, docs/systems/glicko2.md): contract v2, the platform's games."""

from schemas.rating_changed_v2 import Glicko2RatingChanged
from worker.engine.spec import Contract, SystemSpec, v2_names
from worker.systems.glicko2.codec import GLICKO2_STATES
from worker.systems.glicko2.events import encode_glicko2, read_glicko2
from worker.systems.glicko2.rules import GlickoRules, GlickoState

NAME = GlickoRules.name

SPEC: SystemSpec[GlickoState] = SystemSpec(
    name=NAME,
    rules=GlickoRules(),
    contract=Contract(2, encode_glicko2, read_glicko2),
    event_model=Glicko2RatingChanged,
    codec=GLICKO2_STATES,
    names=v2_names(NAME),
    rebuild_prefix=f"rating-{NAME}-rebuild:",
    traffic="worker.systems.glicko2.traffic:Glicko2Simulation",
)
