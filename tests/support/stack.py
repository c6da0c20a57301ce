"""A test's stack: the broker, a Redis, its own topics and consumer group, and the workers it starts.

The `stack` fixture (tests/conftest.py) makes one per test. Short group timeouts (the broker's
rebalances take about session/2) keep the tests fast; the workers are killed, not stopped, at
teardown. Every test has its own topics and group, so that tests sharing a module's broker never
see each other's records.
"""

import asyncio
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import pytest
from redis import Redis as SyncRedis

from tests.support import commands
from tests.support.backends import KafkaService, RedisService
from tests.support.kafka import committed, ends, produce, read_topic
from tests.support.processes import Processes
from worker.embedded.stack import Broker, RedisServer, create_topics, worker_env
from worker.systems.arena.traffic import ArenaSimulation

# Short enough for quick tests: a killed member's partitions move after ~2 x 3 s.
FAST_GROUP = {"kafka_session_timeout_ms": 3000, "kafka_heartbeat_interval_ms": 1000}
# A killed worker's leases expire quickly; the lease outlives one delivery attempt.
FAST_LEASE = {"publication_lease_seconds": 3, "producer_delivery_timeout_seconds": 2}
LOG_TAIL = 8000  # characters of the workers' log tails shown with a failure
WORKER_TAIL = 1500  # of each worker's


@dataclass
class Stack:
    broker: KafkaService
    redis: RedisService
    tmp: Path
    name: str
    processes: Processes  # the test's: kills the workers at its teardown
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    clients: list[SyncRedis] = field(default_factory=list)

    @property
    def games_topic(self) -> str:
        return f"games-{self.name}"

    @property
    def ratings_topic(self) -> str:
        return f"ratings-{self.name}"

    @property
    def dlq_topic(self) -> str:
        return f"dlq-{self.name}"

    @property
    def group(self) -> str:
        return f"group-{self.name}"

    async def create_topics(self, games: int = 1, ratings: int = 4, dlq: int = 1) -> None:
        await create_topics(
            self.broker.bootstrap, {self.games_topic: games, self.ratings_topic: ratings, self.dlq_topic: dlq}
        )

    def env(self, **settings: object) -> dict[str, str]:
        """The environment of a worker or a command on this stack (settings as RATING_* variables)."""
        merged: dict[str, object] = {
            "topic_games": self.games_topic,
            "topic_ratings": self.ratings_topic,
            "topic_dead_letters": self.dlq_topic,
            "kafka_group_id": self.group,
            "log_level": "debug",
            **FAST_GROUP,
            **FAST_LEASE,
        }
        merged.update(settings)
        # worker_env reads only the broker's bootstrap and the Redis url, which containers have too.
        return worker_env(cast(Broker, self.broker), cast(RedisServer, self.redis), **merged)

    def start_worker(self, **settings: object) -> subprocess.Popen[bytes]:
        """A worker (`rating-worker run`) logging to worker-N.log, N its index in `workers`."""
        return self.start_worker_from(None, **settings)

    def start_worker_from(self, code: Path | None, **settings: object) -> subprocess.Popen[bytes]:
        """A worker of another checkout (`code`: an earlier release), or of this one (None)."""
        worker = self.processes.worker(self.env(**settings), self.tmp / f"worker-{len(self.workers)}.log", code)
        self.workers.append(worker)
        return worker

    def import_seed(
        self, seed: Path, *args: str, code: Path | None = None, **settings: object
    ) -> subprocess.CompletedProcess[bytes]:
        return commands.run(
            [sys.executable, "-m", "worker", "import", str(seed), *args],
            env=self.env(**settings),
            capture_output=True,
            timeout=120,
            check=False,
            cwd=code,
        )

    def seeded_simulation(self, players: int, seed: int) -> ArenaSimulation:
        """An arena of `players`, its established players' ratings imported."""
        sim = ArenaSimulation(players, seed=seed)
        seed_file = self.tmp / "seed.csv"
        seed_file.write_text(sim.seed_csv())
        imported = self.import_seed(seed_file)
        assert imported.returncode == 0, imported.stderr.decode(errors="replace")
        return sim

    async def produce(self, values: list[bytes], keys: list[bytes | None] | None = None) -> None:
        await produce(self.broker.bootstrap, self.games_topic, values, keys)

    def redis_client(self) -> SyncRedis:
        """A client of the stack's Redis, closed at the test's end."""
        client = SyncRedis.from_url(self.redis.url)
        self.clients.append(client)
        return client

    async def committed(self, partitions: int, group: str | None = None) -> dict[int, int]:
        """The group's (by default the stack's) committed offset of each games partition."""
        return await committed(self.broker.bootstrap, group or self.group, self.games_topic, partitions)

    async def wait_committed(self, end: dict[int, int], timeout: float = 60) -> None:
        """Until the group committed `end` (partition -> offset)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = await self.committed(len(end))
            if all(done[p] >= end[p] for p in end):
                return
            await asyncio.sleep(0.3)
        raise AssertionError(f"offsets not committed in {timeout} s: {done} < {end}\n{self.logs()[-3000:]}")

    async def games_ends(self, expect: int = 1, *, timeout: float = 60.0, idle: float = 0.5) -> dict[int, int]:
        """Each games partition's end, from its records (once `expect` arrived and none came for `idle` s)."""
        return ends(await read_topic(self.broker.bootstrap, self.games_topic, expect, timeout=timeout, idle=idle))

    async def end_offsets(self, produced: int) -> dict[int, int]:
        """Each games partition's end, once all `produced` records are in the topic."""
        records = await read_topic(self.broker.bootstrap, self.games_topic, produced, timeout=30, idle=0.5)
        assert len(records) == produced, f"{len(records)} records in {self.games_topic}, {produced} produced"
        return ends(records)

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.tmp.glob("worker-*.log")))

    def logs_tail(self) -> str:
        """The end of every worker's log (JSON lines), the last workers first."""
        tails = []
        for n in reversed(range(len(self.workers))):
            log = self.tmp / f"worker-{n}.log"
            text = log.read_text(errors="replace") if log.exists() else ""
            worker = self.workers[n]
            tails.append(f"--- worker-{n} (pid {worker.pid}, exit {worker.poll()}) ---\n{text[-WORKER_TAIL:]}")
        return "\n".join(tails)[:LOG_TAIL]

    def holds_partitions(self, n: int) -> bool:
        """Whether worker n's last assignment message (in its JSON log) gave it partitions."""
        last = ""
        for line in (self.tmp / f"worker-{n}.log").read_text(errors="replace").splitlines():
            if '"partitions assigned: ' in line or '"partitions revoked: ' in line:
                last = line
        return '"partitions assigned: ' in last and '"partitions assigned: []"' not in last

    def live(self) -> list[int]:
        """Indexes of the workers still running."""
        return [n for n, w in enumerate(self.workers) if w.poll() is None]

    def assert_alive(self, expected: Sequence[int]) -> None:
        dead = {n: self.workers[n].returncode for n in expected if self.workers[n].poll() is not None}
        assert not dead, f"workers exited on their own (index: status): {dead}"

    def close(self) -> None:
        for client in self.clients:
            client.close()


def require_local(stack: Stack) -> tuple[Broker, RedisServer]:
    """The local broker and redis-server, for a test that freezes, kills or restarts them (not containers)."""
    if not isinstance(stack.broker, Broker) or not isinstance(stack.redis, RedisServer):
        pytest.skip("this test needs the local broker and redis-server (RATING_TEST_BACKEND=local)")
    return stack.broker, stack.redis
