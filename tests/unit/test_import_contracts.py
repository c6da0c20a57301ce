"""The layers' import contracts (pyproject.toml, `[tool.importlinter]`) hold, and can fail:
a violating import planted in a copy of the package breaks the contract it violates."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).parent / "lint-imports"


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT), "--config", str(root / "pyproject.toml")],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": str(LINT.parent)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The worker and the schemas as they are, with the contracts, and an empty tests package."""
    for package in ("worker", "schemas"):
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_contracts_hold_for_the_package_as_it_is(copy: Path) -> None:
    done = lint(copy)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "7 kept, 0 broken" in done.stdout


LAYERS = "The worker's layers"


@pytest.mark.parametrize(
    ("module", "planted", "broken"),
    [
        ("worker/systems/arena/state.py", "import worker.settings", LAYERS),
        ("worker/engine/events.py", "import worker.store.protocol", LAYERS),
        ("worker/store/keys.py", "import worker.stream.retry", LAYERS),
        ("worker/stream/consumer.py", "import worker.service.health", LAYERS),
        ("worker/replay/replay.py", "import worker.stream.retry", LAYERS),  # independent layers
        ("worker/metrics.py", "import worker.engine.decoder", LAYERS),  # independent layers
        ("worker/settings.py", "import worker.docs", LAYERS),
        ("worker/metrics.py", "import worker.rules.interface", "The metrics are given their systems' values"),
        ("worker/engine/events.py", "import redis", "The rules and the engine are pure"),
        ("worker/rules/tables.py", "import asyncio", "The rules and the engine are pure"),
        ("worker/engine/engine.py", "import time", "The rules and the engine are pure"),
        ("worker/stream/consumer.py", "import worker.embedded.stack", "Only the command line"),
        ("schemas/types.py", "import tests", "No code of the worker or the schemas imports the tests"),
        # Each system's package: its parts pure, in their order, apart from the other systems.
        ("worker/systems/uscf_cc/spec.py", "import worker.stream.retry", LAYERS),
        ("worker/systems/fide/rules.py", "import random", "The rules and the engine are pure"),
        ("worker/systems/registry.py", "import os", "The rules and the engine are pure"),
        ("worker/systems/glicko2/codec.py", "import worker.systems.glicko2.spec", "A system's package, top to bottom"),
        ("worker/systems/arena/state.py", "import worker.systems.arena.rules", "A system's package, top to bottom"),
        ("worker/systems/fide/rules.py", "import worker.systems.tornelo.rules", "No system imports another"),
        ("worker/systems/registry.py", "import worker.systems.arena.traffic", "Only the command line"),
        ("worker/operate/check.py", "import worker.systems.period_traffic", "Only the command line"),
    ],
)
def test_a_planted_violating_import_breaks_its_contract(copy: Path, module: str, planted: str, broken: str) -> None:
    path = copy / module
    path.write_text(path.read_text() + f"\n{planted}  # planted by the test\n")
    done = lint(copy)
    assert done.returncode == 1, done.stdout
    assert broken in done.stdout and "BROKEN" in done.stdout


def test_a_module_in_no_layer_breaks_the_layers(copy: Path) -> None:
    """Every module of worker/ is placed in a layer: a new one must be placed before it is kept."""
    (copy / "worker" / "helpers.py").write_text('"""Planted by the test."""\n')
    done = lint(copy)
    assert done.returncode == 1, done.stdout
    assert LAYERS in done.stdout and "BROKEN" in done.stdout and "helpers" in done.stdout
