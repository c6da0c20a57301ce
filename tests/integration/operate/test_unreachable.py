"""Every one-shot command (topics, restore, rebuild, switch-over, import) with Kafka or Redis
unreachable says at once what it waits for and for how long, then gives up after
RATING_COMMAND_RETRY_SECONDS: status 1 and one more line on stderr, `rating-worker: error: ...`,
naming the setting that points at the unreachable dependency.

RATING_LOG_LEVEL=error in every run: the commands log to stderr (worker/logs.py), and each
retried call logs a warning there at the default level (info), so the two lines are all of stderr
only when warnings are not logged.

Each command runs once per case (cached), and two tests read the run: that it gave up with
the right line, status and time; and that the waiting line and this line are all of stderr.
"""

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import commands
from tests.support.stack import Stack
from worker.embedded.stack import free_port

pytestmark = pytest.mark.integration

RETRY = 2.0  # RATING_COMMAND_RETRY_SECONDS
BOUND = RETRY + 10.0  # giving up, plus starting Python and closing the clients
REPO = Path(__file__).resolve().parents[3]
SEED = str(REPO / "samples/seed.csv")

NO_BROKER = "kafka"
NO_REDIS = "redis"

# (the dependency missing, the command)
CASES: list[tuple[str, tuple[str, ...]]] = [
    (NO_BROKER, ("topics", "--partitions", "1", "--replication", "1")),
    (NO_BROKER, ("restore",)),
    (NO_REDIS, ("restore",)),
    (NO_BROKER, ("rebuild", "--seed", SEED)),
    (NO_REDIS, ("rebuild", "--seed", SEED)),
    (NO_REDIS, ("switch-over",)),
    (NO_BROKER, ("import", SEED)),
    (NO_REDIS, ("import", SEED)),
]


def case_id(missing: str, args: tuple[str, ...]) -> str:
    return f"{args[0]}-no-{'broker' if missing == NO_BROKER else 'redis'}"


def cases() -> list[object]:
    return [pytest.param(missing, args, id=case_id(missing, args)) for missing, args in CASES]


@dataclass(frozen=True)
class Run:
    status: int
    stderr: str
    stdout: bytes
    took: float
    address: str  # how the error must name the unreachable dependency


_runs: dict[tuple[str, tuple[str, ...]], Run] = {}


def run(stack: Stack, missing: str, args: tuple[str, ...]) -> Run:
    """`rating-worker ARGS` with `missing` pointed at a port where nothing listens (once per case)."""
    if (missing, args) in _runs:
        return _runs[missing, args]
    port = free_port()
    if missing == NO_BROKER:
        address = f"Kafka unreachable (RATING_KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:{port})"
        env = stack.env(kafka_bootstrap_servers=f"127.0.0.1:{port}", command_retry_seconds=RETRY, log_level="error")
    else:
        address = f"Redis unreachable (RATING_REDIS_URL -> 127.0.0.1:{port})"
        env = stack.env(redis_url=f"redis://127.0.0.1:{port}/0", command_retry_seconds=RETRY, log_level="error")
    started = time.monotonic()
    done = commands.run(
        [sys.executable, "-m", "worker", *args], env=env, capture_output=True, timeout=BOUND + 30, check=False
    )
    took = time.monotonic() - started
    result = Run(done.returncode, done.stderr.decode(errors="replace"), done.stdout, took, address)
    _runs[missing, args] = result
    return result


@pytest.mark.parametrize(("missing", "args"), cases())
def test_a_one_shot_command_with_its_dependency_unreachable_gives_up_with_status_1_naming_the_setting(
    stack: Stack, missing: str, args: tuple[str, ...]
) -> None:
    done = run(stack, missing, args)
    assert done.status == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("rating-worker: error: "), done.stderr
    assert done.address in last, done.stderr
    assert "giving up" in last, done.stderr
    assert RETRY <= done.took < BOUND, f"took {done.took:.1f} s"
    assert done.stdout == b""


@pytest.mark.parametrize(("missing", "args"), cases())
def test_a_one_shot_command_with_its_dependency_unreachable_says_what_it_waits_for_then_the_error_line(
    stack: Stack, missing: str, args: tuple[str, ...]
) -> None:
    done = run(stack, missing, args)
    waiting, error = done.stderr.splitlines()  # and nothing else
    assert waiting == f"rating-worker: {done.address}: waiting up to {RETRY:.0f} s (RATING_COMMAND_RETRY_SECONDS)"
    assert error.startswith("rating-worker: error: "), done.stderr


async def test_a_one_shot_command_gives_up_when_no_replica_acknowledges_its_writes(stack: Stack) -> None:
    """With RATING_REDIS_WAIT_REPLICAS and no replica, `import` waits for the retry budget, then
    exits with one line naming the setting (it used to wait for ever)."""
    await stack.create_topics()
    started = time.monotonic()
    done = commands.run(
        [sys.executable, "-m", "worker", "import", SEED],
        env=stack.env(redis_wait_replicas=1, redis_wait_timeout_ms=100, command_retry_seconds=RETRY, log_level="error"),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    waiting, error = done.stderr.splitlines()
    assert waiting.startswith(b"rating-worker: Redis replicas behind") and b"waiting up to 2 s" in waiting
    assert b"Redis replicas behind" in error and b"RATING_REDIS_WAIT_REPLICAS=1" in error
    assert time.monotonic() - started < BOUND


def check_unreachable(retry: float, *options: str) -> subprocess.Popen[str]:
    """`rating-worker check` with Kafka and Redis pointed where nothing listens, at the default log level."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RATING_")} | {
        "RATING_KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{free_port()}",
        "RATING_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
        "RATING_COMMAND_RETRY_SECONDS": str(retry),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "worker", "check", *options],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_check_prints_what_it_waits_for_and_its_verdict_and_the_log_lines_only_when_asked() -> None:
    quiet, logged = check_unreachable(RETRY), check_unreachable(RETRY, "--logs")
    out, err = quiet.communicate(timeout=BOUND + 30)
    assert quiet.returncode == 1
    waiting = [line for line in err.splitlines() if "waiting up to 2 s (RATING_COMMAND_RETRY_SECONDS)" in line]
    assert sorted(line.split(" unreachable")[0] for line in waiting) == ["rating-worker: Kafka", "rating-worker: Redis"]
    assert err.splitlines()[len(waiting) :] == [
        "check: 0 ok, 2 failed, 0 unknown; 2 fatal: the worker cannot run correctly"
    ]
    assert [line.split()[:2] for line in out.splitlines()] == [["failed", "kafka:"], ["failed", "redis:"]]
    out_logged, err_logged = logged.communicate(timeout=BOUND + 30)
    assert logged.returncode == 1 and out_logged.splitlines()[0].startswith("failed   kafka:")
    assert '"level": "warning"' in err_logged and "failed (" in err_logged  # the retries' log lines


def test_an_interrupted_check_says_nothing_was_changed() -> None:
    command = check_unreachable(30.0)
    time.sleep(2.5)  # waiting for Kafka and Redis by now
    assert command.poll() is None
    command.send_signal(signal.SIGINT)
    out, err = command.communicate(timeout=10)
    assert command.returncode == 1
    assert err.splitlines()[-1] == "rating-worker: error: interrupted; nothing was changed (it only reads)"
    assert out == ""
