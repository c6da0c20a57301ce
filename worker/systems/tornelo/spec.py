"""Tornelo (`tornelo`, docs/systems/tornelo.md): one change per tournament, contract v2; served, its
tournaments closed by `rating-worker close-period --follow` as their end records are read. Its K and
bonus factor are settings (`worker.systems.tornelo.settings`)."""

from schemas.rating_changed_periods import TorneloRatingChanged
from worker.engine.spec import Contract, Reserved, SystemSpec, v2_names
from worker.systems.tornelo.codec import TORNELO_CALENDAR, TORNELO_STATES
from worker.systems.tornelo.events import encode_tornelo, read_tornelo
from worker.systems.tornelo.rules import TorneloRules, TorneloState
from worker.systems.tornelo.settings import CLOSE_GROUP, TOURNAMENT_TOPIC, configure, recorded

NAME = TorneloRules.name

SPEC: SystemSpec[TorneloState] = SystemSpec(
    name=NAME,
    rules=TorneloRules(),
    contract=Contract(2, encode_tornelo, read_tornelo),
    event_model=TorneloRatingChanged,
    codec=TORNELO_STATES,
    names=v2_names(NAME),
    rebuild_prefix=f"rating-{NAME}-rebuild:",
    traffic="worker.systems.tornelo.traffic:TorneloSimulation",
    periodic=True,
    calendar_codec=TORNELO_CALENDAR,
    ends_by_record=True,
    # Its tournament ends' topic and the group that reads them: no other deployment may take them.
    reserved=(
        Reserved("topic_ratings", TOURNAMENT_TOPIC, "tournament topic"),
        Reserved("topic_dead_letters", TOURNAMENT_TOPIC, "tournament topic"),
        Reserved("kafka_group_id", CLOSE_GROUP, "close group"),
    ),
    configure=configure,
    # Its K and bonus factor, recorded on a live prefix: ratings of other values never mix.
    parameters=recorded,
)
