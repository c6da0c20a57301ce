"""Real processes: one tansu broker per test module, a fresh redis-server per test.

Short group timeouts (the broker's rebalances take about session/2) and processes killed,
not stopped, at teardown keep the suite fast. Every test gets its own topics and consumer
group, so tests sharing a module's broker never see each other's records.
"""

import itertools
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.integration.backends import start_broker, start_redis
from tests.integration.kafka_io import produce
from worker.embedded.stack import Broker, RedisServer, create_topics, start_worker, worker_env

_counter = itertools.count()

# Short enough for quick tests: a killed member's partitions move after ~2 x 3 s.
FAST_GROUP = {"kafka_session_timeout_ms": 3000, "kafka_heartbeat_interval_ms": 1000}
# A killed worker's leases expire quickly; the lease outlives one delivery attempt.
FAST_LEASE = {"publication_lease_seconds": 3, "producer_delivery_timeout_seconds": 2}


@dataclass
class Stack:
    broker: Broker
    redis: RedisServer
    tmp: Path
    name: str
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def games_topic(self) -> str:
        return f"games-{self.name}"

    @property
    def ratings_topic(self) -> str:
        return f"ratings-{self.name}"

    @property
    def dlq_topic(self) -> str:
        return f"dlq-{self.name}"

    async def create_topics(self, games: int = 1, ratings: int = 4, dlq: int = 1) -> None:
        await create_topics(
            self.broker.bootstrap, {self.games_topic: games, self.ratings_topic: ratings, self.dlq_topic: dlq}
        )

    def env(self, **settings: object) -> dict[str, str]:
        merged: dict[str, object] = {
            "topic_games": self.games_topic,
            "topic_ratings": self.ratings_topic,
            "topic_dead_letters": self.dlq_topic,
            "kafka_group_id": f"group-{self.name}",
            "log_level": "debug",
            **FAST_GROUP,
            **FAST_LEASE,
        }
        merged.update(settings)
        return worker_env(self.broker, self.redis, **merged)

    def start_worker(self, **settings: object) -> subprocess.Popen[bytes]:
        worker = start_worker(self.env(**settings), self.tmp / f"worker-{len(self.workers)}.log")
        self.workers.append(worker)
        return worker

    def import_seed(self, seed: Path, *args: str, **settings: object) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "worker", "import", str(seed), *args],
            env=self.env(**settings),
            capture_output=True,
            timeout=120,
            check=False,
        )

    async def produce(self, values: list[bytes], keys: list[bytes | None] | None = None) -> None:
        await produce(self.broker.bootstrap, self.games_topic, values, keys)

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.tmp.glob("worker-*.log")))


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    b = start_broker()
    yield b  # type: ignore[misc]  # a container broker offers the same bootstrap/kill
    b.kill()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    r = start_redis(tmp_path)
    yield r  # type: ignore[misc]  # a container offers the same url/kill
    r.kill()


@pytest.fixture
def stack(broker: Broker, redis_server: RedisServer, tmp_path: Path) -> Iterator[Stack]:
    s = Stack(broker, redis_server, tmp_path, f"t{next(_counter)}")
    yield s
    for w in s.workers:
        if w.poll() is None:
            w.kill()
            w.wait()
