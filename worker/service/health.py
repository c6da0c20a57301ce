"""Health that means progress: `/livez` and `/readyz`, served with `/metrics` on the metrics port.

- `/readyz` is 200 once Kafka and Redis answer and the consumer has joined its group, holding
  partitions or not; 503 otherwise. A member with no partition is ready: with as many replicas
  as partitions, a rolling update's surge pod gets none until an old pod leaves, and a
  readiness that waited for partitions would stall the rollout for good.
- `/livez` is 503 when the event loop was blocked (it also cannot answer at all while it is
  blocked, which the probe's timeout counts as a failure), or when a partition has had records
  waiting with no commit for RATING_STALL_SECONDS **while Kafka and Redis answer** (their
  pings, and no call of the worker to them failing and being retried; counted
  from the later of its oldest waiting record first seen and its last commit): an outage of a
  dependency makes the pods unready, never restarts them all. Nor is a partition stalled while
  its commit waits for events that wait out a publication lease (`worker.stream.pipeline`).
  The same stall is exported per partition (`rating_partition_stall_seconds`), so the alert on
  it and the probe agree.

Time is passed in (`now`) to the decisions, so they are tested without clocks.
"""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from worker import metrics
from worker.stream import retry

log = logging.getLogger(__name__)

CHECK_INTERVAL = 2.0  # how often Kafka and Redis are pinged, and the loop's lag sampled
CHECK_TIMEOUT = 3.0  # a dependency slower than this to answer counts as unreachable
LOOP_BLOCKED_SECONDS = 5.0  # a sample late by more than this means the loop was blocked


@dataclass
class Waiting:
    """One assigned partition: records behind, and since when they count as stalled."""

    lag: int = 0
    since: float | None = None  # monotonic; None while the partition has no lag


@dataclass
class Health:
    stall_seconds: float
    kafka_ok: bool = False
    redis_ok: bool = False
    loop_lag: float = 0.0
    partitions: dict[int, Waiting] = field(default_factory=dict)
    joined: bool = False  # the consumer has been through a rebalance (with or without partitions)

    def assigned(self, partitions: set[int], now: float) -> None:
        """The partitions held now (none is an assignment too); those still held keep their clocks."""
        self.joined = True
        self.partitions = {p: self.partitions.get(p) or Waiting() for p in partitions}

    def revoked(self, partitions: set[int]) -> None:
        for p in partitions:
            self.partitions.pop(p, None)

    def lag(self, partition: int, records: int, now: float) -> None:
        """A lag sample: the stall clock starts when records are first seen waiting."""
        waiting = self.partitions.get(partition)
        if waiting is None:
            return
        waiting.lag = records
        if records == 0:
            waiting.since = None
        elif waiting.since is None:
            waiting.since = now

    def waiting(self, partition: int, now: float) -> None:
        """The partition's oldest uncommitted batch waits, by design, for ratings whose publication
        waits out a lease (a hold after a send of unknown outcome, or another process's lease;
        `worker.stream.consumer.waits_by_design`): progress delayed, not a stall. Its clock
        restarts, as at a commit."""
        self.progressed(partition, now)

    def progressed(self, partition: int, now: float) -> None:
        """A commit: whatever still waits counts from now."""
        waiting = self.partitions.get(partition)
        if waiting is not None and waiting.since is not None:
            waiting.since = now

    def answered(self, kafka: bool, redis: bool, now: float) -> None:
        """The dependencies' last check. While one is away nothing stalls: the clocks restart,
        so that its return does not find every waiting partition stalled at once."""
        self.kafka_ok, self.redis_ok = kafka, redis
        if not (kafka and redis):
            for waiting in self.partitions.values():
                if waiting.since is not None:
                    waiting.since = now

    def stall(self, partition: int, now: float) -> float:
        """How long the partition has had records waiting with no commit while Kafka and Redis
        answer: from the later of its oldest waiting record first seen and its last commit.
        /livez fails above `stall_seconds`; `rating_partition_stall_seconds` exports it."""
        waiting = self.partitions.get(partition)
        if waiting is None or waiting.since is None or not (self.kafka_ok and self.redis_ok):
            return 0.0
        return max(0.0, now - waiting.since)

    def ready(self) -> tuple[bool, str]:
        if not self.kafka_ok:
            return False, "kafka unreachable"
        if not self.redis_ok:
            return False, "redis unreachable"
        if not self.joined:
            return False, "not yet a member of the consumer group"
        if not self.partitions:
            return True, "ready: a member of the group holding no partition (more members than partitions)"
        held = len(self.partitions)
        return True, f"ready: {held} partition{'s' if held != 1 else ''}"

    def live(self, now: float) -> tuple[bool, str]:
        if self.loop_lag > LOOP_BLOCKED_SECONDS:
            return False, f"event loop blocked for {self.loop_lag:.1f} s"
        if not (self.kafka_ok and self.redis_ok):
            return True, "a dependency is unreachable: waiting, not stalled"
        stalled = sorted(p for p in self.partitions if self.stall(p, now) > self.stall_seconds)
        if stalled:
            return False, f"partitions {stalled} have lag and made no progress for {self.stall_seconds:.0f} s"
        return True, "live"


async def watch_dependencies(
    health: Health, kafka: Callable[[], Awaitable[object]], redis: Callable[[], Awaitable[object]]
) -> None:
    """Ping Kafka and Redis, and sample the event loop's lag, every CHECK_INTERVAL."""
    while True:
        # A dependency is away when its ping fails, or while the worker's own calls to it keep
        # failing (a broker answering metadata but refusing every produce request).
        kafka_ok = await _answers(kafka) and not retry.failing("kafka")
        redis_ok = await _answers(redis) and not retry.failing("redis")
        health.answered(kafka_ok, redis_ok, time.monotonic())
        before = time.monotonic()
        await asyncio.sleep(CHECK_INTERVAL)
        health.loop_lag = max(0.0, time.monotonic() - before - CHECK_INTERVAL)
        if health.loop_lag > LOOP_BLOCKED_SECONDS:
            log.error("the event loop was blocked for %.1f s", health.loop_lag)


async def _answers(check: Callable[[], Awaitable[object]]) -> bool:
    """Whether the check answered in time; a check that answers `False` (the Redis store's guard
    refusing work) counts as not answering."""
    try:
        async with asyncio.timeout(CHECK_TIMEOUT):
            return await check() is not False
    except Exception:  # any failure means: not reachable now
        return False


async def serve_http(health: Health, port: int, host: str = "0.0.0.0") -> asyncio.Server:
    """A minimal HTTP/1.1 server: GET /metrics, /livez, /readyz."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 5)
            while (await asyncio.wait_for(reader.readline(), 5)) not in (b"\r\n", b"\n", b""):
                pass  # headers: ignored
            parts = request.decode("latin-1").split()
            path = parts[1] if len(parts) > 1 else "/"
            if path == "/metrics":
                status, body, ctype = 200, generate_latest(metrics.EXPOSED), CONTENT_TYPE_LATEST
            elif path in ("/livez", "/readyz"):
                ok, reason = health.live(time.monotonic()) if path == "/livez" else health.ready()
                status, body, ctype = (200 if ok else 503), (reason + "\n").encode(), "text/plain; charset=utf-8"
            else:
                status, body, ctype = 404, b"not found\n", "text/plain; charset=utf-8"
            head = f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\nContent-Type: {ctype}\r\n"
            head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            writer.write(head.encode() + body)
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(handle, host, port)
