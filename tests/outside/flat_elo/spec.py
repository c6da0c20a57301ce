"""The toy system's spec: `RATING_SYSTEM=tests.outside.flat_elo.spec:SPEC`."""

from tests.outside.flat_elo.codec import CODEC
from tests.outside.flat_elo.events import FlatRatingChanged, encode, read
from tests.outside.flat_elo.rules import NAME, FlatEloRules, FlatState
from worker.engine.spec import Contract, SystemSpec, v2_names

SPEC: SystemSpec[FlatState] = SystemSpec(
    name=NAME,
    rules=FlatEloRules(),
    contract=Contract(2, encode, read),
    event_model=FlatRatingChanged,
    codec=CODEC,
    names=v2_names(NAME),
    rebuild_prefix=f"rating-{NAME}-rebuild:",
    traffic="tests.outside.flat_elo.traffic:FlatEloSimulation",
    published=False,
)
