"""RATING_TEST_BACKEND: the local processes by default, the containers when asked (skipped with the
reason where no container engine answers), a clear usage error for any other name.

The selection and the skip are checked on a pytest of their own, run here on one integration test.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from tests.support import backends
from tests.support.backends import CONTAINERS, LOCAL, ContainerRedis, RedisService
from tests.support.processes import Processes
from worker.embedded.stack import RedisServer

REPO = Path(__file__).resolve().parents[2]
ONE_INTEGRATION_TEST = "tests/integration/operate/test_topics.py::test_topics_are_created_once_with_their_partitions"
NO_ENGINE = "unix:///nonexistent/docker.sock"  # where no container engine can answer


def pytest_on(test: str, **environ: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RATING_TEST_BACKEND", "DOCKER_HOST")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", test, "-p", "no:cacheprovider", "-q", "-rs"],
        cwd=REPO,
        env={**env, **environ},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("value", "backend"),
    [(None, LOCAL), ("", LOCAL), ("local", LOCAL), ("testcontainers", CONTAINERS)],
    ids=["unset", "empty", "local", "testcontainers"],
)
def test_the_local_processes_are_the_default_and_the_containers_are_chosen_by_name(
    value: str | None, backend: str
) -> None:
    environ = {} if value is None else {"RATING_TEST_BACKEND": value}
    assert backends.selected(environ) == backend


def test_an_unknown_backend_is_a_usage_error_naming_the_two() -> None:
    with pytest.raises(pytest.UsageError, match="RATING_TEST_BACKEND='docker' is not a test backend") as raised:
        backends.selected({"RATING_TEST_BACKEND": "docker"})
    assert "'local'" in str(raised.value) and "'testcontainers'" in str(raised.value)


def test_no_engine_on_the_docker_host_is_a_reason_and_a_malformed_host_too() -> None:
    reason = backends.container_engine_error({"DOCKER_HOST": NO_ENGINE})
    assert reason is not None and "nonexistent" in reason
    assert backends.container_engine_error({"DOCKER_HOST": "ssh://somewhere"}) is not None


@pytest.mark.integration
def test_a_container_redis_is_emptied_for_each_test_like_a_new_redis_server(
    processes: Processes, tmp_path: Path
) -> None:
    """The isolation of the shared container's Redis (here a local redis-server plays the container)."""
    server = processes.redis(tmp_path)
    with redis.Redis(port=server.port, db=0) as first, redis.Redis(port=server.port, db=3) as other:
        first.set("rating:s:a/blitz", b"1|180000|40|")
        other.set("elsewhere", b"x")
        ContainerRedis(server.url).flush()
        assert first.dbsize() == 0 and other.dbsize() == 0


@pytest.mark.integration
def test_the_session_runs_on_the_selected_backend(backend: str, redis_server: RedisService) -> None:
    assert backend == backends.selected(os.environ)
    assert isinstance(redis_server, RedisServer if backend == LOCAL else ContainerRedis)


@pytest.mark.integration
def test_testcontainers_without_a_container_engine_skips_an_integration_test_with_the_reason() -> None:
    done = pytest_on(ONE_INTEGRATION_TEST, RATING_TEST_BACKEND="testcontainers", DOCKER_HOST=NO_ENGINE)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "1 skipped" in out and "passed" not in out, out
    assert "RATING_TEST_BACKEND=testcontainers, but no container engine answers" in out, out
    assert "nonexistent" in out, out  # the reason says which engine did not answer


@pytest.mark.integration
def test_an_unknown_backend_stops_the_run_with_a_clear_message() -> None:
    done = pytest_on(ONE_INTEGRATION_TEST, RATING_TEST_BACKEND="kafka-in-the-cloud")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "RATING_TEST_BACKEND='kafka-in-the-cloud' is not a test backend" in done.stderr, done.stderr
