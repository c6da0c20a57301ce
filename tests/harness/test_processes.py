"""The processes the tests start are always reaped: by their owner (a fixture) at its teardown, even
when the test times out, and at worst by the session's final check, which then fails loudly.

The two failing cases run in a pytest of their own (tests/harness/probes/), started here.
"""

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import processes as processes_module
from tests.support.processes import Processes, left_running
from worker.embedded import stack as embedded_stack
from worker.embedded.stack import free_port

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PROBES = Path(__file__).parent / "probes"


def alive(pid: int) -> bool:
    """Whether a process `pid` exists (ours are waited for, so a dead one leaves no zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def run_probe(name: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], list[int]]:
    """pytest on the probe, in a process of its own; its outcome and the pids it wrote."""
    pids = tmp_path / "pids"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(PROBES / name), "-p", "no:cacheprovider", "-q", "-rA"],
        cwd=REPO,
        env={**os.environ, "PROBE_PIDS": str(pids), "RATING_TEST_BACKEND": "local"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done, [int(pid) for pid in pids.read_text().split()] if pids.exists() else []


def test_an_owner_kills_every_process_it_started_and_the_registry_sees_them_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    owned = Processes("this test")
    server = owned.redis(tmp_path / "a")

    # A start that fails half-way (no answer within the start-up time) leaves its process running:
    # registered all the same.
    def no_answer(port: int, process: subprocess.Popen[bytes], what: str) -> None:
        raise RuntimeError(f"{what} did not listen on port {port}")

    monkeypatch.setattr(embedded_stack, "_wait_port", no_answer)
    with pytest.raises(RuntimeError, match="did not listen"):
        owned.redis(tmp_path / "b")
    started = [s.process for s in owned.started]
    assert len(started) == 2 and server.process is started[0]
    assert all(p.poll() is None for p in started) and set(started) <= {s.process for s in left_running()}
    owned.kill_all()
    assert all(p.poll() is not None and not alive(p.pid) for p in started)
    assert not [s for s in left_running() if s in owned.started]


def test_what_a_test_starts_through_its_fixture_is_registered_under_its_name(
    processes: Processes, tmp_path: Path
) -> None:
    """(The fixture's teardown, which kills them, is seen by the probes below: a test cannot see its own.)"""
    port = free_port()
    sleeper = processes.popen("sleep", ["sleep", "60"])
    server = processes.redis(tmp_path, port=port)
    assert {s.what for s in processes.started} == {"sleep", "redis-server"}
    assert all(
        s.owner.endswith("::test_what_a_test_starts_through_its_fixture_is_registered_under_its_name")
        for s in processes.started
    )
    assert sleeper.poll() is None and server.process is not None and server.process.poll() is None


def test_a_test_that_times_out_still_has_its_worker_redis_and_broker_killed_and_its_log_tails_shown(
    tmp_path: Path,
) -> None:
    done, pids = run_probe("timing_out.py", tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "Timeout (>3.0s)" in out, out
    assert "1 failed" in out, out
    assert "workers' log tails" in out and "--- worker-0 (pid" in out, out
    assert len(pids) == 3 and all(pids), out
    assert not [pid for pid in pids if alive(pid)], f"left running after the probe: {pids}\n{out}"
    assert "still running at the end of the session" not in out, out  # the fixtures killed them


def test_a_process_left_running_fails_the_session_loudly_and_is_killed(tmp_path: Path) -> None:
    done, pids = run_probe("leaking.py", tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "1 processes the tests started were still running at the end of the session (killed now)" in out, out
    assert len(pids) == 1, out
    assert f"redis-server (pid {pids[0]}, started by a probe that never kills it)" in out, out
    assert not alive(pids[0]), out


@pytest.mark.parametrize("server", ["broker", "redis"])
def test_a_server_whose_free_port_another_process_took_starts_again_on_another(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parallel test processes choose free ports at the same time: a server that finds its port
    taken (here by a listening socket, which also answers its readiness check) starts again on
    another free port; it never takes the other process's listener for its own."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports: Iterator[int] = iter([taken.getsockname()[1], free_port()])
        monkeypatch.setattr(processes_module, "free_port", lambda: next(ports))
        owned = Processes("test")
        try:
            started = owned.broker() if server == "broker" else owned.redis(tmp_path / "redis")
            assert started.port != taken.getsockname()[1]
            assert started.process is not None and started.process.poll() is None
            assert [s.process.poll() is None for s in owned.started] == [False, True]  # the first exited
        finally:
            owned.kill_all()
