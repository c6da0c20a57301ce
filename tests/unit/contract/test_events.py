"""Every event of every rating system (tests/support/contract_systems.py) is valid against the
exported JSON Schema of its contract version (schemas/json/, `rating-worker schemas`) and its
model, says which system made it, and reads back as `rating-worker restore` reads it: the
contract's reader gives the rating, the state, the game and its kind, and restore's changelog
of the whole stream holds exactly the states the store holds, no game half published. Each
state's Redis encoding round-trips, and is what restore compares with the stored bytes; it and
the event's `state` have one field per field of the state's one declaration.

Of each source of a system's streams, the examples that source asks (`Source.examples`: 60, or as
many as the system's own copy of this property ran before the suite took it over)."""

import functools
import json
from decimal import Decimal
from pathlib import Path
from typing import Any, get_args

import pytest
from hypothesis import strategies as st

from schemas.export import SCHEMA_DIR
from schemas.rating_changed import RatingChanged
from schemas.rating_changed_v2 import RATING_CHANGED_V2, AnyRatingChangedV2
from tests.support.contract_systems import SYSTEMS, SystemParts, each_source
from tests.support.period_streams import Stream
from worker.engine.events import rating_key
from worker.operate.restore import Changelog

REPO = Path(__file__).resolve().parents[3]


@functools.cache
def validator(name: str) -> Any:
    """The real validator of a system's event schema, reading the schema and the events as a
    consumer does, numbers as binary floats (a `multipleOf` 0.01 refused most two-decimal ratings
    then: 1052.13 is no float multiple of the float 0.01)."""
    jsonschema = pytest.importorskip("jsonschema")
    (system,) = (s for s in SYSTEMS if s.name == name)
    return jsonschema.Draft202012Validator(system.event_schema)


def test_every_published_system_has_an_exported_event_schema_and_no_other_is_in_it() -> None:
    """A published system's event model is its contract version's exported schema (v2's: one
    member of the union); a system defined outside the package is in no published document."""
    asyncapi = (REPO / "docs/asyncapi.yaml").read_text(encoding="utf-8")
    v2 = (Path(SCHEMA_DIR) / "arena.rating.changed.v2.schema.json").read_text(encoding="utf-8")
    for system in SYSTEMS:
        model = system.spec.event_model
        if not system.spec.published:
            assert model not in get_args(AnyRatingChangedV2), system
            assert f'"{system.name}"' not in v2 and system.name not in asyncapi, system
        elif system.contract.version == 1:
            assert model is RatingChanged, system
        else:
            assert model in get_args(AnyRatingChangedV2), system


@pytest.mark.parametrize("system", SYSTEMS, ids=str)
def test_every_event_is_valid_and_reads_back_as_restore_reads_it(system: SystemParts[Any]) -> None:
    each_source(system, True, functools.partial(valid_and_read_back, system))


def valid_and_read_back(system: SystemParts[Any], stream: Stream, data: st.DataObject) -> None:
    updates, store = system.replayer.replay(stream, data.draw(system.takes(stream)))
    schema = validator(system.name)
    changelog: Changelog[Any] = Changelog(system.rules.paired_kinds)
    for update in updates:
        value = json.loads(update.payload, parse_float=Decimal)
        assert list(schema.iter_errors(json.loads(update.payload))) == [], value
        system.spec.event_model.model_validate_json(update.payload)
        if system.contract.version == 1:
            assert "system" not in value
        else:
            assert value["system"] == system.name
            if system.spec.published:
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
        # The state is declared once (its named tuple, in the rules): one Redis field and one event
        # field per field of it (contract v1 adds `status`, which `rating` gives); the round trips
        # above hold their values. A field added to the state and forgotten in either fails here.
        fields = type(update.state)._fields
        assert len(encoded.split(b"|")) == len(fields), encoded
        assert len(value["state"]) == len(fields) + (system.contract.version == 1), value["state"]
        changelog.add(published.key, published.state, published.game_id, published.opponent_key, published.kind, 0)
    assert changelog.latest == store.states
    assert changelog.partial_games(now_ms=0) == []
    assert changelog.set_aside == {}


@pytest.mark.parametrize("system", SYSTEMS, ids=str)
def test_the_state_of_a_rating_never_seen_round_trips_and_is_the_rules_own(system: SystemParts[Any]) -> None:
    assert system.codec.unseen == system.rules.unseen
    assert system.codec.decode(system.codec.encode(system.rules.unseen)) == system.rules.unseen
