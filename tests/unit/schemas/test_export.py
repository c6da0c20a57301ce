"""The exported JSON Schemas are the models' schemas: a stale file fails this test."""

import json
import shutil
from pathlib import Path

from schemas.export import MODELS, SCHEMA_DIR, check, export


def test_the_committed_schema_files_are_current() -> None:
    assert check() == [], "run: rating-worker schemas"


def test_a_stale_or_missing_schema_file_is_detected(tmp_path: Path) -> None:
    copy = tmp_path / "json"
    shutil.copytree(SCHEMA_DIR, copy)
    first, second, *_ = MODELS
    (copy / first).write_text("{}\n")
    (copy / second).unlink()
    assert check(copy) == [copy / first, copy / second]
    export(copy)
    assert check(copy) == []


def test_the_input_schema_states_the_contract_constraints() -> None:
    schema = json.loads((SCHEMA_DIR / "arena.game.finished.v1.schema.json").read_text())
    props = schema["properties"]
    assert props["game_id"]["pattern"] == "^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
    assert (props["event_id"]["minLength"], props["event_id"]["maxLength"]) == (1, 128)
    assert props["finished_at"]["format"] == "date-time"
    assert set(props["result"]["enum"]) == {"1-0", "0-1", "1/2-1/2"}
    assert set(schema["required"]) == {
        "event_id",
        "game_id",
        "finished_at",
        "rated",
        "time_control",
        "white_id",
        "black_id",
        "result",
        "termination",
    }


# docs/contract-v2.md, "The JSON Schemas": the files exported beside version 1's.
CONTRACT_V2_FILES = {
    "arena.rating.changed.v2.schema.json",
    "arena.game.finished.v1.correspondence.schema.json",
    "arena.game.finished.v1.tornelo.schema.json",
    "arena.tournament.finished.v1.schema.json",
    "close-line.fide.schema.json",
    "close-line.tornelo.schema.json",
    "seed-record.uscf-cc.schema.json",
    "seed-record.glicko2.schema.json",
    "seed-record.fide.schema.json",
    "seed-record.tornelo.schema.json",
}


CONTRACT_V1_FILES = {
    "arena.game.finished.v1.schema.json",
    "arena.rating.changed.v1.schema.json",
    "seed-record.schema.json",
}


def test_every_file_the_contract_lists_is_exported() -> None:
    assert set(MODELS) == CONTRACT_V1_FILES | CONTRACT_V2_FILES
    assert all((SCHEMA_DIR / name).is_file() for name in CONTRACT_V2_FILES)


def test_the_v2_event_schema_selects_every_systems_shape() -> None:
    schema = json.loads((SCHEMA_DIR / "arena.rating.changed.v2.schema.json").read_text())
    assert schema["discriminator"]["propertyName"] == "system"
    assert set(schema["discriminator"]["mapping"]) == {"uscf-cc", "glicko2", "fide", "tornelo"}
