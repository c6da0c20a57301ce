"""US Chess correspondence (`uscf-cc`, docs/systems/uscf-cc.md): contract v2, its own input topic."""

from schemas.rating_changed_v2 import CcRatingChanged
from worker.engine.spec import GAMES_TOPIC, Contract, SystemNames, SystemSpec, v2_names
from worker.systems.uscf_cc.codec import CC_STATES
from worker.systems.uscf_cc.events import encode_cc, read_cc
from worker.systems.uscf_cc.rules import CcState, UscfCcRules

NAME = UscfCcRules.name


def _not_live_games(names: SystemNames) -> list[str]:
    """It reads its own topic of correspondence games: never the platform's live games."""
    if names.topic_games != GAMES_TOPIC:
        return []
    return [
        f"RATING_TOPIC_GAMES={names.topic_games} holds the arena's live games: {NAME} reads its own topic "
        "of correspondence games, and would rate every live game as one"
    ]


SPEC: SystemSpec[CcState] = SystemSpec(
    name=NAME,
    rules=UscfCcRules(),
    contract=Contract(2, encode_cc, read_cc),
    event_model=CcRatingChanged,
    codec=CC_STATES,
    names=v2_names(NAME, f"{GAMES_TOPIC}.correspondence"),
    rebuild_prefix=f"rating-{NAME}-rebuild:",
    traffic="worker.systems.uscf_cc.traffic:CorrespondenceSimulation",
    name_check=_not_live_games,
)
