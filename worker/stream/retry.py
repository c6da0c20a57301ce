"""Retrying through outages of Redis or Kafka: exponential backoff with jitter.

The long-running worker never skips work because a dependency is down: it waits, and the
partition stays uncommitted; only shutdown (cancellation) ends the wait. A one-shot command
(import, restore, rebuild, switch-over, topics) runs under a retry budget (`giving_up_after`):
once an operation has failed for that long, it raises `Unreachable`, which the command line
reports in one line (status 1). Every operation is named once here, with the dependency it
talks to, so that logs say which setting points at the unreachable one and the metric's
`operation` label has a fixed set of values.
"""

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aiokafka import errors
from aiokafka.errors import KafkaError
from redis.exceptions import BusyLoadingError, ConnectionError, TimeoutError

from worker import metrics
from worker.store.redis_store import ReplicasBehind, StoreUntrusted

log = logging.getLogger(__name__)
T = TypeVar("T")

# From 50 ms (a blip) doubling to 5 s (an outage): reconnects quickly, never hammers.
FIRST_DELAY = 0.05
MAX_DELAY = 5.0


class Unreachable(Exception):
    """A one-shot command's retry budget ran out: the message names the dependency and its setting."""


# Kafka errors that say the request itself can never succeed: a record larger than the
# broker or the producer takes, a topic name or codec it refuses, credentials or rights it
# does not grant. Waiting cures none of them, so they are raised at once. Every other Kafka
# error (a broker away, a leader moving, a timeout, a rebalance) is retried, whatever its
# `retriable` flag says: aiokafka leaves that flag unset on timeouts and unavailable brokers.
PERMANENT_KAFKA_ERRORS: tuple[type[KafkaError], ...] = (
    errors.MessageSizeTooLargeError,
    errors.RecordTooLargeError,
    errors.RecordListTooLargeError,
    errors.InvalidTopicError,
    errors.InvalidRequiredAcksError,
    errors.InvalidTimestampError,
    errors.CorruptRecordException,
    errors.UnsupportedCodecError,
    errors.UnsupportedVersionError,
    errors.UnsupportedForMessageFormatError,
    errors.PolicyViolationError,
    errors.InvalidGroupIdError,
    errors.TopicAuthorizationFailedError,
    errors.GroupAuthorizationFailedError,
    errors.ClusterAuthorizationFailedError,
    errors.TransactionalIdAuthorizationFailed,
    errors.SaslAuthenticationFailed,
    errors.AuthenticationFailedError,
    errors.AuthenticationMethodNotSupported,
    errors.UnsupportedSaslMechanismError,
    errors.IllegalSaslStateError,
    errors.KafkaConfigurationError,
    errors.IllegalArgumentError,
    # The idempotent producer's session is broken (a gap in its sequence numbers, another session
    # of its id): only a new producer, that is a restart, cures it.
    errors.OutOfOrderSequenceNumber,
    errors.ProducerFenced,
    errors.InvalidProducerEpoch,
)
TRANSIENT: tuple[type[BaseException], ...] = (
    ConnectionError,
    TimeoutError,
    BusyLoadingError,
    KafkaError,
    OSError,
    StoreUntrusted,
    ReplicasBehind,
)


def transient(error: BaseException) -> bool:
    """Whether waiting may cure `error` (a dependency away), as opposed to a request it will never take."""
    return isinstance(error, TRANSIENT) and not isinstance(error, PERMANENT_KAFKA_ERRORS)


@dataclass(frozen=True, slots=True)
class Operation:
    """A retried call: `label` and `dependency` (what it talks to) are its `rating_retries_total` labels."""

    label: str
    dependency: str  # "kafka" or "redis"


KAFKA_CONNECT = Operation("kafka_connect", "kafka")
KAFKA_JOIN = Operation("kafka_join_group", "kafka")
KAFKA_PUBLISH = Operation("kafka_publish", "kafka")
KAFKA_DEAD_LETTER = Operation("kafka_dead_letter", "kafka")
KAFKA_READ = Operation("kafka_read", "kafka")
KAFKA_ADMIN = Operation("kafka_admin", "kafka")
REDIS_CONNECT = Operation("redis_connect", "redis")
REDIS_READ = Operation("redis_read", "redis")
REDIS_APPLY = Operation("redis_apply", "redis")
REDIS_CLAIM = Operation("redis_claim", "redis")
REDIS_ACK = Operation("redis_ack", "redis")
REDIS_WAIT = Operation("redis_wait_replicas", "redis")
REDIS_COMMAND = Operation("redis_command", "redis")  # the operator commands' plain reads and writes
OPERATIONS = (
    KAFKA_CONNECT,
    KAFKA_JOIN,
    KAFKA_PUBLISH,
    KAFKA_DEAD_LETTER,
    KAFKA_READ,
    KAFKA_ADMIN,
    REDIS_CONNECT,
    REDIS_READ,
    REDIS_APPLY,
    REDIS_CLAIM,
    REDIS_ACK,
    REDIS_WAIT,
    REDIS_COMMAND,
)
# Their `rating_retries_total` series are created at 0 at start-up, by `worker.metrics.prepare`.


class Failing:
    """Which dependencies a process's retry loops are failing on right now.

    `worker.service.health` counts a dependency whose calls keep failing as away, even when its
    ping answers: a broker that answers metadata but refuses every produce request is away for
    this worker. The process creates one at start-up and gives it to its retry policy (`policy`),
    which carries it to every retry loop, and to the health watch: two processes, or two tests,
    never share one.
    """

    def __init__(self) -> None:
        self._loops: dict[str, int] = {}  # dependency -> the retry loops failing on it now

    def on(self, dependency: str) -> bool:
        """Whether a retried call to `dependency` is failing now (until it goes through or gives up)."""
        return self._loops.get(dependency, 0) > 0

    def began(self, dependency: str) -> None:
        self._loops[dependency] = self._loops.get(dependency, 0) + 1

    def ended(self, dependency: str) -> None:
        self._loops[dependency] -= 1


@dataclass(frozen=True, slots=True)
class Policy:
    """How long to retry (None: for ever), where each dependency is, as the settings say, and what
    tracks the failing retry loops (None: nothing watches them, as in a one-shot command)."""

    give_up_after: float | None = None
    where: Mapping[str, str] = field(default_factory=dict)  # dependency -> "SETTING=address"
    failing: Failing | None = None
    # A one-shot command's: told once per dependency, at its first failure, what it waits for.
    announce: Callable[[str], None] | None = None
    announced: set[str] = field(default_factory=set)


_FOREVER = Policy()
_policy: ContextVar[Policy] = ContextVar("retry_policy", default=_FOREVER)


@contextlib.contextmanager
def policy(
    give_up_after: float | None,
    where: Mapping[str, str],
    failing: Failing | None = None,
    announce: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Retry under this policy inside the block (tasks created inside inherit it); `announce` is
    given one line per dependency when a call to it first fails: what is awaited, for how long."""
    token = _policy.set(Policy(give_up_after, where, failing, announce))
    try:
        yield
    finally:
        _policy.reset(token)


def where(dependency: str) -> str:
    return _policy.get().where.get(dependency, dependency)


async def retrying(operation: Operation, attempt: Callable[..., Awaitable[T]], *args: Any) -> T:
    """`await attempt(*args)`, again and again until it does not fail with a transient error.

    Raises `Unreachable` when the policy's budget runs out, and any error that waiting cannot
    cure at once (a non-retriable Kafka error, a bug). While it retries, the policy's `Failing`
    says the operation's dependency is failing.
    """
    current = _policy.get()
    counted: list[bool] = []  # one entry once this loop counts in `current.failing`
    try:
        return await _retrying(operation, current, counted, attempt, *args)
    finally:
        if counted and current.failing is not None:
            current.failing.ended(operation.dependency)


async def _retrying(
    operation: Operation, current: Policy, counted: list[bool], attempt: Callable[..., Awaitable[T]], *args: Any
) -> T:
    delay = FIRST_DELAY
    failures = 0
    first_failure = 0.0
    while True:
        try:
            result = await attempt(*args)
        except Exception as e:
            if not transient(e):
                raise
            now = time.monotonic()
            if failures == 0:
                first_failure = now
                if current.failing is not None:
                    current.failing.began(operation.dependency)
                    counted.append(True)
                _announce(current, operation, e)
            failures += 1
            metrics.RETRIES.labels(operation.label, operation.dependency).inc()
            if isinstance(e, StoreUntrusted):
                metrics.STORE_UNTRUSTED.set(1)
            if current.give_up_after is not None and now - first_failure >= current.give_up_after:
                raise Unreachable(
                    f"{_what(operation, e)} for {now - first_failure:.0f} s, giving up ({type(e).__name__}: {e})"
                ) from e
            level = logging.WARNING if failures in (1, 10) or failures % 100 == 0 else logging.DEBUG
            if isinstance(e, StoreUntrusted):
                level = logging.ERROR if failures in (1, 10) or failures % 100 == 0 else logging.DEBUG
            log.log(
                level,
                "%s: %s failed (%s: %s); retry %d in %.2f s",
                _what(operation, e),
                operation.label,
                type(e).__name__,
                e,
                failures,
                delay,
            )
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))
            delay = min(delay * 2, MAX_DELAY)
        else:
            if failures and operation.dependency == "redis":
                metrics.STORE_UNTRUSTED.set(0)  # a Redis call went through: the store is trusted again
            return result


def _announce(current: Policy, operation: Operation, error: BaseException) -> None:
    if current.announce is None or operation.dependency in current.announced:
        return
    current.announced.add(operation.dependency)
    bound = "until it answers" if current.give_up_after is None else f"up to {current.give_up_after:g} s"
    current.announce(f"{_what(operation, error)}: waiting {bound} (RATING_COMMAND_RETRY_SECONDS)")


def _what(operation: Operation, error: BaseException) -> str:
    if isinstance(error, StoreUntrusted):
        return "the Redis store is not trusted: run `rating-worker restore`"
    if isinstance(error, ReplicasBehind):
        return f"Redis replicas behind ({where('redis')})"
    name = "Kafka" if operation.dependency == "kafka" else "Redis"
    return f"{name} unreachable ({where(operation.dependency)})"
