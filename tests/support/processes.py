"""Every process the tests start (tansu brokers, redis-servers, workers, sentinels) goes through here.

A `Processes` belongs to one owner, a fixture, which kills all it started at its teardown,
whatever the test did (failed, timed out). Each process is also entered in a registry for
the session: `tests/conftest.py` ends the session by checking that none of them is still
running, and fails loudly with the list otherwise.

The starters of `worker.embedded.stack` are used as they are; they are wrapped here so that a
process is registered even when its start fails half-way (it is then running, unregistered,
otherwise: a broker that did not listen within its start-up time, for one).
"""

import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import commands
from worker.embedded.stack import Broker, RedisServer, free_port

# Starts of a server on a free port before giving up (another test process may take the port first).
PORT_ATTEMPTS = 3


@dataclass(frozen=True)
class Started:
    what: str  # "tansu broker", "redis-server", "worker", ...
    owner: str  # the fixture (or test) that must kill it
    process: subprocess.Popen[bytes]

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def __str__(self) -> str:
        return f"{self.what} (pid {self.process.pid}, started by {self.owner})"


_registry: list[Started] = []


def left_running() -> list[Started]:
    """The registered processes still running (the session's check: must be none)."""
    return [s for s in _registry if s.running]


def reap(process: subprocess.Popen[bytes]) -> None:
    """Killed, not stopped (nothing of it is kept), and waited for. A frozen (SIGSTOP'd) process dies too."""
    if process.poll() is None:
        process.kill()
    process.wait()
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()


@dataclass
class Processes:
    """The processes of one owner: started through it, killed together by `kill_all()`."""

    owner: str
    started: list[Started] = field(default_factory=list)

    def register(self, what: str, process: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
        entry = Started(what, self.owner, process)
        self.started.append(entry)
        _registry.append(entry)
        return process

    def kill_all(self) -> None:
        for entry in reversed(self.started):  # the workers before the broker and Redis they use
            reap(entry.process)

    def _start(self, what: str, server: Broker | RedisServer) -> None:
        try:
            server.start()
        finally:  # registered even if it failed half-way: it may be running
            if server.process is not None and all(s.process is not server.process for s in self.started):
                self.register(what, server.process)

    def _start_on_a_free_port(self, what: str, make: Callable[[], Broker | RedisServer]) -> None:
        """Start a server on a free port; if another process took that port between its choice and
        the start (parallel test processes choose theirs at the same time), again on another."""
        for attempt in range(PORT_ATTEMPTS):
            try:
                self._start(what, make())
                return
            except RuntimeError as e:
                if "taken?" not in str(e) or attempt == PORT_ATTEMPTS - 1:
                    raise

    def broker(self, advertised_port: int | None = None) -> Broker:
        """A tansu broker on a free port, listening (advertising `advertised_port` if given: a proxy's)."""
        started: list[Broker] = []

        def make() -> Broker:
            started.append(Broker(port=free_port(), advertised_port=advertised_port))
            return started[-1]

        self._start_on_a_free_port("tansu broker", make)
        return started[-1]

    def redis(self, directory: Path, *, port: int | None = None, appendonly: bool = False) -> RedisServer:
        """A redis-server with its own directory, listening (on `port`, or a free one)."""
        directory.mkdir(parents=True, exist_ok=True)
        if port is not None:
            server = RedisServer(port=port, directory=directory, appendonly=appendonly)
            self._start("redis-server", server)
            return server
        started: list[RedisServer] = []

        def make() -> RedisServer:
            started.append(RedisServer(port=free_port(), directory=directory, appendonly=appendonly))
            return started[-1]

        self._start_on_a_free_port("redis-server", make)
        return started[-1]

    def restart(self, server: RedisServer) -> RedisServer:
        """The same redis-server again (same port and directory: it replays its files), after a kill."""
        self._start("redis-server", server)
        return server

    def worker(self, env: Mapping[str, str], log: Path, code: Path | None = None) -> subprocess.Popen[bytes]:
        """`rating-worker run`, its output appended to `log`: the command of `worker.embedded.stack.start_worker`
        (which leaves its handle of the log open in this process: a ResourceWarning when collected), forked
        by the fork server (`tests.support.commands.start`). `code`: the checkout whose `worker` package
        runs (`python -m` finds it first in its working directory; another checkout's runs as a subprocess)."""
        with log.open("ab") as out:
            process = commands.start([sys.executable, "-m", "worker", "run"], env=env, output=out.fileno(), cwd=code)
        return self.register("worker", process)

    def popen(self, what: str, args: list[str], **options: object) -> subprocess.Popen[bytes]:
        """Any other process (a sentinel, a redis-server over TLS, a one-shot command to signal)."""
        process: subprocess.Popen[bytes] = subprocess.Popen(args, **options)  # type: ignore[call-overload]
        return self.register(what, process)
