"""`worker.stream.retry.retrying`: transient failures (a dependency away) are retried until the call
succeeds; a request Kafka will never take is raised at once; a one-shot command's policy gives
up with `Unreachable`, naming the setting; every retry is counted under the operation's label."""

import asyncio
import time

import pytest
import redis.exceptions
from aiokafka import errors
from prometheus_client import REGISTRY

from worker import metrics
from worker.engine.decoder import ErrorKind
from worker.stream import retry
from worker.stream.retry import Operation, Unreachable, retrying
from worker.systems.arena.rules import ArenaRules

KAFKA_OP = Operation("test_kafka_op", "kafka")
REDIS_OP = Operation("test_redis_op", "redis")


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "FIRST_DELAY", 0.001)
    monkeypatch.setattr(retry, "MAX_DELAY", 0.02)


class Flaky:
    """An attempt that fails with `error` the first `failures` times, then returns "done"."""

    def __init__(self, error: Exception | None, failures: int) -> None:
        self.error = error
        self.failures = failures
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.error is not None and self.calls <= self.failures:
            raise self.error
        return "done"


def retries(operation: Operation) -> float:
    labels = {"operation": operation.label, "dependency": operation.dependency}
    return REGISTRY.get_sample_value("rating_retries_total", labels) or 0.0


@pytest.mark.parametrize(
    ("operation", "error"),
    [
        (REDIS_OP, redis.exceptions.ConnectionError("Connection refused")),
        (REDIS_OP, redis.exceptions.TimeoutError("Timeout reading from socket")),
        (KAFKA_OP, errors.KafkaConnectionError("Unable to bootstrap from [('h', 9092)]")),
        (KAFKA_OP, errors.KafkaTimeoutError()),
        (KAFKA_OP, errors.NotLeaderForPartitionError()),
        (KAFKA_OP, ConnectionRefusedError(111, "Connection refused")),
    ],
    ids=lambda p: type(p).__name__ if isinstance(p, Exception) else p.label,
)
async def test_a_transient_error_is_retried_until_the_attempt_succeeds(operation: Operation, error: Exception) -> None:
    attempt = Flaky(error, failures=5)
    assert await retrying(operation, attempt) == "done"
    assert attempt.calls == 6


@pytest.mark.parametrize(
    "error",
    [
        errors.MessageSizeTooLargeError(),
        errors.RecordTooLargeError(),
        errors.TopicAuthorizationFailedError(),
        errors.SaslAuthenticationFailed(),
        errors.InvalidTopicError(),
    ],
    ids=lambda e: type(e).__name__,
)
async def test_a_permanent_kafka_error_is_raised_at_once_without_retrying(error: Exception) -> None:
    attempt = Flaky(error, failures=1000)
    before = retries(KAFKA_OP)
    with pytest.raises(type(error)):
        await retrying(KAFKA_OP, attempt)
    assert attempt.calls == 1
    assert retries(KAFKA_OP) == before


async def test_a_bug_is_raised_at_once_without_retrying() -> None:
    attempt = Flaky(KeyError("state"), failures=1000)
    with pytest.raises(KeyError):
        await retrying(REDIS_OP, attempt)
    assert attempt.calls == 1


async def test_without_a_budget_a_long_outage_is_retried_to_the_end() -> None:
    # The long-running worker's policy (the default): no give-up, however many failures.
    attempt = Flaky(redis.exceptions.ConnectionError("down"), failures=60)
    assert await retrying(REDIS_OP, attempt) == "done"
    assert attempt.calls == 61


async def test_under_a_give_up_policy_a_call_that_always_fails_raises_unreachable_naming_the_setting() -> None:
    attempt = Flaky(redis.exceptions.ConnectionError("Error 111 connecting to h:1. Connection refused."), 10**9)
    started = time.monotonic()
    with (
        pytest.raises(Unreachable) as raised,
        retry.policy(give_up_after=0.3, where={"redis": "RATING_REDIS_URL -> h:1"}),
    ):
        await retrying(REDIS_OP, attempt)
    elapsed = time.monotonic() - started
    assert 0.3 <= elapsed < 2.0
    message = str(raised.value)
    assert message.startswith("Redis unreachable (RATING_REDIS_URL -> h:1)"), message
    assert "giving up" in message
    assert "ConnectionError" in message
    assert isinstance(raised.value.__cause__, redis.exceptions.ConnectionError)
    assert attempt.calls > 1  # it did retry before giving up


async def test_a_kafka_operation_names_the_kafka_setting_when_it_gives_up() -> None:
    attempt = Flaky(errors.KafkaConnectionError("Unable to bootstrap"), 10**9)
    where = {"kafka": "RATING_KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:1", "redis": "RATING_REDIS_URL -> h:1"}
    with (
        pytest.raises(Unreachable, match=r"^Kafka unreachable \(RATING_KAFKA_BOOTSTRAP_SERVERS=127\.0\.0\.1:1\)"),
        retry.policy(give_up_after=0.2, where=where),
    ):
        await retrying(KAFKA_OP, attempt)


async def test_under_a_give_up_policy_a_call_that_recovers_in_time_succeeds() -> None:
    attempt = Flaky(redis.exceptions.ConnectionError("down"), failures=3)
    with retry.policy(give_up_after=5.0, where={"redis": "RATING_REDIS_URL -> h:1"}):
        assert await retrying(REDIS_OP, attempt) == "done"
    assert attempt.calls == 4


async def test_each_retry_is_counted_under_the_operations_label() -> None:
    first, second = Operation("test_label_one", "redis"), Operation("test_label_two", "kafka")
    before_first, before_second = retries(first), retries(second)
    await retrying(first, Flaky(redis.exceptions.ConnectionError("down"), failures=3))
    await retrying(second, Flaky(errors.KafkaTimeoutError(), failures=2))
    await retrying(second, Flaky(None, failures=0))  # a success at the first attempt is no retry
    assert retries(first) - before_first == 3
    assert retries(second) - before_second == 2


def test_every_operations_series_exists_once_prepared_labelled_with_its_dependency() -> None:
    """An alert on `increase()` sees the first retry only if the series was there before it: the
    process's start-up (`metrics.prepare`) creates them."""
    metrics.prepare(ArenaRules(), ErrorKind, retry.OPERATIONS)
    exported = {
        (sample.labels["operation"], sample.labels["dependency"])
        for family in REGISTRY.collect()
        if family.name == "rating_retries"
        for sample in family.samples
        if sample.name == "rating_retries_total"
    }
    assert {(op.label, op.dependency) for op in retry.OPERATIONS} <= exported
    assert ("redis_read", "redis") in exported and ("kafka_publish", "kafka") in exported


def test_the_workers_operations_have_distinct_labels_and_known_dependencies() -> None:
    labels = [op.label for op in retry.OPERATIONS]
    assert len(set(labels)) == len(labels)
    assert {op.dependency for op in retry.OPERATIONS} == {"kafka", "redis"}


async def test_a_dependency_is_failing_while_a_call_to_it_keeps_failing_and_not_after() -> None:
    failing = retry.Failing()
    seen: list[tuple[bool, bool]] = []

    async def attempt() -> str:
        seen.append((failing.on("redis"), failing.on("kafka")))
        if len(seen) <= 2:
            raise redis.exceptions.ConnectionError("away")
        return "done"

    assert not failing.on("redis")
    with retry.policy(None, {}, failing):
        assert await retrying(REDIS_OP, attempt) == "done"
    assert seen == [(False, False), (True, False), (True, False)]  # from the first failure on, Redis only
    assert not failing.on("redis")
    # Also when the loop ends without success: given up, or a bug raised.
    with retry.policy(0.01, {}, failing), pytest.raises(Unreachable):
        await retrying(REDIS_OP, Flaky(redis.exceptions.ConnectionError("away"), 10**6))
    assert not failing.on("redis")


async def test_two_processes_failing_dependencies_are_their_own() -> None:
    """Each process's retry loops count in its own `Failing` (the one its policy carries): Redis
    failing for one process and Kafka for another, neither sees the other's, as two tests' never
    mix."""
    mine, theirs = retry.Failing(), retry.Failing()
    back = asyncio.Event()

    async def away(error: Exception) -> str:
        if not back.is_set():
            raise error
        return "done"

    with retry.policy(None, {}, mine):
        my_call = asyncio.create_task(retrying(REDIS_OP, away, redis.exceptions.ConnectionError("away")))
    with retry.policy(None, {}, theirs):
        their_call = asyncio.create_task(retrying(KAFKA_OP, away, errors.KafkaConnectionError("away")))
    while not (mine.on("redis") and theirs.on("kafka")):
        await asyncio.sleep(0.001)
    assert not mine.on("kafka") and not theirs.on("redis")
    back.set()
    assert await my_call == "done" and await their_call == "done"
    assert not any(f.on(d) for f in (mine, theirs) for d in ("redis", "kafka"))


async def test_without_a_tracker_a_failing_call_is_retried_all_the_same() -> None:
    """A one-shot command's policy carries no `Failing` (no health watch reads it)."""
    with retry.policy(5.0, {}):
        assert await retrying(REDIS_OP, Flaky(redis.exceptions.ConnectionError("away"), 3)) == "done"
