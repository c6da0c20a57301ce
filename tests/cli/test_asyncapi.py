"""docs/asyncapi.yaml: valid against the official AsyncAPI 3.0.0 JSON Schema (node, with the
@asyncapi/specs that package-lock.json pins; skipped where node is missing), a broken copy
refused, and every topic, setting, header and schema it names the code's own."""

import json
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from worker.engine.decoder import ErrorKind
from worker.operate.topics import topic_specs
from worker.settings import WorkerSettings
from worker.stream.dead_letters import ERROR_HEADERS, TRUNCATED_HEADER

REPO = Path(__file__).resolve().parents[2]
DOCUMENT = REPO / "docs/asyncapi.yaml"
VALIDATOR = REPO / "tests/support/validate_asyncapi.cjs"
REPLICATION = 3  # `rating-worker topics`' default, which the document describes


def document() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(DOCUMENT.read_text())
    return loaded


def validate(doc: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the AsyncAPI document is checked against the code only")
    assert (REPO / "node_modules/@asyncapi/specs").is_dir(), "the JavaScript test tools are missing: run ./dev test"
    return subprocess.run(
        [node, str(VALIDATOR)], input=json.dumps(doc), capture_output=True, text=True, timeout=60, check=False, cwd=REPO
    )


def test_the_document_is_valid_asyncapi_3() -> None:
    done = validate(document())
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "valid: AsyncAPI 3.0.0\n"


def test_a_broken_copy_is_refused() -> None:
    broken = document()
    broken["operations"]["consumeGames"]["action"] = "consume"  # AsyncAPI 3 says receive or send
    del broken["info"]["title"]
    done = validate(broken)
    assert done.returncode == 1
    assert "/operations/consumeGames/action must be equal to one of the allowed values" in done.stdout
    assert "/info must have required property 'title'" in done.stdout


def normalized(config: dict[str, Any]) -> dict[str, str]:
    """Topic settings as Kafka writes them (strings; a list as comma-separated)."""
    return {k: ",".join(v) if isinstance(v, list) else str(v) for k, v in config.items()}


def test_the_topics_are_those_the_worker_uses_with_the_settings_topics_gives_them() -> None:
    settings = WorkerSettings()
    specs = {s.name: s for s in topic_specs(settings, settings.partitions, REPLICATION)}
    channels = document()["channels"]
    assert {c["address"] for c in channels.values()} == set(specs)
    for channel in channels.values():
        spec, binding = specs[channel["address"]], channel["bindings"]["kafka"]
        assert (binding["partitions"], binding["replicas"]) == (spec.partitions, REPLICATION)
        assert normalized(binding["topicConfiguration"]) == spec.config


def test_the_dead_letter_headers_and_kinds_are_the_workers() -> None:
    headers = document()["components"]["messages"]["deadLetter"]["headers"]
    assert headers["required"] == list(ERROR_HEADERS)
    assert set(headers["properties"]) == {*ERROR_HEADERS, TRUNCATED_HEADER}
    assert headers["properties"]["error.kind"]["enum"] == [str(kind) for kind in ErrorKind]


def test_the_payloads_are_the_exported_schemas_and_the_version_the_packages() -> None:
    doc = document()
    messages = doc["components"]["messages"]
    refs = {m["payload"]["schema"]["$ref"] for m in messages.values() if "schema" in m["payload"]}
    assert {(DOCUMENT.parent / ref).resolve() for ref in refs} == {
        (REPO / "schemas/json/arena.game.finished.v1.schema.json").resolve(),
        (REPO / "schemas/json/arena.rating.changed.v1.schema.json").resolve(),
    }
    for ref in refs:
        exported = json.loads((DOCUMENT.parent / ref).read_text())
        assert exported["$schema"].endswith("/2020-12/schema")  # the schemaFormat the document says
    assert {m["payload"]["schemaFormat"] for m in messages.values() if "schema" in m["payload"]} == {
        "application/schema+json;version=2020-12"
    }
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert doc["info"]["version"] == version
