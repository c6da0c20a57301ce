"""The arena: its own rules, game by game, on FIDE's tables (docs/systems/arena.md); contract v1,
whose names and bytes never change."""

from schemas.rating_changed import RatingChanged
from worker.engine.spec import GAMES_TOPIC, Contract, SystemNames, SystemSpec
from worker.systems.arena.codec import RATING_STATES
from worker.systems.arena.events import encode, read_v1
from worker.systems.arena.rules import ArenaRules
from worker.systems.arena.state import RatingState

SPEC: SystemSpec[RatingState] = SystemSpec(
    name=ArenaRules.name,
    rules=ArenaRules(),
    contract=Contract(1, encode, read_v1),
    event_model=RatingChanged,
    codec=RATING_STATES,
    # Contract v1's names, from before systems had names.
    names=SystemNames(GAMES_TOPIC, "arena.rating.changed.v1", f"{GAMES_TOPIC}.dlq", "rating-worker", "rating:"),
    rebuild_prefix="rating-rebuild:",
    traffic="worker.systems.arena.traffic:ArenaSimulation",
)
