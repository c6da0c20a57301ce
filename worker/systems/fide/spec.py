"""FIDE (`fide`, docs/systems/fide.md): one change per calendar month, contract v2; served, its months
closed by `rating-worker close-period`."""

from schemas.rating_changed_periods import FideRatingChanged
from worker.engine.spec import Contract, SystemSpec, v2_names
from worker.systems.fide.codec import FIDE_CALENDAR, FIDE_STATES
from worker.systems.fide.events import encode_fide, read_fide
from worker.systems.fide.rules import FideRules, FideState

NAME = FideRules.name

SPEC: SystemSpec[FideState] = SystemSpec(
    name=NAME,
    rules=FideRules(),
    contract=Contract(2, encode_fide, read_fide),
    event_model=FideRatingChanged,
    codec=FIDE_STATES,
    names=v2_names(NAME),
    rebuild_prefix=f"rating-{NAME}-rebuild:",
    traffic="worker.systems.fide.traffic:FideSimulation",
    periodic=True,
    calendar_codec=FIDE_CALENDAR,
)
