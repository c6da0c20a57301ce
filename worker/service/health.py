"""The health over HTTP: `/livez`, `/readyz` (what `worker.stream.health.Health` decides) and
`/metrics` on the metrics port; and the watch that tells the health whether Kafka and Redis answer,
and how late the event loop runs."""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from worker.stream import retry
from worker.stream.health import LOOP_BLOCKED_SECONDS, Health

log = logging.getLogger(__name__)

CHECK_INTERVAL = 2.0  # how often Kafka and Redis are pinged, and the loop's lag sampled
CHECK_TIMEOUT = 3.0  # a dependency slower than this to answer counts as unreachable


async def watch_dependencies(
    health: Health,
    failing: retry.Failing,
    kafka: Callable[[], Awaitable[object]],
    redis: Callable[[], Awaitable[object]],
) -> None:
    """Ping Kafka and Redis, and sample the event loop's lag, every CHECK_INTERVAL; `failing` is
    the process's (the one its retry policy carries)."""
    while True:
        # A dependency is away when its ping fails, or while the worker's own calls to it keep
        # failing (a broker answering metadata but refusing every produce request).
        kafka_ok = await _answers(kafka) and not failing.on("kafka")
        redis_ok = await _answers(redis) and not failing.on("redis")
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


async def serve_http(health: Health, exposed: CollectorRegistry, port: int, host: str = "0.0.0.0") -> asyncio.Server:
    """A minimal HTTP/1.1 server: GET /metrics (what `exposed` collects), /livez, /readyz."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 5)
            while (await asyncio.wait_for(reader.readline(), 5)) not in (b"\r\n", b"\n", b""):
                pass  # headers: ignored
            parts = request.decode("latin-1").split()
            path = parts[1] if len(parts) > 1 else "/"
            if path == "/metrics":
                status, body, ctype = 200, generate_latest(exposed), CONTENT_TYPE_LATEST
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
