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
from worker.operate.topics import TopicSpec, topic_specs
from worker.settings import WorkerSettings
from worker.stream.dead_letters import ERROR_HEADERS, TRUNCATED_HEADER
from worker.systems.registry import BUILT_IN, BY_NAME

REPO = Path(__file__).resolve().parents[2]
DOCUMENT = REPO / "docs/asyncapi.yaml"
VALIDATOR = REPO / "tests/support/validate_asyncapi.cjs"
REPLICATION = 3  # `rating-worker topics`' default, which the document describes
# The systems of the published contract (`SystemSpec.published`: every built-in one), whose topics
# the document describes.
DESCRIBED = sorted(spec.name for spec in BUILT_IN if spec.published)


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


def specs_of(system: str) -> dict[str, TopicSpec]:
    """The topics `rating-worker topics` creates for a deployment of `system` (RATING_SYSTEM)."""
    settings = WorkerSettings(system=system)  # a System, checked by the model
    return {s.name: s for s in topic_specs(settings, settings.partitions, REPLICATION)}


def test_the_channels_are_the_topics_of_every_system() -> None:
    channels = document()["channels"]
    every = {name for system in DESCRIBED for name in specs_of(system)}
    assert sorted(c["address"] for c in channels.values()) == sorted(every)  # each once


@pytest.mark.parametrize("system", DESCRIBED)
def test_the_topics_are_those_the_worker_uses_with_the_settings_topics_gives_them(system: str) -> None:
    """Each system's three topics (tornelo's four, its tournament ends too), as `topics` makes them."""
    specs = specs_of(system)
    channels = {c["address"]: c for c in document()["channels"].values()}
    settings = WorkerSettings(system=system)
    own = [settings.topic_games, settings.topic_ratings, settings.topic_dead_letters]
    assert sorted(specs) == sorted([*own, *filter(None, [settings.tournament_topic()])])
    for name, spec in specs.items():
        binding = channels[name]["bindings"]["kafka"]
        assert (binding["partitions"], binding["replicas"]) == (spec.partitions, REPLICATION)
        assert normalized(binding["topicConfiguration"]) == spec.config


def input_schema(system: str) -> str:
    """The exported schema of the games `system` reads."""
    return f"{BY_NAME[system].rules.game_model.model_config.get('title')}.schema.json"


def schemas_of(doc: dict[str, Any], messages: list[str]) -> set[str]:
    """The exported schemas of the given messages (references `#/components/messages/NAME`)."""
    components = doc["components"]["messages"]
    payloads = [components[m.rsplit("/", 1)[-1]]["payload"] for m in messages]
    return {Path(p["schema"]["$ref"]).name for p in payloads if "schema" in p}


def received(doc: dict[str, Any], topic: str) -> set[str]:
    """The schemas of the messages an operation receives from `topic`."""
    (channel,) = [name for name, c in doc["channels"].items() if c["address"] == topic]
    refs = [
        m["$ref"].rsplit("/", 1)[-1]
        for op in doc["operations"].values()
        if op["action"] == "receive" and op["channel"]["$ref"] == f"#/channels/{channel}"
        for m in op["messages"]
    ]
    return schemas_of(doc, [doc["channels"][channel]["messages"][r]["$ref"] for r in refs])


@pytest.mark.parametrize("system", DESCRIBED)
def test_a_systems_channels_carry_its_contracts_schemas(system: str) -> None:
    """The input channel of each system carries the input schemas of the systems that read it (one
    topic, several readings: tornelo also reads `tournament_id`), the output its contract's;
    tornelo's tournament channel the end's. An operation receives each."""
    doc = document()
    settings = WorkerSettings(system=system)
    by_address = {c["address"]: c for c in doc["channels"].values()}

    def schema_of(topic: str) -> set[str]:
        return schemas_of(doc, [m["$ref"] for m in by_address[topic]["messages"].values()])

    readers = [other for other in DESCRIBED if WorkerSettings(system=other).topic_games == settings.topic_games]
    assert schema_of(settings.topic_games) == {input_schema(other) for other in readers}
    assert input_schema(system) in received(doc, settings.topic_games)
    version = BY_NAME[BY_NAME[system].rules.name].contract.version
    assert schema_of(settings.topic_ratings) == {f"arena.rating.changed.v{version}.schema.json"}
    tournaments = settings.tournament_topic()
    if tournaments is not None:
        assert schema_of(tournaments) == received(doc, tournaments) == {"arena.tournament.finished.v1.schema.json"}


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
        (REPO / "schemas/json/arena.game.finished.v1.correspondence.schema.json").resolve(),
        (REPO / "schemas/json/arena.rating.changed.v2.schema.json").resolve(),
        (REPO / "schemas/json/arena.game.finished.v1.tornelo.schema.json").resolve(),
        (REPO / "schemas/json/arena.tournament.finished.v1.schema.json").resolve(),
    }
    for ref in refs:
        exported = json.loads((DOCUMENT.parent / ref).read_text())
        assert exported["$schema"].endswith("/2020-12/schema")  # the schemaFormat the document says
    assert {m["payload"]["schemaFormat"] for m in messages.values() if "schema" in m["payload"]} == {
        "application/schema+json;version=2020-12"
    }
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert doc["info"]["version"] == version
