"""The breakdown of the test time (tests/support/timing.py): each test counted once, in the first
category that applies, the parallel processes' files summed, fixtures' set-ups by name; and the
plugin writes a file only when asked, with each test's phases and the processes it started."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.timing import LONGEST_FIRST, category, report

REPO = Path(__file__).resolve().parents[2]


def timed(
    seconds: float, started: dict[str, int] | None = None, faults: bool = False, prop: bool = False, cpu: float = 0.0
) -> dict[str, Any]:
    """A test's entry as the plugin writes it."""
    entry = {"file": "tests/x.py", "seconds": seconds, "faults": faults, "property": prop, "started": started or {}}
    return entry | {"cpu": cpu}


def test_each_test_is_counted_in_the_first_category_that_applies() -> None:
    assert category(timed(1, {"worker run": 2}, faults=True)) == "the fault suite"
    assert category(timed(1, {"worker run": 1, "worker command": 3}, prop=True)) == "tests that start workers"
    assert category(timed(1, {"worker command": 1}, prop=True)).startswith("tests that run a command")
    assert category(timed(1, {"promtool": 1}, prop=True)) == "property tests (hypothesis)"
    assert category(timed(1, {"promtool": 1})).startswith("alert rules and recordings")
    assert category(timed(1, {"redis-server": 1})) == "the rest"


def test_the_report_sums_the_processes_files(tmp_path: Path) -> None:
    one = {
        "tests": {"a::t1": timed(30, faults=True, cpu=4), "a::t2": timed(10, cpu=1.5)},
        "fixtures": {"broker": [2.0, 3.0]},
    }
    two = {
        "tests": {"b::t3": {**timed(60, {"worker run": 1}, cpu=20), "file": "tests/b.py"}},
        "fixtures": {"broker": [5.0]},
    }
    paths = [tmp_path / "t.json.gw0", tmp_path / "t.json.gw1"]
    for path, data in zip(paths, (one, two), strict=True):
        path.write_text(json.dumps(data))
    text = report(paths)
    assert text.startswith("3 tests, 100 s of test time (setup + call + teardown, summed over processes), 26 s of CPU")
    assert "      60 s  60.0 %      20 s CPU      1 tests  tests that start workers" in text
    assert "      30 s  30.0 %       4 s CPU      1 tests  the fault suite" in text
    assert "      10 s      3 set-ups    3.33 s each  broker" in text
    assert (
        "      60 s  60.0 %      20 s CPU  tests/b.py" in text
        and "      40 s  40.0 %       6 s CPU  tests/x.py" in text
    )


def test_the_plugin_writes_the_tests_phases_and_processes_only_when_asked(tmp_path: Path) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "import subprocess, sys\n\n\ndef test_runs_a_command():\n"
        "    subprocess.run([sys.executable, '-m', 'worker', '--help'], capture_output=True, check=True)\n"
    )
    out = tmp_path / "timings.json"
    argv = [sys.executable, "-m", "pytest", str(probe), "-p", "tests.support.timing", "-p", "no:cacheprovider", "-q"]
    env = {k: v for k, v in os.environ.items() if k != "RATING_TEST_TIMINGS"} | {"PYTHONPATH": str(REPO)}
    assert subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, timeout=120, check=False).returncode == 0
    assert not out.exists()
    asked = env | {"RATING_TEST_TIMINGS": str(out)}
    done = subprocess.run(argv, cwd=tmp_path, env=asked, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout
    (entry,) = json.loads(out.read_text())["tests"].values()
    assert entry["started"] == {"worker command": 1}
    assert entry["seconds"] >= entry["call"] > 0 and {"setup", "teardown"} <= set(entry)
    # The command's CPU is counted: a Python start-up that imports the worker takes well over 10 ms.
    assert entry["cpu"] > 0.01


def test_the_files_run_first_exist_and_come_first_in_the_collection() -> None:
    for path in LONGEST_FIRST:
        assert (REPO / path).is_file(), path
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests/unit", "tests/cli"]
    listed = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120, check=True).stdout
    files = list(dict.fromkeys(line.split("::")[0] for line in listed.splitlines() if "::" in line))
    wanted = [path for path in LONGEST_FIRST if path.startswith(("tests/unit/", "tests/cli/"))]
    assert files[: len(wanted)] == wanted
