"""Health that means progress: `/livez` and `/readyz`, served with `/metrics` on the metrics port.

- `/readyz` is 200 once Kafka and Redis answer and partitions are assigned; 503 otherwise.
- `/livez` is 503 when the event loop was blocked (it also cannot answer at all while it is
  blocked, which the probe's timeout counts as a failure), or when a partition with lag has
  made no progress (no commit) for RATING_STALL_SECONDS **while Kafka and Redis answer**:
  an outage of a dependency makes the pods unready, never restarts them all.

Time is passed in (`now`) to the decisions, so they are tested without clocks.
"""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

log = logging.getLogger(__name__)

CHECK_INTERVAL = 2.0  # how often Kafka and Redis are pinged, and the loop's lag sampled
CHECK_TIMEOUT = 3.0  # a dependency slower than this to answer counts as unreachable
LOOP_BLOCKED_SECONDS = 5.0  # a sample late by more than this means the loop was blocked


@dataclass
class Health:
    stall_seconds: float
    kafka_ok: bool = False
    redis_ok: bool = False
    loop_lag: float = 0.0
    # partition -> (records behind, monotonic time of its last progress)
    partitions: dict[int, tuple[int, float]] = field(default_factory=dict)

    def assigned(self, partitions: set[int], now: float) -> None:
        self.partitions = {p: self.partitions.get(p, (0, now)) for p in partitions}

    def lag(self, partition: int, records: int) -> None:
        if partition in self.partitions:
            self.partitions[partition] = (records, self.partitions[partition][1])

    def progressed(self, partition: int, now: float) -> None:
        if partition in self.partitions:
            self.partitions[partition] = (self.partitions[partition][0], now)

    def ready(self) -> tuple[bool, str]:
        if not self.kafka_ok:
            return False, "kafka unreachable"
        if not self.redis_ok:
            return False, "redis unreachable"
        if not self.partitions:
            return False, "no partitions assigned"
        return True, f"ready: {len(self.partitions)} partitions"

    def live(self, now: float) -> tuple[bool, str]:
        if self.loop_lag > LOOP_BLOCKED_SECONDS:
            return False, f"event loop blocked for {self.loop_lag:.1f} s"
        if not (self.kafka_ok and self.redis_ok):
            return True, "a dependency is unreachable: waiting, not stalled"
        stalled = sorted(p for p, (lag, at) in self.partitions.items() if lag > 0 and now - at > self.stall_seconds)
        if stalled:
            return False, f"partitions {stalled} have lag and made no progress for {self.stall_seconds:.0f} s"
        return True, "live"


async def watch_dependencies(
    health: Health, kafka: Callable[[], Awaitable[object]], redis: Callable[[], Awaitable[object]]
) -> None:
    """Ping Kafka and Redis, and sample the event loop's lag, every CHECK_INTERVAL."""
    while True:
        health.kafka_ok = await _answers(kafka)
        health.redis_ok = await _answers(redis)
        before = time.monotonic()
        await asyncio.sleep(CHECK_INTERVAL)
        health.loop_lag = max(0.0, time.monotonic() - before - CHECK_INTERVAL)
        if health.loop_lag > LOOP_BLOCKED_SECONDS:
            log.error("the event loop was blocked for %.1f s", health.loop_lag)


async def _answers(check: Callable[[], Awaitable[object]]) -> bool:
    try:
        async with asyncio.timeout(CHECK_TIMEOUT):
            await check()
        return True
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
                status, body, ctype = 200, generate_latest(), CONTENT_TYPE_LATEST
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
