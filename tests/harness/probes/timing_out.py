"""A test that times out while its fixtures' processes run: tests/harness/test_processes.py runs it
in a pytest of its own (its name does not start with test_, so the suite never collects it) and
checks that they were all killed, and that the report shows the workers' log tails.

It writes the pids of the worker, the redis-server and the broker to $PROBE_PIDS.
"""

import asyncio
import os
from pathlib import Path

import pytest

from tests.support.stack import Stack, require_local

PROBE_PIDS = "PROBE_PIDS"


@pytest.mark.timeout(3)
async def test_a_test_that_hangs_with_a_worker_running(stack: Stack) -> None:
    broker, redis_server = require_local(stack)
    worker = stack.start_worker()
    pids = [
        worker.pid,
        redis_server.process.pid if redis_server.process else 0,
        broker.process.pid if broker.process else 0,
    ]
    Path(os.environ[PROBE_PIDS]).write_text(" ".join(map(str, pids)))
    await asyncio.sleep(60)  # hangs: the time limit fails it
