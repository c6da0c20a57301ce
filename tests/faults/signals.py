"""Signals to the broker, Redis or a worker at the most delicate moment: while a worker publishes."""

import asyncio
import os
import signal
import sys

from tests.support.stack import Stack
from worker.store import keys

PREFIX = "rating:"  # the worker's default RATING_REDIS_KEY_PREFIX


# Run in its own process, so that nothing (our event loop, the GIL) comes between seeing the
# leases and sending the signal. A worker holds the leases of a batch's outboxes from its apply
# script to the acknowledgement of their last round; it is known to have its apply's reply (a
# large one, which Redis may still be writing) once it released some of them: the moment, then,
# when the worker is in its rounds of sends to Kafka and acknowledgements in Redis.
_SIGNAL_WHEN_PUBLISHING = """
import collections, os, sys, time
import redis
url, pattern, pid, sig, least, timeout = sys.argv[1:]
client = redis.Redis.from_url(url, socket_timeout=5)
tokens = client.register_script(
    "local out = {} for i, k in ipairs(redis.call('KEYS', ARGV[1])) do out[i] = redis.call('GET', k) end return out"
)
deadline = time.monotonic() + float(timeout)
before = collections.Counter()
while time.monotonic() < deadline:
    held = collections.Counter(tokens(args=[pattern]))
    if any(before[t] > n >= int(least) for t, n in held.items()):
        os.kill(int(pid), int(sig))
        print(max(held.values()))
        sys.exit(0)
    before = held
sys.exit(1)
"""


async def signal_when_publishing(stack: Stack, pid: int, sig: signal.Signals, least: int, timeout: float = 20) -> int:
    """Send `sig` to process `pid` (redis-server or the broker) while a worker is in its publication
    rounds with at least `least` outboxes still to finish. Returns how many leases that worker held."""
    pattern = f"{PREFIX}{keys.LEASE}*"
    args = [stack.redis.url, pattern, str(pid), str(int(sig)), str(least), str(timeout)]
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _SIGNAL_WHEN_PUBLISHING, *args, stdout=asyncio.subprocess.PIPE
    )
    try:
        out, _ = await asyncio.wait_for(process.communicate(), timeout + 10)
    finally:  # never left behind, even when the test is interrupted here
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, f"no worker was publishing {least} outboxes within {timeout} s"
    return int(out)


def thaw_process(pid: int) -> None:
    os.kill(pid, signal.SIGCONT)
