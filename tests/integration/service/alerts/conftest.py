"""The healthy neighbour deployment every alert test records its situation beside."""

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.integration.service.alerts.recording import record_healthy
from tests.support.backends import KafkaService
from tests.support.processes import Processes
from tests.support.prometheus import Recording
from tests.support.stack import Stack


# Recorded once for the module, on a loop of the module's own (the recording is plain data).
@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def neighbour(
    broker: KafkaService, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> AsyncIterator[Recording]:
    """A healthy deployment's recording: steady valid games, every one rated."""
    owned = Processes(f"the healthy neighbour of {request.module.__name__}")
    tmp = tmp_path_factory.mktemp("neighbour")
    stack = Stack(broker, owned.redis(tmp / "redis"), tmp, "neighbour", owned)
    try:
        recording = await record_healthy(stack)
        assert (recording.last("rating_changes_published_total", kind="rated_game", category="blitz") or 0) > 0
        yield recording
    finally:
        stack.close()
        owned.kill_all()
