"""A fork server for the worker's commands: `python -m worker ARGS` (a one-shot command, or a
worker's `run`) as a process of its own, without paying for a Python start and the worker's
imports each time.

A Python start and the worker's imports cost 0.3-0.5 s of CPU, a command's own work after them
often a tenth of that, and the tests run hundreds of commands (docs/development.md, "The test
command's time"). The server (`python -m tests.support.forkserver SOCKET`, one per test process,
started by `tests.support.commands` on first use) imports every module of the worker once and
forks for each command: the command still runs in a process of its own, from `worker.cli.main`
with its arguments, environment, working directory, stdin, stdout and stderr, its exit status
what `python -m worker` gives (`sys.exit(main())`, an uncaught exception's traceback and status
1). What differs from a fresh interpreter is only what an interpreter reads at its start: the
server is started in the test process's environment, and a command whose `PYTHON*` or locale
variables differ from it runs as a plain subprocess (`tests.support.commands`).

Per command, the server forks a waiter, and the waiter forks the command: the waiter sends the
command's pid (for a timeout's kill), waits for it and sends its status and CPU time. The server
stays single-threaded (a fork copies one thread) and ends when the test process that started it
ends.
"""

import atexit
import importlib
import json
import os
import pkgutil
import signal
import socket
import struct
import sys
import threading
import traceback
from typing import Any

import worker
from worker import cli

HEADER = struct.Struct("!I")  # the length of the request's JSON
FDS = 3  # stdin, stdout, stderr


def preload() -> None:
    """Every module of the worker (its commands import theirs lazily), but its `__main__`."""
    for module in pkgutil.walk_packages(worker.__path__, "worker."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)


def serve(path: str) -> None:
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    listener.settimeout(1.0)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the waiters reap themselves
    print("ready", flush=True)
    while os.getppid() == parent:  # the test process that started it is alive
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        conn.settimeout(None)
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                wait_for_command(conn)
            finally:
                os._exit(0)
        conn.close()


def receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """A request: its length and the command's stdin, stdout and stderr, then its JSON."""
    data, fds, _, _ = socket.recv_fds(conn, HEADER.size, FDS)
    (size,) = HEADER.unpack(exactly(conn, HEADER.size, data))
    return json.loads(exactly(conn, size)), list(fds)


def exactly(conn: socket.socket, size: int, data: bytes = b"") -> bytes:
    """`data` read on to `size` bytes."""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise EOFError("the request ended early")
        data += chunk
    return data


def wait_for_command(conn: socket.socket) -> None:
    request, fds = receive(conn)
    pid = os.fork()
    if pid == 0:
        conn.close()
        run_command(request, fds)
    for fd in fds:
        os.close(fd)
    conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    _, status, usage = os.wait4(pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    conn.sendall(json.dumps({"status": os.waitstatus_to_exitcode(status), "cpu": cpu}).encode() + b"\n")


def run_command(request: dict[str, Any], fds: list[int]) -> None:
    """In the command's process: `python -m worker ARGS`'s end, as the interpreter would give it."""
    if request.get("session"):
        os.setsid()  # as Popen's start_new_session (the workers': a Ctrl-C of the tests is not theirs)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = [str(os.path.join(os.path.dirname(worker.__file__), "__main__.py")), *request["args"]]
    code = 1
    try:
        code = exit_code(cli.main(request["args"]))
    except SystemExit as e:
        code = exit_code(e.code)
    except BaseException:  # as the interpreter: the traceback on stderr, status 1
        traceback.print_exc()
    try:
        # As at the interpreter's end: its threads that are no daemons joined, then the exit
        # functions (logging's shutdown among them).
        getattr(threading, "_shutdown", lambda: None)()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def exit_code(code: object) -> int:
    """What `sys.exit(code)` makes the status (a message is printed to stderr, status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    preload()
    serve(sys.argv[1])
