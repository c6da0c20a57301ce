"""`rating-worker demo` (what `./dev run` runs), piped as a script or CI would see it: it names
its system, the broker, Redis, the logs' folder and how it stops first, then its settings as a
line a shell takes, with which `check` finds nothing fatal; says the workers are joining instead
of showing no output, and leaves no temporary folder. (That the seeding is not counted as output traffic:
tests/unit/test_demo_view.py.)"""

import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support import commands

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
        r"demo \(arena\): broker 127\.0\.0\.1:\d+, redis redis://127\.0\.0\.1:\d+/0, 1 worker, 40 players "
        r"\((\d+) ratings seeded\), worker logs in (\S+) \(removed at exit\); stops in 15 s \(or at Ctrl-C\)",
        lines[0],
    )
    assert header, lines[0]
    assert lines[1].startswith("demo: its settings, for `rating-worker check` or any command in another shell: ")
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


def test_check_with_the_settings_the_demo_prints_finds_nothing_fatal_and_prints_its_verdict_only() -> None:
    demo = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "worker",
            "demo",
            "--players",
            "20",
            "--rate",
            "20",
            "--workers",
            "1",
            "--duration",
            "60",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert demo.stdout is not None
        first, second = demo.stdout.readline(), demo.stdout.readline()
        assert first.startswith("demo (arena): ") and "stops in 60 s (or at Ctrl-C)" in first, first
        shell = second.split("in another shell: ", 1)[1]
        assert shell.startswith("export RATING_")
        given = dict(word.split("=", 1) for word in shlex.split(shell.removeprefix("export ")))
        assert set(given) == {
            "RATING_SYSTEM",
            "RATING_KAFKA_BOOTSTRAP_SERVERS",
            "RATING_REDIS_URL",
            "RATING_PARTITIONS",
        }
        env = {k: v for k, v in os.environ.items() if not k.startswith("RATING_")} | given
        done = commands.run(
            [sys.executable, "-m", "worker", "check"], env=env, capture_output=True, text=True, timeout=90, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr
        verdict = re.fullmatch(r"check: (\d+) ok, (\d+) failed, (\d+) unknown; nothing fatal\n", done.stderr)
        assert verdict, done.stderr
        lines = done.stdout.splitlines()
        assert len(lines) == sum(int(n) for n in verdict.groups())
        assert all(re.match(r"(ok|failed|unknown) +\S", line) for line in lines), lines
        assert "topic arena.game.finished.v1: 4 partitions" in done.stdout
    finally:
        demo.send_signal(signal.SIGINT)
        _, err = demo.communicate(timeout=60)
    assert demo.returncode == 0, err
    # Stopped at once after check (a fraction of a second): its worker may still be starting, and
    # then ends by the demo's SIGTERM itself, which the demo says.
    stopped = re.search(r"demo: stopped; workers exited with \[(-?\d+)\](.*); \d+ rating events", err)
    assert stopped, err
    assert stopped.groups() in {("0", ""), ("-15", ", -15: stopped while starting")}, err
