"""Every event of every rating system (tests/support/contract_systems.py) is valid against the
exported JSON Schema of its contract version (schemas/json/, `rating-worker schemas`) and its
model, says which system made it, and reads back as `rating-worker restore` reads it: the
contract's reader gives the rating, the state, the game and its kind, and restore's changelog
of the whole stream holds exactly the states the store holds, no game half published. Each
state's Redis encoding round-trips, and is what restore compares with the stored bytes.

Of each source of a system's streams, the examples that source asks (`Source.examples`: 60, or as
many as the system's own copy of this property ran before the suite took it over)."""

import functools
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from schemas.export import SCHEMA_DIR
from schemas.rating_changed import RatingChanged
from schemas.rating_changed_v2 import RATING_CHANGED_V2
from tests.support.contract_systems import SYSTEMS, SystemParts, each_source
from tests.support.period_streams import Stream
from worker.engine.events import rating_key
from worker.operate.restore import Changelog


@functools.cache
def validator(name: str) -> Any:
    """The real validator of an exported schema, reading the schema and the events as a consumer
    does, numbers as binary floats (a `multipleOf` 0.01 refused most two-decimal ratings then:
    1052.13 is no float multiple of the float 0.01)."""
    jsonschema = pytest.importorskip("jsonschema")
    text = (Path(SCHEMA_DIR) / name).read_text(encoding="utf-8")
    return jsonschema.Draft202012Validator(json.loads(text))


def test_every_system_has_an_exported_event_schema() -> None:
    for system in SYSTEMS:
        assert (Path(SCHEMA_DIR) / system.event_schema).is_file(), system


@pytest.mark.parametrize("system", SYSTEMS, ids=str)
def test_every_event_is_valid_and_reads_back_as_restore_reads_it(system: SystemParts[Any]) -> None:
    each_source(system, True, functools.partial(valid_and_read_back, system))


def valid_and_read_back(system: SystemParts[Any], stream: Stream, data: st.DataObject) -> None:
    updates, store = system.replayer.replay(stream, data.draw(system.takes(stream)))
    schema = validator(system.event_schema)
    changelog: Changelog[Any] = Changelog(system.rules.paired_kinds)
    for update in updates:
        value = json.loads(update.payload, parse_float=Decimal)
        assert list(schema.iter_errors(json.loads(update.payload))) == [], value
        if system.contract.version == 1:
            assert "system" not in value
            RatingChanged.model_validate_json(update.payload)
        else:
            assert RATING_CHANGED_V2.validate_json(update.payload).system == system.name
        published = system.contract.read(update.payload)  # restore's reader
        event = update.event
        assert published.key == update.key == rating_key(value["player_id"], value["category"])
        assert published.state == update.state
        assert published.game_id == event.game_id
        assert published.kind == event.kind
        assert published.opponent_key == (
            None if event.opponent_id is None else rating_key(event.opponent_id, event.category)
        )
        # The state's Redis encoding: the seq first (the check-and-set scripts read it there),
        # decoded the same state, encoded again the same bytes: what restore compares.
        encoded = system.codec.encode(update.state)
        assert encoded.startswith(f"{update.state.seq}|".encode())
        assert system.codec.decode(encoded) == update.state
        assert system.codec.encode(published.state) == encoded
        changelog.add(published.key, published.state, published.game_id, published.opponent_key, published.kind, 0)
    assert changelog.latest == store.states
    assert changelog.partial_games(now_ms=0) == []
    assert changelog.set_aside == {}


@pytest.mark.parametrize("system", SYSTEMS, ids=str)
def test_the_state_of_a_rating_never_seen_round_trips_and_is_the_rules_own(system: SystemParts[Any]) -> None:
    assert system.codec.unseen == system.rules.unseen
    assert system.codec.decode(system.codec.encode(system.rules.unseen)) == system.rules.unseen
