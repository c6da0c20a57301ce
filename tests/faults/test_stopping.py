"""`rating-worker run` stops on SIGTERM within RATING_SHUTDOWN_GRACE_SECONDS + 5 s whatever its
dependencies do: unreachable from the start, killed or frozen while it consumes. So does a
one-shot command retrying an unreachable dependency.

Exit status: 0 when nothing is in flight (no game produced, or the worker not yet
consuming); the tests that put a batch in flight keep Redis down under it, so the batch can
only be abandoned when the grace runs out: status 1. Each test checks its precondition (the
retry logged, the batch in flight on /metrics) before the signal.
"""

import asyncio
import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.kafka import produce
from tests.support.processes import Processes
from tests.support.stack import Stack, require_local
from worker.embedded.stack import Broker, create_topics, free_port
from worker.service.connections import CLOSE_SECONDS, begin_closing, close_quietly

pytestmark = [pytest.mark.integration, pytest.mark.faults]

GRACE = 3.0  # RATING_SHUTDOWN_GRACE_SECONDS in every test here
CLOSE = CLOSE_SECONDS  # the documented bound is the grace plus this, plus the process's exit
# The process's own exit after its last close (the interpreter's teardown), which the worker's
# budgets do not count: on a loaded 2-core machine it took 0.15 s once (CI, 2026-12-01).
EXIT = 1.0
BOUND = GRACE + CLOSE + EXIT
REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "samples/seed.csv"


def game(n: int) -> bytes:
    return json.dumps(
        {
            "event_id": f"e{n}",
            "game_id": f"stop{n}",
            "finished_at": "2026-11-29T10:00:00Z",
            "rated": True,
            "time_control": {"base_seconds": 300, "increment_seconds": 0},
            "white_id": "alice",
            "black_id": "bob",
            "result": "1-0",
            "termination": "checkmate",
        }
    ).encode()


def log_of(stack: Stack) -> Path:
    return stack.tmp / "worker-0.log"


def wait_for_log(worker: subprocess.Popen[bytes], log: Path, text: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        assert worker.poll() is None, f"the worker exited ({worker.returncode}):\n{log.read_text()[-3000:]}"
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not logged within {timeout} s:\n{log.read_text(errors='replace')[-3000:]}")


def in_flight(metrics_port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=3) as response:
        for line in response.read().decode().splitlines():
            if line.startswith('rating_games_in_flight{system="arena"} '):  # every series has its system
                return float(line.split()[-1])
    return 0.0


def wait_in_flight(worker: subprocess.Popen[bytes], log: Path, metrics_port: int, timeout: float = 30.0) -> None:
    """Until /metrics shows a batch fetched and not committed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if in_flight(metrics_port) > 0:
            return
        assert worker.poll() is None, f"the worker exited ({worker.returncode}):\n{log.read_text()[-3000:]}"
        time.sleep(0.1)
    raise AssertionError(f"no batch in flight within {timeout} s:\n{log.read_text(errors='replace')[-3000:]}")


def stop(worker: subprocess.Popen[bytes], log: Path, *signals: signal.Signals) -> tuple[int, float]:
    """Send the signals (back to back); the exit status and the seconds until the process ended."""
    assert worker.poll() is None, f"the worker exited before the signal:\n{log.read_text()[-3000:]}"
    started = time.monotonic()
    for sig in signals or (signal.SIGTERM,):
        worker.send_signal(sig)
    try:
        status = worker.wait(timeout=BOUND + 10)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()
        raise AssertionError(f"still running {BOUND + 10} s after the signal:\n{log.read_text()[-3000:]}") from None
    return status, time.monotonic() - started


@pytest.fixture
def own_broker(processes: Processes) -> Broker:
    """A broker of the test's own, to kill or freeze (the module's broker is shared): killed with the
    test's processes, frozen or not."""
    return processes.broker()


async def consuming(stack: Stack, broker: Broker, **settings: object) -> subprocess.Popen[bytes]:
    """A worker on `broker` (and the stack's Redis) that holds its partition; idle: nothing produced."""
    topics = {stack.games_topic: 1, stack.ratings_topic: 2, stack.dlq_topic: 1}
    await create_topics(broker.bootstrap, topics)
    worker = stack.start_worker(kafka_bootstrap_servers=broker.bootstrap, shutdown_grace_seconds=GRACE, **settings)
    wait_for_log(worker, log_of(stack), '"partitions assigned: [')
    wait_for_log(worker, log_of(stack), '"consuming ')
    return worker


# Before the first connection succeeds.


@pytest.mark.parametrize("unreachable", ["kafka", "redis"])
def test_sigterm_while_a_dependency_was_never_reachable_exits_0_at_once_and_the_log_names_the_setting(
    stack: Stack, unreachable: str
) -> None:
    port = free_port()  # nothing listens there
    if unreachable == "kafka":
        setting = {"kafka_bootstrap_servers": f"127.0.0.1:{port}"}
        logged = f"Kafka unreachable (RATING_KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:{port})"
    else:
        setting = {"redis_url": f"redis://127.0.0.1:{port}/0"}
        logged = f"Redis unreachable (RATING_REDIS_URL -> 127.0.0.1:{port})"
    worker = stack.start_worker(**setting, shutdown_grace_seconds=GRACE)
    started = time.monotonic()
    wait_for_log(worker, log_of(stack), logged)
    time.sleep(max(0.0, 2.0 - (time.monotonic() - started)))
    status, took = stop(worker, log_of(stack))
    assert took < BOUND, f"took {took:.1f} s"
    assert status == 0  # nothing was consumed, so nothing was in flight


def test_sigint_twice_during_start_up_exits_at_once(stack: Stack) -> None:
    address = f"127.0.0.1:{free_port()}"
    worker = stack.start_worker(kafka_bootstrap_servers=address, shutdown_grace_seconds=GRACE)
    wait_for_log(worker, log_of(stack), f"Kafka unreachable (RATING_KAFKA_BOOTSTRAP_SERVERS={address})")
    status, took = stop(worker, log_of(stack), signal.SIGINT, signal.SIGINT)
    assert took < 3.0, f"took {took:.1f} s"
    assert status == 0  # nothing was in flight
    assert "Traceback" not in log_of(stack).read_text()


# While it consumes, idle: the broker killed or frozen, Redis killed.


async def test_sigterm_after_the_broker_was_killed_while_consuming_exits_0_within_the_bound(
    stack: Stack, own_broker: Broker
) -> None:
    worker = await consuming(stack, own_broker)
    own_broker.kill()
    time.sleep(1.0)
    status, took = stop(worker, log_of(stack))
    assert took < BOUND, f"took {took:.1f} s"
    assert status == 0  # idle: no batch in flight


async def test_sigterm_after_the_broker_was_frozen_while_consuming_exits_0_within_the_bound(
    stack: Stack, own_broker: Broker
) -> None:
    worker = await consuming(stack, own_broker)
    own_broker.freeze()
    time.sleep(1.0)
    status, took = stop(worker, log_of(stack))
    assert took < BOUND, f"took {took:.1f} s"
    assert status == 0  # idle: no batch in flight; only closing the clients waits on the frozen broker


async def test_sigterm_after_redis_was_killed_while_consuming_exits_0_within_the_bound(stack: Stack) -> None:
    _, redis_server = require_local(stack)
    await stack.create_topics()
    worker = stack.start_worker(shutdown_grace_seconds=GRACE)
    wait_for_log(worker, log_of(stack), '"partitions assigned: [')
    wait_for_log(worker, log_of(stack), '"consuming ')
    redis_server.kill()
    time.sleep(1.0)
    status, took = stop(worker, log_of(stack))
    assert took < BOUND, f"took {took:.1f} s"
    assert status == 0  # idle: no batch in flight


# While it consumes, a batch in flight that cannot finish: the grace runs out.


async def test_sigterm_with_a_batch_stuck_on_a_killed_redis_abandons_it_after_the_grace_with_status_1(
    stack: Stack,
) -> None:
    _, redis_server = require_local(stack)
    port = free_port()
    await stack.create_topics()
    worker = stack.start_worker(shutdown_grace_seconds=GRACE, metrics_port=port)
    wait_for_log(worker, log_of(stack), '"partitions assigned: [')
    wait_for_log(worker, log_of(stack), '"consuming ')
    redis_server.kill()
    await stack.produce([game(n) for n in range(5)])
    wait_in_flight(worker, log_of(stack), port)
    status, took = stop(worker, log_of(stack))
    assert GRACE - 0.5 <= took < BOUND, f"took {took:.1f} s"  # it waited for the batch, up to the grace
    assert status == 1, log_of(stack).read_text()[-4000:]  # the grace ran out: the batch was abandoned
    assert "shutdown grace of 3 s ran out" in log_of(stack).read_text()


async def test_sigterm_with_a_batch_stuck_on_redis_down_and_the_broker_frozen_exits_1_within_the_bound(
    stack: Stack, own_broker: Broker
) -> None:
    _, redis_server = require_local(stack)
    port = free_port()
    worker = await consuming(stack, own_broker, metrics_port=port)
    redis_server.kill()
    await produce(own_broker.bootstrap, stack.games_topic, [game(n) for n in range(5)])
    wait_in_flight(worker, log_of(stack), port)
    own_broker.freeze()
    time.sleep(1.0)
    status, took = stop(worker, log_of(stack))
    assert GRACE - 0.5 <= took < BOUND, f"took {took:.1f} s"
    assert status == 1, log_of(stack).read_text()[-4000:]  # the grace ran out: the batch was abandoned
    assert "shutdown grace of 3 s ran out" in log_of(stack).read_text()


# Closing the clients: one whose stop fails must not stop the others being closed.


async def test_a_close_that_raises_cancelled_error_by_itself_does_not_skip_the_other_closes() -> None:
    closed: list[str] = []

    async def stop_raising() -> None:
        raise asyncio.CancelledError  # as aiokafka's Fetcher.close() re-raises its tasks' cancellation

    async def stop_other() -> None:
        closed.append("other")

    other = stop_other()
    try:
        await close_quietly(stop_raising(), other)
    finally:
        other.close()  # a no-op once awaited; left unawaited, it would only warn
    assert closed == ["other"]


@pytest.mark.timeout(5)
async def test_a_close_interrupted_by_a_cancel_of_the_task_still_cancels_it() -> None:
    async def stop_slowly() -> None:
        await asyncio.sleep(10)

    task = asyncio.create_task(close_quietly(stop_slowly()))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()


@pytest.mark.timeout(30)
async def test_closes_share_one_budget_once_closing_began_and_run_together() -> None:
    """A stop closes the consumer, then the producer and Redis: within CLOSE_SECONDS in all."""

    async def hang() -> None:
        await asyncio.sleep(60)

    started = time.monotonic()
    begin_closing()
    await close_quietly(hang())  # the consumer: takes the whole budget
    await close_quietly(hang(), hang())  # the producer and Redis: nothing left
    took = time.monotonic() - started
    assert CLOSE - 0.5 < took < CLOSE + 1.0


# A one-shot command retrying an unreachable dependency.


def test_sigterm_stops_an_import_retrying_an_unreachable_redis_with_its_line_and_status_1(
    stack: Stack, processes: Processes
) -> None:
    # RATING_LOG_LEVEL=error: the retry warnings are log lines on stderr; the error is the one line.
    env = stack.env(redis_url=f"redis://127.0.0.1:{free_port()}/0", command_retry_seconds=30, log_level="error")
    command = processes.popen(
        "rating-worker import",
        [sys.executable, "-m", "worker", "import", str(SEED)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    time.sleep(2.0)  # in the retries by now
    assert command.poll() is None, command.communicate()
    started = time.monotonic()
    command.send_signal(signal.SIGTERM)
    out, err = command.communicate(timeout=6)  # (still running after that: killed by the fixture)
    took = time.monotonic() - started
    assert took < 6.0
    assert command.returncode == 1, err
    waiting, error = err.splitlines()  # what it waited for, then why it stopped; nothing else
    assert waiting.startswith(b"rating-worker: Redis unreachable") and b"waiting up to 30 s" in waiting, err
    assert error.startswith(b"rating-worker: error: interrupted (re-running it is safe"), err
    assert out == b""
