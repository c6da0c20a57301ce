"""`run`: `subprocess.run` for the worker's one-shot commands (`[sys.executable, "-m", "worker",
...]`), forked from a server that has the worker imported (`tests.support.forkserver`): the same
process of its own, arguments, environment, stdin, output and exit status, without a Python start
and the worker's imports each time. Any other command, and a worker command whose `PYTHON*`
variables differ from the test process's (an interpreter reads them at its start) or that runs in
another checkout (an earlier release's code), runs through `subprocess.run`; so does every command
when RATING_TEST_FORKSERVER=0.

Where a test needs the interpreter's own start (`python -m worker`'s entry, the installed
`rating-worker` script, memory measured from the start) it uses `subprocess` itself.
"""

import atexit
import contextlib
import json
import os
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

# What the commands run here cost, for the timing plugin (tests/support/timing.py): how many were
# started and their CPU seconds (they are the server's grandchildren, not this process's children).
stats = {"started": 0, "cpu": 0.0}


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
        self.interpreter = {k: v for k, v in env.items() if k.startswith("PYTHON")}
        atexit.register(self.stop)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)


_servers: list[_Server] = []  # this process's, started on first use (again if it ended)
_lock = threading.Lock()


def _the_server() -> _Server:
    with _lock:
        if not _servers or _servers[-1].process.poll() is not None:
            _servers.append(_Server())
        return _servers[-1]


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
    if args[:3] != WORKER or os.environ.get(VARIABLE) == "0" or _another_checkout(cwd):
        return subprocess.run(  # the caller's command, as it gave it
            args, env=environment, input=input, capture_output=True, text=text, timeout=timeout, check=check, cwd=cwd
        )
    server = _the_server()
    if {k: v for k, v in environment.items() if k.startswith("PYTHON")} != server.interpreter:
        return subprocess.run(
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


def _another_checkout(cwd: str | Path | None) -> bool:
    """Whether `python -m worker` in `cwd` imports another checkout's worker (an earlier release's,
    as the rolling-upgrade tests run): the server has this one's."""
    return cwd is not None and (Path(cwd) / "worker").is_dir() and Path(cwd).resolve() != REPO


def _forked(
    server: _Server, args: list[str], env: dict[str, str], cwd: str, data: bytes | None, timeout: float | None
) -> tuple[int | None, bytes, bytes]:
    """The command forked by the server: its status (None: killed at the timeout), stdout, stderr."""
    deadline = None if timeout is None else time.monotonic() + timeout
    stdin_r, stdin_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    request = json.dumps({"args": args, "env": env, "cwd": cwd}).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(server.path)
        try:
            socket.send_fds(conn, [HEADER.pack(len(request))], [stdin_r, out_w, err_w])
            conn.sendall(request)
        finally:
            for fd in (stdin_r, out_w, err_w):
                os.close(fd)
        stats["started"] += 1
        feeding = threading.Thread(target=_feed, args=(stdin_w, data or b""), daemon=True)
        feeding.start()
        replies = conn.makefile("rb")
        pid = json.loads(replies.readline())["pid"]
        out, err, timed_out = _read_both(out_r, err_r, deadline)
        if timed_out:
            _kill(pid)
        end = json.loads(replies.readline())
        feeding.join()
    stats["cpu"] += end["cpu"]
    return (None if timed_out else int(end["status"])), out, err


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


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
