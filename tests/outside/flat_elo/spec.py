"""The toy system's spec: `RATING_SYSTEM=tests.outside.flat_elo.spec:SPEC`."""

import dataclasses

from tests.outside.flat_elo.codec import CODEC
from tests.outside.flat_elo.events import FlatRatingChanged, encode, read
from tests.outside.flat_elo.rules import NAME, FlatEloRules, FlatState
from worker.engine.spec import Contract, SystemSpec, v2_names
from worker.systems.tornelo.settings import recorded

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

# The same system recording tornelo's K and bonus factor as its parameters on a live prefix
# (`SystemSpec.parameters`), as tornelo does: `RATING_SYSTEM=tests.outside.flat_elo.spec:RECORDING`
# runs the check of the parameters through the commands (tests/integration/service/test_parameters.py).
RECORDING: SystemSpec[FlatState] = dataclasses.replace(SPEC, parameters=recorded)
