"""`rebuild --memory-mb` below its minimum (16) is refused with one line naming it (status 2),
before anything is read or written; the minimum itself is taken (the command then goes on to
Redis, here unreachable: status 1 and the lines of an unreachable dependency, not of an option)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import commands
from worker.embedded.stack import free_port

SEED = str(Path(__file__).resolve().parents[2] / "samples/seed.csv")


def rebuild(memory_mb: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RATING_")}
    env |= {
        "RATING_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",  # nothing listens there
        "RATING_COMMAND_RETRY_SECONDS": "0.5",
        "RATING_LOG_LEVEL": "error",
    }
    return commands.run(
        [sys.executable, "-m", "worker", "rebuild", "--seed", SEED, "--memory-mb", memory_mb],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("memory_mb", ["0", "-1", "15", "15.9"])
def test_a_budget_under_the_minimum_is_refused_with_one_line_naming_it(memory_mb: str) -> None:
    done = rebuild(memory_mb)
    assert done.returncode == 2
    assert done.stderr.startswith(f"rating-worker: error: argument --memory-mb: {memory_mb} is below the minimum, 16")
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize("memory_mb", ["nan", "inf", "x"])
def test_a_budget_that_is_no_finite_number_is_refused_with_one_line(memory_mb: str) -> None:
    done = rebuild(memory_mb)
    assert done.returncode == 2
    assert done.stderr.startswith(f"rating-worker: error: argument --memory-mb: {memory_mb!r} is not a")
    assert done.stderr.count("\n") == 1


def test_the_minimum_is_taken() -> None:
    done = rebuild("16")
    assert done.returncode == 1, done.stderr
    assert "--memory-mb" not in done.stderr
    waiting, error = done.stderr.splitlines()  # what it waited for, then why it gave up
    assert waiting.startswith("rating-worker: Redis unreachable (RATING_REDIS_URL -> 127.0.0.1:")
    assert waiting.endswith("waiting up to 0.5 s (RATING_COMMAND_RETRY_SECONDS)")
    assert error.startswith("rating-worker: error: Redis unreachable (RATING_REDIS_URL -> ")
