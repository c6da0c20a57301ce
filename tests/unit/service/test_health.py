"""`worker.service.health.watch_dependencies`: a dependency is away when its ping fails, or while
the process's own retried calls to it keep failing (the `Failing` its retry policy carries)."""

import asyncio

import pytest
import redis.exceptions

from worker.service import health as service_health
from worker.service.health import watch_dependencies
from worker.stream import retry
from worker.stream.health import Health
from worker.stream.retry import REDIS_APPLY, retrying


@pytest.fixture(autouse=True)
def fast_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service_health, "CHECK_INTERVAL", 0.005)
    monkeypatch.setattr(retry, "FIRST_DELAY", 0.001)
    monkeypatch.setattr(retry, "MAX_DELAY", 0.005)


async def answers() -> bool:
    return True


async def test_redis_answering_its_ping_is_away_while_the_processs_calls_to_it_keep_failing() -> None:
    health = Health(stall_seconds=60)
    failing, elsewhere = retry.Failing(), retry.Failing()
    back = asyncio.Event()

    async def apply() -> str:
        if not back.is_set():
            raise redis.exceptions.ConnectionError("refused")
        return "applied"

    watch = asyncio.create_task(watch_dependencies(health, failing, answers, answers))
    try:
        with retry.policy(None, {}, failing):
            call = asyncio.create_task(retrying(REDIS_APPLY, apply))
        async with asyncio.timeout(10):
            while not (health.kafka_ok and not health.redis_ok):
                await asyncio.sleep(0.001)
        back.set()
        assert await call == "applied"
        async with asyncio.timeout(10):
            while not (health.kafka_ok and health.redis_ok):
                await asyncio.sleep(0.001)
        # Another process's failing calls are not this one's: its watch sees both answering.
        elsewhere.began("kafka")
        await asyncio.sleep(0.05)
        assert health.kafka_ok and health.redis_ok
    finally:
        watch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await watch
