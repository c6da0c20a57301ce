"""Retrying through outages of Redis or Kafka: exponential backoff with jitter, no give-up.

The worker never skips work because a dependency is down: it waits, and the partition
stays uncommitted. Only shutdown (cancellation) ends the wait.
"""

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from aiokafka.errors import KafkaError
from redis.exceptions import BusyLoadingError, ConnectionError, TimeoutError

from worker import metrics

log = logging.getLogger(__name__)
T = TypeVar("T")

# From 50 ms (a blip) doubling to 5 s (an outage): reconnects quickly, never hammers.
FIRST_DELAY = 0.05
MAX_DELAY = 5.0
TRANSIENT: tuple[type[BaseException], ...] = (ConnectionError, TimeoutError, BusyLoadingError, KafkaError, OSError)


async def retrying(what: str, attempt: Callable[..., Awaitable[T]], *args: Any) -> T:
    """`await attempt(*args)`, again and again until it does not fail with a transient error.

    `what` names the operation in logs and in the `rating_retries_total` label: keep it fixed.
    """
    delay = FIRST_DELAY
    failures = 0
    while True:
        try:
            return await attempt(*args)
        except TRANSIENT as e:
            failures += 1
            metrics.RETRIES.labels(what.split(" ", maxsplit=1)[0]).inc()
            level = logging.WARNING if failures in (1, 10) or failures % 100 == 0 else logging.DEBUG
            log.log(level, "%s failed (%s: %s); retry %d in %.2f s", what, type(e).__name__, e, failures, delay)
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))
            delay = min(delay * 2, MAX_DELAY)
