"""Where the test time goes (docs/development.md, "Where the test time goes"): a pytest plugin
that, when `RATING_TEST_TIMINGS` names a file, writes there at the session's end the time of
every test (setup, call and teardown), what it used, and the time of each fixture's set-ups;
`python -m tests.support.timing FILE...` prints the breakdown (several files: the parallel
processes' of one run, summed).

What a test used: its file, whether it is a property test (hypothesis) or of the fault suite
(marker `faults`), and how many processes it started, by kind: workers (`rating-worker run`),
other commands of the worker (`python -m worker ...`: `rate`, `import`, `restore`, ...), and the
rest (redis-servers, brokers, promtool, node). A fixture's set-up is timed as pytest runs it:
`broker` (a tansu start, once per module), `redis_server` (a redis-server start, each test).
Nothing is measured, and nothing changes, when the variable is not set."""

import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import pytest

VARIABLE = "RATING_TEST_TIMINGS"
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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    _started.clear()
    try:
        return (yield)
    finally:
        if os.environ.get(VARIABLE) and item.nodeid in _tests:
            _tests[item.nodeid]["started"] = dict(_started)


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
    lines = [f"{len(tests)} tests, {total:.0f} s of test time (setup + call + teardown, summed over processes)", ""]
    by_category: dict[str, list[float]] = defaultdict(list)
    for test in tests.values():
        by_category[category(test)].append(test["seconds"])
    lines.append("By what the tests do (each test in the first that applies):")
    for name, seconds in sorted(by_category.items(), key=lambda kv: -sum(kv[1])):
        lines.append(f"  {sum(seconds):8.0f} s {100 * sum(seconds) / total:5.1f} %  {len(seconds):5d} tests  {name}")
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
    by_file: dict[str, float] = defaultdict(float)
    for test in tests.values():
        by_file[test["file"]] += test["seconds"]
    lines.append("")
    lines.append(f"By file (the {top} slowest):")
    for name, seconds in sorted(by_file.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"  {seconds:8.0f} s {100 * seconds / total:5.1f} %  {name}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report([Path(p) for p in sys.argv[1:]]))
