"""The README's shell commands that need no running service, run as written.

Each runs with `bash -c` in a temporary directory that holds what a fresh clone would: the
samples and `.venv` (the environment running these tests, as `./dev` makes it). Commands that
need a broker, Redis, a container engine or a cluster are left out (`NEEDS_A_SERVICE`).
"""

import filecmp
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.stack import Stack

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
VENV = Path(sys.prefix)
FENCE = re.compile(r"^```(\S*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
NEEDS_A_SERVICE = re.compile(
    r"^(\./dev|docker|kubectl)\b|\bRATING_\w+=|\bbench/|\bpytest\b"
    r"|rating-worker (run|import|restore|rebuild|switch-over|topics|check|demo)\b"
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


def printed_output(command: str) -> list[str]:
    """The lines of the README's `text` block that shows what `command` prints."""
    (block,) = [body for _, body in FENCE.findall(README) if body.startswith(f"{command}: ")]
    lines: list[str] = block.splitlines()
    return lines


def own_kafka_and_redis() -> list[str]:
    """The commands of the block that runs the worker against one's own Kafka and Redis."""
    (block,) = [body for _, body in FENCE.findall(README) if "export RATING_KAFKA_BOOTSTRAP_SERVERS=" in body]
    return shell_commands(f"```sh\n{block}```\n")


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
        *printed, printed_speed = printed_output("rate")
        assert lines == printed
        assert SPEED.fullmatch(speed) and SPEED.fullmatch(printed_speed), (speed, printed_speed)
    if " sample " in command:  # the bundled sample is the generator's output
        assert done.stderr.decode().splitlines() == printed_output("sample")
        for name in ("games.jsonl", "seed.csv"):
            assert filecmp.cmp(clone / "samples" / name, REPO / "samples" / name, shallow=False), name


def test_the_readme_runs_the_worker_against_ones_own_kafka_and_redis(stack: Stack, clone: Path) -> None:
    """The block as written, its addresses those of a broker and a Redis of this test: `topics`
    creates the topics, `check` finds nothing fatal, `run` consumes and stops cleanly on SIGTERM."""
    commands = own_kafka_and_redis()
    exports = dict(c.removeprefix("export ").split("=", 1) for c in commands if c.startswith("export "))
    assert set(exports) == {"RATING_KAFKA_BOOTSTRAP_SERVERS", "RATING_REDIS_URL", "RATING_SYSTEM"}
    assert [c.split()[:2] for c in commands if not c.startswith("export ")] == [
        [".venv/bin/rating-worker", "topics"],
        [".venv/bin/rating-worker", "check"],
        [".venv/bin/rating-worker", "run"],
    ]
    ours = exports | {"RATING_KAFKA_BOOTSTRAP_SERVERS": stack.broker.bootstrap, "RATING_REDIS_URL": stack.redis.url}
    env = {k: v for k, v in os.environ.items() if not k.startswith("RATING_")} | ours
    topics, check, run = (c for c in commands if not c.startswith("export "))
    for command in (topics, check):
        done = subprocess.run(
            ["bash", "-c", command], cwd=clone, env=env, capture_output=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr.decode().endswith("nothing fatal\n"), done.stderr
    log = clone / "run.log"
    with log.open("wb") as out:
        worker = subprocess.Popen(["bash", "-c", f"exec {run}"], cwd=clone, env=env, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 60
        while '"consuming ' not in log.read_text(errors="replace"):
            assert worker.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.2)
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0, log.read_text(errors="replace")
    finally:
        if worker.poll() is None:
            worker.kill()
