"""The worker's commands, forked from a server that has the worker imported
(`tests.support.forkserver`), without a Python start and the worker's imports each time:
- `run`: `subprocess.run` for a one-shot command (`[sys.executable, "-m", "worker", ...]`): the
  same process of its own, arguments, environment, stdin, output and exit status;
- `start`: `subprocess.Popen` for a long-running one (a worker's `run`), its output to a file:
  a `Forked`, with the pid, signals, `poll`, `wait` and status of a child.
Any other command, and a worker command whose `PYTHON*` or locale variables differ from the test
process's (an interpreter reads them at its start) or that runs in another checkout (an earlier release's
code), runs through `subprocess`; so does every command when RATING_TEST_FORKSERVER=0.

Where a test needs the interpreter's own start (`python -m worker`'s entry, the installed
`rating-worker` script, a command interrupted by a signal as it starts) it uses `subprocess` itself.
"""

import atexit
import contextlib
import json
import os
import select
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.support.forkserver import HEADER

REPO = Path(__file__).resolve().parents[2]
WORKER = [sys.executable, "-m", "worker"]
VARIABLE = "RATING_TEST_FORKSERVER"

# What the commands forked here cost, for the timing plugin (tests/support/timing.py): how many
# one-shot commands and workers were started, and the CPU seconds of those that ended (they are the
# server's grandchildren, not this process's children).
stats = {"started": 0, "workers": 0, "cpu": 0.0}


class _Server:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="rw-fork-")
        self.path = os.path.join(self.dir, "socket")
        self.log = Path(self.dir) / "server.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("RATING_")}
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(  # our own module
                [sys.executable, "-m", "tests.support.forkserver", self.path],
                cwd=REPO,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
            )
        assert self.process.stdout is not None
        ready = self.process.stdout.readline()
        if ready != b"ready\n":
            raise RuntimeError(f"the fork server did not start: {self.log.read_text(errors='replace')[-2000:]}")
        self.interpreter = interpreter_variables(env)
        atexit.register(self.stop)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def interpreter_variables(env: Mapping[str, str]) -> dict[str, str]:
    """What an interpreter reads at its start: its `PYTHON*` variables and the locale's."""
    return {k: v for k, v in env.items() if k.startswith(("PYTHON", "LC_")) or k == "LANG"}


_servers: list[_Server] = []  # this process's, started on first use (again if it ended)
_lock = threading.Lock()


def _the_server() -> _Server:
    with _lock:
        if not _servers or _servers[-1].process.poll() is not None:
            _servers.append(_Server())
        return _servers[-1]


def _server_for(args: list[str], env: Mapping[str, str], cwd: str | Path | None) -> "_Server | None":
    """The server to fork `args` from, or None where it would not run as `python -m worker` does:
    another command, other `PYTHON*` or locale variables than the server's, another checkout's code."""
    if args[:3] != WORKER or os.environ.get(VARIABLE) == "0" or _another_checkout(cwd):
        return None
    server = _the_server()
    return server if interpreter_variables(env) == server.interpreter else None


def run(
    argv: Sequence[str | Path],
    *,
    env: Mapping[str, str] | None = None,
    input: bytes | str | None = None,  # subprocess.run's name
    capture_output: bool = False,
    text: bool = False,
    timeout: float | None = None,
    check: bool = False,
    cwd: str | Path | None = None,
) -> subprocess.CompletedProcess[Any]:
    """As `subprocess.run(argv, ...)` with these options (output captured: `capture_output` must
    be True, as every caller here wants it)."""
    assert capture_output, "the commands run here always capture their output"
    args = [str(a) for a in argv]
    environment = dict(os.environ if env is None else env)
    server = _server_for(args, environment, cwd)
    if server is None:
        return subprocess.run(  # the caller's command, as it gave it
            args, env=environment, input=input, capture_output=True, text=text, timeout=timeout, check=check, cwd=cwd
        )
    data = input.encode() if isinstance(input, str) else input
    status, out, err = _forked(server, args[3:], environment, str(cwd or os.getcwd()), data, timeout)
    stdout: Any = out.decode() if text else out
    stderr: Any = err.decode() if text else err
    if status is None:
        raise subprocess.TimeoutExpired(args, timeout or 0, stdout, stderr)
    done = subprocess.CompletedProcess(args, status, stdout, stderr)
    if check:
        done.check_returncode()
    return done


def start(
    argv: Sequence[str | Path], *, env: Mapping[str, str], output: int, cwd: str | Path | None = None
) -> subprocess.Popen[bytes]:
    """As `subprocess.Popen(argv, env=env, stdout=output, stderr=output, stdin=DEVNULL,
    start_new_session=True, cwd=cwd)`: a long-running command (a worker's `run`), its output to
    the file descriptor `output`. Forked by the server, it is a `Forked` (the same interface)."""
    args = [str(a) for a in argv]
    server = _server_for(args, env, cwd)
    if server is None:
        return subprocess.Popen(
            args,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
            cwd=cwd,
        )
    with open(os.devnull, "rb") as null:
        conn, pid = _request(server, args[3:], env, str(cwd or os.getcwd()), [null.fileno(), output, output], True)
    stats["workers"] += 1
    return Forked(args, conn, pid)


class Forked(subprocess.Popen[bytes]):
    """A command the server forked, as the `subprocess.Popen` of a child: its pid, signals,
    `poll`, `wait` and status (sent by the server's waiter when it ends). It has no pipes."""

    def __init__(self, args: list[str], conn: socket.socket, pid: int) -> None:  # not Popen's: no child here
        self.args = args
        self.pid = pid
        self.returncode: int | None = None
        self.stdin = self.stdout = self.stderr = None
        self._child_created = False  # Popen's __del__: nothing of ours to reap
        self._conn = conn
        self._replies = b""

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._conn], [], [], 0)[0]:
            self._ended()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self._conn], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            self._ended()
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _ended(self) -> None:
        """The waiter's last line: the status and the CPU time (it sends it once the command ended)."""
        while not self._replies.endswith(b"\n"):
            chunk = self._conn.recv(4096)
            if not chunk:
                raise RuntimeError(f"the fork server's waiter of pid {self.pid} ended without its status")
            self._replies += chunk
        end = json.loads(self._replies)
        self._conn.close()
        stats["cpu"] += end["cpu"]
        self.returncode = int(end["status"])


def _another_checkout(cwd: str | Path | None) -> bool:
    """Whether `python -m worker` in `cwd` imports another checkout's worker (an earlier release's,
    as the rolling-upgrade tests run): the server has this one's."""
    return cwd is not None and (Path(cwd) / "worker").is_dir() and Path(cwd).resolve() != REPO


def _request(
    server: _Server, args: list[str], env: Mapping[str, str], cwd: str, fds: list[int], session: bool
) -> tuple[socket.socket, int]:
    """The server asked to fork `python -m worker ARGS` with these stdin, stdout and stderr: the
    connection its waiter answers on, and the command's pid (its first answer)."""
    request = json.dumps({"args": args, "env": dict(env), "cwd": cwd, "session": session}).encode()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(server.path)
        socket.send_fds(conn, [HEADER.pack(len(request))], fds)
        conn.sendall(request)
        first = b""
        while not first.endswith(b"\n"):
            chunk = conn.recv(1)  # the pid's line alone: the status follows on the same connection
            if not chunk:
                raise RuntimeError("the fork server's waiter ended before it sent the pid")
            first += chunk
    except BaseException:
        conn.close()
        raise
    return conn, int(json.loads(first)["pid"])


def _forked(
    server: _Server, args: list[str], env: dict[str, str], cwd: str, data: bytes | None, timeout: float | None
) -> tuple[int | None, bytes, bytes]:
    """The command forked by the server: its status (None: killed at the timeout), stdout, stderr."""
    deadline = None if timeout is None else time.monotonic() + timeout
    stdin_r, stdin_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        conn, pid = _request(server, args, env, cwd, [stdin_r, out_w, err_w], False)
    except BaseException:
        for fd in (stdin_w, out_r, err_r):
            os.close(fd)
        raise
    finally:
        for fd in (stdin_r, out_w, err_w):
            os.close(fd)
    stats["workers" if args[:1] == ["run"] else "started"] += 1  # as the timing's kinds (`run` that fails at start)
    process = Forked([*WORKER, *args], conn, pid)
    feeding = threading.Thread(target=_feed, args=(stdin_w, data or b""), daemon=True)
    feeding.start()
    out, err, timed_out = _read_both(out_r, err_r, deadline)
    if timed_out:
        process.kill()
    status = process.wait()
    feeding.join()
    return (None if timed_out else status), out, err


def _feed(fd: int, data: bytes) -> None:
    """The command's stdin: `data`, then its end (a command that does not read it is no error)."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BrokenPipeError:
        pass
    finally:
        os.close(fd)


def _read_both(out_fd: int, err_fd: int, deadline: float | None) -> tuple[bytes, bytes, bool]:
    """Both outputs to their ends (the command and whatever it left holding them ended), or until
    `deadline` (then True)."""
    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    with selectors.DefaultSelector() as selector:
        for fd in chunks:
            selector.register(fd, selectors.EVENT_READ)
        try:
            while selector.get_map():
                wait = None if deadline is None else deadline - time.monotonic()
                if wait is not None and wait <= 0:
                    return b"".join(chunks[out_fd]), b"".join(chunks[err_fd]), True
                for key, _ in selector.select(wait):
                    chunk = os.read(key.fd, 65536)
                    if chunk:
                        chunks[key.fd].append(chunk)
                    else:
                        selector.unregister(key.fd)
        finally:
            os.close(out_fd)
            os.close(err_fd)
    return b"".join(chunks[out_fd]), b"".join(chunks[err_fd]), False
