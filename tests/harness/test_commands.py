"""The fork server runs a worker command as `python -m worker` does: the same status, stdout and
stderr, for its arguments, environment, working directory and stdin; a timeout kills it; what it
cannot run the same (other `PYTHON*` variables, another checkout) runs as a plain subprocess; a
worker it started is handled as a child process is."""

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support import commands
from worker.embedded.stack import free_port

pytestmark = pytest.mark.skipif(
    os.environ.get(commands.VARIABLE) == "0", reason="RATING_TEST_FORKSERVER=0: every command runs as a subprocess"
)

WORKER = commands.WORKER


def environment(**settings: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("RATING_")} | settings


def both(args: list[str], env: dict[str, str], **options: object) -> tuple[object, object]:
    """The command run by the fork server and by a fresh interpreter: (status, stdout, stderr) of each."""
    started = commands.stats["started"]
    forked = commands.run([*WORKER, *args], env=env, capture_output=True, timeout=60, **options)  # type: ignore[arg-type]
    assert commands.stats["started"] == started + 1, "not run by the fork server"
    fresh = subprocess.run([*WORKER, *args], env=env, capture_output=True, timeout=60, check=False, **options)  # type: ignore[call-overload]
    return outcome(forked), outcome(fresh)


def outcome(done: "subprocess.CompletedProcess[bytes]") -> tuple[int, bytes, bytes]:
    return done.returncode, done.stdout, timeless(done.stderr)


def timeless(stderr: bytes) -> bytes:
    """Without the line of how long a command took (`rate: 0.01 s, 4,568 games/s`)."""
    return b"".join(line for line in stderr.splitlines(keepends=True) if not re.match(rb"rate: [0-9.]+ s, ", line))


@pytest.mark.parametrize(
    ("args", "settings"),
    [
        (["config"], {}),
        (["config"], {"RATING_SYSTEM": "glicko2", "RATING_REDIS_URL": "redis://:secret@example:6380/2"}),
        (["nonsense"], {}),  # argparse's error, status 2
        (["rate", "--help"], {"RATING_SYSTEM": "uscf-cc"}),
        (["config"], {"RATING_SYSTEM": "no-such-system"}),  # one line, status 2
    ],
)
def test_a_command_gives_what_a_fresh_interpreter_gives(args: list[str], settings: dict[str, str]) -> None:
    forked, fresh = both(args, environment(**settings))
    assert forked == fresh


def test_stdin_and_the_working_directory_are_the_commands(tmp_path: Path) -> None:
    subprocess.run([*WORKER, "sample", "--games", "30", "games.jsonl"], cwd=tmp_path, check=True, capture_output=True)
    (tmp_path / "bad.jsonl").write_bytes((tmp_path / "games.jsonl").read_bytes() + b"{not json\n")
    forked, fresh = both(["rate", "bad.jsonl"], environment(), cwd=tmp_path)  # relative to the command's cwd
    assert forked == fresh
    assert b"1 dead-lettered" in fresh[2], fresh  # type: ignore[index]
    forked, fresh = both(["rate", "-"], environment(), input=(tmp_path / "bad.jsonl").read_bytes())
    assert forked == fresh


def test_a_command_past_its_timeout_is_killed() -> None:
    port = free_port()  # nothing listens there: the command waits for Kafka
    env = environment(RATING_KAFKA_BOOTSTRAP_SERVERS=f"127.0.0.1:{port}", RATING_COMMAND_RETRY_SECONDS="60")
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        commands.run([*WORKER, "topics"], env=env, capture_output=True, timeout=3)
    assert b"waiting up to 60 s" in (raised.value.stderr or b""), raised.value.stderr


def test_what_the_server_cannot_run_the_same_runs_as_a_subprocess(tmp_path: Path) -> None:
    started = commands.stats["started"]
    seed = "4321" if os.environ.get("PYTHONHASHSEED") == "1234" else "1234"  # not the test process's
    other = environment(PYTHONHASHSEED=seed)
    done = commands.run([*WORKER, "config"], env=other, capture_output=True, timeout=60)
    assert done.returncode == 0
    (tmp_path / "worker").mkdir()  # another checkout's package: python -m worker there imports it
    (tmp_path / "worker" / "__main__.py").write_text("import sys\nprint('another checkout')\nsys.exit(7)\n")
    elsewhere = commands.run([*WORKER, "config"], env=environment(), capture_output=True, timeout=60, cwd=tmp_path)
    assert (elsewhere.returncode, elsewhere.stdout) == (7, b"another checkout\n")
    assert commands.stats["started"] == started, "the fork server ran them"


def test_a_started_worker_is_a_process_with_its_pid_signals_and_status(tmp_path: Path) -> None:
    """A worker's `run` forked by the server is handled as the `Popen` of a child: it runs until
    signalled, `poll` and `wait` see it end, SIGTERM stops it with the status a fresh interpreter's
    worker gives, SIGKILL gives -9. (Kafka and Redis unreachable: it waits for them, logging.)"""
    env = environment(
        RATING_KAFKA_BOOTSTRAP_SERVERS=f"127.0.0.1:{free_port()}", RATING_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0"
    )
    statuses = []
    for forked in (True, False):
        log = tmp_path / f"worker-{forked}.log"
        workers = commands.stats["workers"]
        with log.open("ab") as out:
            if forked:
                worker = commands.start([*WORKER, "run"], env=env, output=out.fileno())
            else:
                worker = subprocess.Popen([*WORKER, "run"], env=env, stdout=out, stderr=out, start_new_session=True)
        try:
            assert isinstance(worker, commands.Forked) == forked
            assert commands.stats["workers"] == workers + forked
            assert worker.poll() is None
            with pytest.raises(subprocess.TimeoutExpired):
                worker.wait(timeout=0.2)
            deadline = time.monotonic() + 30
            while b"unreachable" not in log.read_bytes():
                assert time.monotonic() < deadline and worker.poll() is None, log.read_text()
                time.sleep(0.1)
            worker.send_signal(signal.SIGTERM)
            statuses.append(worker.wait(timeout=30))
            assert worker.poll() == statuses[-1]
        finally:
            worker.kill()
            worker.wait()
    assert statuses[0] == statuses[1], statuses
    with (tmp_path / "killed.log").open("ab") as out:
        killed = commands.start([*WORKER, "run"], env=env, output=out.fileno())
    killed.kill()
    assert killed.wait(timeout=30) == -signal.SIGKILL
