"""The README's shell commands that need no running service, run as written.

Each runs with `bash -c` in a temporary directory that holds what a fresh clone would: the
samples and `.venv` (the environment running these tests, as `./dev` makes it). Commands that
need a broker, Redis, a container engine or a cluster are left out (`NEEDS_A_SERVICE`).
"""

import filecmp
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
VENV = Path(sys.prefix)
FENCE = re.compile(r"^```(\S*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
NEEDS_A_SERVICE = re.compile(
    r"^(\./dev|docker|kubectl)\b|\bRATING_\w+=|rating-worker (run|import|restore|rebuild|switch-over|topics|demo)\b"
    r"|\bbench/|\bpytest\b"
)
SPEED = re.compile(r"rate: \d+\.\d\d s, [\d,]+ games/s")


def shell_commands(text: str) -> list[str]:
    """The commands of the `sh` blocks: continuation lines joined, comments dropped."""
    commands = []
    for lang, body in FENCE.findall(text):
        if lang not in ("sh", "bash", "shell"):
            continue
        joined = re.sub(r"\\\n\s*", "", body)
        commands += [c for line in joined.splitlines() if (c := re.sub(r"\s+#.*$", "", line).strip())]
    return commands


COMMANDS = [c for c in shell_commands(README) if not NEEDS_A_SERVICE.search(c)]


def printed_rate_output() -> list[str]:
    (block,) = [body for _, body in FENCE.findall(README) if body.startswith("rate: ")]
    lines: list[str] = block.splitlines()
    return lines


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "samples", tmp_path / "samples")
    (tmp_path / ".venv").symlink_to(VENV)
    return tmp_path


def test_the_readme_shows_the_commands_that_need_no_service() -> None:
    assert any(" rate samples/games.jsonl " in c for c in COMMANDS)
    assert any(" sample samples/games.jsonl " in c for c in COMMANDS)
    assert ".venv/bin/rating-worker schemas --check" in COMMANDS
    assert ".venv/bin/rating-worker docs --check" in COMMANDS
    assert {"./dev run", "./dev test"} <= set(shell_commands(README)) - set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c.split()[:3]))
def test_a_readme_command_runs_as_written(command: str, clone: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RATING_")}  # the defaults, as in a fresh shell
    env["PATH"] = f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    if " rate " in command:
        *lines, speed = done.stderr.decode().splitlines()
        *printed, printed_speed = printed_rate_output()
        assert lines == printed
        assert SPEED.fullmatch(speed) and SPEED.fullmatch(printed_speed), (speed, printed_speed)
    if " sample " in command:  # the bundled sample is the generator's output
        for name in ("games.jsonl", "seed.csv"):
            assert filecmp.cmp(clone / "samples" / name, REPO / "samples" / name, shallow=False), name
