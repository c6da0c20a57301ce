"""The fixtures of the processes the tests run against, and what every test session checks.

- `broker` (one per test module), `redis_server` (one per test) and `stack` (the two, the test's
  own topics and group, and the workers it starts), from the backend RATING_TEST_BACKEND selects
  (tests/support/backends.py): local processes by default, containers if asked.
- `processes`: the processes a test starts (workers, replicas, a broker of its own...), all killed
  at its teardown, whatever the test did; its garbage is collected then, so that a connection it
  left open fails it, not a later test.
- A test that fails with workers running gets their log tails in its report.
- The session ends by checking that no process the tests started is still running.
"""

import gc
import itertools
import os
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.support import backends
from tests.support.backends import CONTAINERS, ContainerKafka, ContainerRedis, KafkaService, RedisService
from tests.support.processes import Processes, left_running, reap
from tests.support.stack import Stack

# Where the test time goes, when RATING_TEST_TIMINGS names a file (docs/development.md).
pytest_plugins = ["tests.support.timing"]

BACKEND = pytest.StashKey[str]()
_names = itertools.count()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[BACKEND] = backends.selected(os.environ)  # an unknown name stops the run here


@pytest.fixture(scope="session")
def backend(pytestconfig: pytest.Config) -> str:
    """The backend the session runs against: "local" or "testcontainers"."""
    return pytestconfig.stash[BACKEND]


@pytest.fixture(scope="session", autouse=True)
def nothing_left_running() -> Iterator[None]:
    """Every process the tests started is gone at the end of the session (their fixtures killed them)."""
    yield
    left = left_running()
    for started in left:
        reap(started.process)
    if left:
        pytest.fail(
            f"{len(left)} processes the tests started were still running at the end of the session "
            f"(killed now): {', '.join(map(str, left))}"
        )


@pytest.fixture
def processes(request: pytest.FixtureRequest) -> Iterator[Processes]:
    """The processes this test starts, killed at its teardown."""
    owned = Processes(request.node.nodeid)
    yield owned
    owned.kill_all()
    # The test's garbage is collected now: a client or connection it left open warns (an error)
    # at this test's teardown, not at a random later test's.
    gc.collect()


@pytest.fixture(scope="session")
def kafka_container() -> Iterator[ContainerKafka]:
    backends.require_container_engine(os.environ)
    with backends.kafka_container() as kafka:
        yield kafka


@pytest.fixture(scope="session")
def redis_container() -> Iterator[ContainerRedis]:
    backends.require_container_engine(os.environ)
    with backends.redis_container() as redis:
        yield redis


@pytest.fixture(scope="module")
def broker(backend: str, request: pytest.FixtureRequest) -> Iterator[KafkaService]:
    """The test module's broker (a tansu process, or the session's Kafka container)."""
    if backend == CONTAINERS:
        yield request.getfixturevalue("kafka_container")
        return
    owned = Processes(f"the broker of {request.node.nodeid}")
    try:
        yield owned.broker()
    finally:  # also when its start failed half-way
        owned.kill_all()


@pytest.fixture
def redis_server(backend: str, processes: Processes, tmp_path: Path, request: pytest.FixtureRequest) -> RedisService:
    """The test's own empty Redis: a redis-server with an append-only file, or the container's, flushed."""
    if backend == CONTAINERS:
        container: ContainerRedis = request.getfixturevalue("redis_container")
        container.flush()
        return container
    return processes.redis(tmp_path, appendonly=True)


@pytest.fixture
def stack(broker: KafkaService, redis_server: RedisService, tmp_path: Path, processes: Processes) -> Iterator[Stack]:
    s = Stack(broker, redis_server, tmp_path, f"t{next(_names)}", processes)
    yield s
    s.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed (or timed out) test's report shows the tail of its workers' logs."""
    report = yield
    stack = getattr(item, "funcargs", {}).get("stack")
    if report.failed and isinstance(stack, Stack) and stack.workers:
        report.sections.append(("workers' log tails", stack.logs_tail()))
    return report
