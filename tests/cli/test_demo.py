"""`rating-worker demo` (what `./dev run` runs), piped as a script or CI would see it: it names
the broker, Redis and the logs' folder first, says the workers are joining instead of showing
no output, and leaves no temporary folder. (That the seeding is not counted as output traffic:
tests/unit/test_demo_view.py.)"""

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def leftovers() -> set[Path]:
    tmp = Path(tempfile.gettempdir())
    return {*tmp.glob("rating-demo-*"), *tmp.glob("rating-redis-*")}


def test_the_demo_piped_says_what_it_runs_and_cleans_up() -> None:
    before = leftovers()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "worker",
            "demo",
            "--players",
            "40",
            "--rate",
            "50",
            "--workers",
            "1",
            "--duration",
            "15",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    header = re.fullmatch(
        r"demo: broker 127\.0\.0\.1:\d+, redis redis://127\.0\.0\.1:\d+/0, 1 worker, 40 players "
        r"\((\d+) ratings seeded\), worker logs in (\S+) \(removed at exit\)",
        lines[0],
    )
    assert header, lines[0]
    seeded, logs = int(header[1]), Path(header[2])
    assert seeded > 0
    joining = [i for i, line in enumerate(lines) if "workers joining the consumer group" in line]
    flowing = [i for i, line in enumerate(lines) if "events/s out" in line]
    assert joining and flowing and max(joining) < min(flowing), lines
    last = re.search(r"(\d+) events, ", lines[flowing[-1]])
    assert last and int(last[1]) > 0, lines
    assert "demo: stopped; workers exited with [0]" in done.stderr
    assert not logs.exists()
    assert leftovers() <= before
