"""Where the test time goes (docs/development.md, "Where the test time goes"): a pytest plugin
that, when `RATING_TEST_TIMINGS` names a file, writes there at the session's end the time of
every test (setup, call and teardown), what it used, and the time of each fixture's set-ups;
`python -m tests.support.timing FILE...` prints the breakdown (several files: the parallel
processes' of one run, summed).

What a test used: its file, whether it is a property test (hypothesis) or of the fault suite
(marker `faults`), and how many processes it started, by kind: workers (`rating-worker run`),
other commands of the worker (`python -m worker ...`: `rate`, `import`, `restore`, ...), and the
rest (redis-servers, brokers, promtool, node), and its CPU time (its process's, and that of the
processes it started that ended and were waited for). A fixture's set-up is timed as pytest runs
it: `broker` (a tansu start, once per module), `redis_server` (a redis-server start, each test).
Nothing is measured when the variable is not set.

It also orders the collection, always: the files of LONGEST_FIRST first (see there)."""

import json
import os
import resource
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support import commands

VARIABLE = "RATING_TEST_TIMINGS"
# The slowest test files of the parallel phase, slowest first (the report's "By file", 2026-12-05).
# The parallel processes take a file at a time in collection order (`--dist loadfile`), so these
# go first: a long file started last would keep one process busy after the others are done.
# Every other file keeps its place after them. `tests/harness/test_timing.py` checks they exist.
LONGEST_FIRST = (
    "tests/integration/service/alerts/test_held_up.py",
    "tests/unit/contract/test_streams.py",
    "tests/integration/service/alerts/test_input.py",
    "tests/integration/service/alerts/test_rules_and_absence.py",
    "tests/integration/operate/test_importer.py",
    "tests/unit/contract/test_events.py",
    "tests/integration/service/test_observability.py",
    "tests/cli/test_system.py",
    "tests/integration/operate/test_rebuild_applied_copy.py",
    "tests/cli/test_worker_settings.py",
    "tests/integration/store/test_contract.py",
    "tests/integration/operate/test_restore.py",
)
_tests: dict[str, dict[str, Any]] = {}
_fixtures: dict[str, list[float]] = defaultdict(list)
_started: Counter[str] = Counter()  # the processes the running test started, by kind
_original_init = subprocess.Popen.__init__


def _kind(args: object) -> str:
    argv = [str(a) for a in args] if isinstance(args, (list, tuple)) else [str(args)]
    if len(argv) >= 3 and argv[1:3] == ["-m", "worker"]:
        return "worker run" if argv[3:4] == ["run"] else "worker command"
    return Path(argv[0]).name if argv else "?"


def _counting_init(self: subprocess.Popen[Any], args: Any, *rest: Any, **options: Any) -> None:
    _started[_kind(args)] += 1
    _original_init(self, args, *rest, **options)


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(VARIABLE):
        subprocess.Popen.__init__ = _counting_init  # type: ignore[method-assign]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files of LONGEST_FIRST first, in its order; the order of the tests within a file kept."""
    rank = {path: n for n, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
) -> Generator[None, Any, Any]:
    start = time.perf_counter()
    try:
        return (yield)
    finally:
        if os.environ.get(VARIABLE):
            _fixtures[fixturedef.argname].append(time.perf_counter() - start)


def cpu_seconds() -> float:
    """The CPU time (user + system) of this process, of its children that ended and were waited for,
    and of the commands the fork server ran for it (`tests.support.commands`)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime + commands.stats["cpu"]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    _started.clear()
    cpu = cpu_seconds() if os.environ.get(VARIABLE) else 0.0
    forked = dict(commands.stats)
    try:
        return (yield)
    finally:
        if os.environ.get(VARIABLE) and item.nodeid in _tests:
            for kind, counter in (("worker command", "started"), ("worker run", "workers")):
                if commands.stats[counter] > forked[counter]:  # forked by the server, not started here
                    _started[kind] += int(commands.stats[counter] - forked[counter])
            _tests[item.nodeid]["started"] = dict(_started)
            _tests[item.nodeid]["cpu"] = cpu_seconds() - cpu


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not os.environ.get(VARIABLE):
        return
    entry = _tests.setdefault(report.nodeid, {"file": report.nodeid.split("::")[0], "seconds": 0.0})
    entry["seconds"] += report.duration
    entry[report.when] = report.duration
    entry["faults"] = "faults" in report.keywords
    entry["property"] = "hypothesis" in report.keywords  # hypothesis's plugin marks its tests


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get(VARIABLE)
    if not path:
        return
    # An xdist worker process writes its own file (a nested pytest only inherits the variable).
    worker = getattr(session.config, "workerinput", {}).get("workerid")
    target = Path(path if worker is None else f"{path}.{worker}")
    target.write_text(json.dumps({"tests": _tests, "fixtures": _fixtures}), encoding="utf-8")


def category(test: dict[str, Any]) -> str:
    """The one category a test's time is counted in, the first that applies."""
    started: dict[str, int] = test.get("started", {})
    if test["faults"]:
        return "the fault suite"
    if started.get("worker run"):
        return "tests that start workers"
    if started.get("worker command"):
        return "tests that run a command of the worker (rate, import, ...)"
    if test["property"]:
        return "property tests (hypothesis)"
    if "promtool" in started or "prometheus" in started:
        return "alert rules and recordings (promtool, prometheus)"
    return "the rest"


def report(paths: Sequence[Path], top: int = 25) -> str:
    tests: dict[str, dict[str, Any]] = {}
    fixtures: dict[str, list[float]] = defaultdict(list)
    for path in paths:
        loaded = json.loads(path.read_text(encoding="utf-8"))
        tests.update(loaded["tests"])
        for name, seconds in loaded["fixtures"].items():
            fixtures[name] += seconds
    total = sum(t["seconds"] for t in tests.values())
    cpu = sum(t.get("cpu", 0.0) for t in tests.values())
    lines = [
        f"{len(tests)} tests, {total:.0f} s of test time (setup + call + teardown, summed over processes), "
        f"{cpu:.0f} s of CPU (the test processes and the commands and servers they started and waited for)",
        "",
    ]
    by_category: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for test in tests.values():
        by_category[category(test)].append(test)
    lines.append("By what the tests do (each test in the first that applies; time, its share, CPU):")
    for name, members in sorted(by_category.items(), key=lambda kv: -_seconds(kv[1])):
        seconds, share = _seconds(members), 100 * _seconds(members) / total
        lines.append(f"  {seconds:8.0f} s {share:5.1f} %  {_cpu(members):6.0f} s CPU  {len(members):5d} tests  {name}")
    started: Counter[str] = Counter()
    for test in tests.values():
        started.update(test.get("started", {}))
    lines.append("")
    lines.append("Processes started: " + ", ".join(f"{n} {kind}" for kind, n in started.most_common()))
    lines.append("")
    lines.append("Fixture set-ups (the slowest kinds):")
    for name, seconds in sorted(fixtures.items(), key=lambda kv: -sum(kv[1]))[:8]:
        lines.append(
            f"  {sum(seconds):8.0f} s  {len(seconds):5d} set-ups  {sum(seconds) / len(seconds):6.2f} s each  {name}"
        )
    by_file: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for test in tests.values():
        by_file[test["file"]].append(test)
    lines.append("")
    lines.append(f"By file (the {top} slowest; time, its share, CPU):")
    for name, members in sorted(by_file.items(), key=lambda kv: -_seconds(kv[1]))[:top]:
        seconds = _seconds(members)
        lines.append(f"  {seconds:8.0f} s {100 * seconds / total:5.1f} %  {_cpu(members):6.0f} s CPU  {name}")
    return "\n".join(lines)


def _seconds(tests: list[dict[str, Any]]) -> float:
    return sum(float(t["seconds"]) for t in tests)


def _cpu(tests: list[dict[str, Any]]) -> float:
    return sum(float(t.get("cpu", 0.0)) for t in tests)


if __name__ == "__main__":
    print(report([Path(p) for p in sys.argv[1:]]))
