"""`rating-worker demo` (what `./dev run` runs), piped as a script or CI would see it: it names
its system, the broker, Redis, the logs' folder and how it stops first, then its settings as a
line a shell takes, with which `check` finds nothing fatal; says the workers are joining instead
of showing no output, and leaves no temporary folder. (That the seeding is not counted as output traffic:
tests/unit/test_demo_view.py.) fide's demo closes its months as the service does: `close-period
--init` first, then `close-period` on each month its games have left, publishing close events.
tornelo's publishes each tournament's end once its games are acknowledged (that contract against a
real broker: tests/integration/embedded/test_tournament_feed.py), and its close follower closes
each tournament."""

import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
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


def test_the_fide_demo_closes_each_month_its_games_have_left_and_publishes_the_closes() -> None:
    """A month every 3 s: within 15 s the first months are closed, in order (each once the worker
    has applied its games: the close's drain), their ratings' close events published."""
    args = shlex.split("demo --system fide --players 30 --rate 50 --workers 1 --duration 15 --month-seconds 3")
    done = commands.run([*commands.WORKER, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("demo (fide): broker 127.0.0.1:"), lines[0]
    plan = re.match(r"demo: close-period --init (\S+) \(.*\); games from (\S+), a month every 3 s", lines[2])
    assert plan, lines[2]
    initial, first = plan.groups()
    assert next_month(initial) == first < datetime.now(UTC).strftime("%Y-%m")
    closes = [re.fullmatch(r"demo: close-period (\S+): marked (.+); (\d+) ratings closed, .*", line) for line in lines]
    closed = [(c[1], c[2].split(", "), int(c[3])) for c in closes if c]
    assert closed, lines
    # One month after another from the first (a close that fell behind marks several, up to its own).
    marked = [month for _, months, _ in closed for month in months]
    assert marked == [first, *(next_month(m) for m in marked[:-1])], marked
    assert all(months[-1] == month for month, months, _ in closed), closed
    assert sum(ratings for _, _, ratings in closed) > 0
    last = [line for line in lines if "events/s out" in line][-1]
    counted = re.search(r" (\d+) events, ", last)
    assert counted and int(counted[1]) > 0, last
    assert "demo: stopped; workers exited with [0]" in done.stderr


def test_the_tornelo_demo_publishes_each_end_after_its_games_and_its_follower_says_each_close() -> None:
    """Tournaments of 3 to 15 of 30 players, two at a time, end every second or two at 50 games/s:
    the close follower, in the demo's process, closes several within 20 s (each once its end record
    is read and the worker has applied the games before it: the follower's drain), a line each."""
    args = shlex.split("demo --system tornelo --players 30 --rate 50 --workers 1 --duration 20")
    done = commands.run([*commands.WORKER, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("demo (tornelo): broker 127.0.0.1:"), lines[0]
    assert lines[1].startswith("demo: its settings, ") and "RATING_SYSTEM=tornelo " in lines[1], lines[1]
    plan = (
        r"demo: tournaments of 3 to 15 players, up to 2 at once, 5-9 Swiss rounds, at 50 games/s; each end "
        r"published on arena\.tournament\.finished\.v1 once the broker has acknowledged every game of it; "
        r"`close-period --follow` \(in the demo's process\) closes each"
    )
    assert re.fullmatch(plan, lines[2]), lines[2]
    assert "demo: close-period --follow: following arena.tournament.finished.v1 as rating-worker-tornelo-close" in lines
    closes = [
        re.fullmatch(
            r"demo: close-period --follow: (t\d{6}) closed: (\d+) ratings, \d+\.\d s after its end record "
            r"was acknowledged",
            line,
        )
        for line in lines
    ]
    closed = [(c[1], int(c[2])) for c in closes if c]
    assert len(closed) >= 2, lines
    assert len({tournament for tournament, _ in closed}) == len(closed)  # each closed once
    assert all(ratings <= 15 for _, ratings in closed), closed  # a rating per player (one time control)
    assert sum(ratings for _, ratings in closed) > 0
    statuses = [re.search(r"; tournaments: (\d+) running, (\d+) ended, (\d+) closed", line) for line in lines]
    last = [s for s in statuses if s][-1]
    running, ended, counted = map(int, last.groups())
    assert 1 <= running <= 2 and counted <= len(closed) and counted <= ended, last[0]
    flowing = [line for line in lines if "events/s out" in line][-1]
    events = re.search(r" (\d+) events, ", flowing)
    assert events and int(events[1]) > 0, flowing
    assert "demo: stopped; workers exited with [0]" in done.stderr


def next_month(month: str) -> str:
    year, number = int(month[:4]), int(month[5:])
    return f"{year + number // 12:04d}-{number % 12 + 1:02d}"


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
