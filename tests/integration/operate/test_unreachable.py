"""Every one-shot command (topics, restore, rebuild, switch-over, import) with Kafka or Redis
unreachable gives up after RATING_COMMAND_RETRY_SECONDS: status 1 and one line on stderr,
`rating-worker: error: ...`, naming the setting that points at the unreachable dependency.

RATING_LOG_LEVEL=error in every run: the commands log to stderr (worker/logs.py), and each
retried call logs a warning there at the default level (info), so the one line is the error
only when warnings are not logged.

Each command runs once per case (cached), and two tests read the run: that it gave up with
the right line, status and time; and that this line is all of stderr.
"""

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

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
    done = subprocess.run(
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
def test_a_one_shot_command_with_its_dependency_unreachable_prints_only_the_error_line(
    stack: Stack, missing: str, args: tuple[str, ...]
) -> None:
    done = run(stack, missing, args)
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("rating-worker: error: "), done.stderr


async def test_a_one_shot_command_gives_up_when_no_replica_acknowledges_its_writes(stack: Stack) -> None:
    """With RATING_REDIS_WAIT_REPLICAS and no replica, `import` waits for the retry budget, then
    exits with one line naming the setting (it used to wait for ever)."""
    await stack.create_topics()
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "worker", "import", SEED],
        env=stack.env(redis_wait_replicas=1, redis_wait_timeout_ms=100, command_retry_seconds=RETRY, log_level="error"),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.count(b"\n") == 1, done.stderr
    assert b"Redis replicas behind" in done.stderr and b"RATING_REDIS_WAIT_REPLICAS=1" in done.stderr
    assert time.monotonic() - started < BOUND
