"""Streaming benchmark: the worker against the peers a user would pick instead, on one stack.

    .venv/bin/python bench/stream_bench.py [--games 200000] [--naive-games 20000] [--runs 3]
                                            [--links-games 20000] [--kafka-latency-ms 5] [--redis-latency-ms 1]
                                            [--rate 1000] [--latency-seconds 30] [--soak-seconds 600]
                                            [--only drain|links|systems|latency|soak] [--tracemalloc]

Starts the embedded stack (a tansu broker and a redis-server, like the tests; a fresh pair for
each measurement, so none inherits another's data) and drains the same generated workload
(`ArenaSimulation`: seeded established players, a mix of categories, new players qualifying,
rematches) with each consumer, `--runs` times, the median shown and every run printed:

- ceiling: a pass-through consumer (child process) that parses each game and publishes two
  small events per game with `create_batch`/`send_batch`, then commits; no Redis, no rules;
- batched loop: per `getmany`, one MGET of the batch's states, the engine, one pipelined write,
  `send_batch`, a commit; no idempotency records, no outboxes (child process);
- naive:   one game at a time (child process): read both states and the game's record (one
  MGET), run the engine, write states and record (one MULTI/EXEC), publish each event and
  await it, commit;
- Quix Streams at-least-once and exactly-once (`bench/peers/quix_peer.py`, from the peers'
  own virtual environment, set up by `bench/peers/setup` when missing; skipped, with the
  reason, if it cannot be);
- worker:  `rating-worker run` as shipped (default settings), 1 and 2 processes.

`systems` drains, in every run, the ceiling and worker x1 of each rating system (RATING_SYSTEM)
on a backlog of that system's own games (its simulation: the arena's, or the correspondence
games of `uscf-cc`) and seed: each system's games/s, over the ceiling and over the arena's,
and how long a new deployment takes to rate a history of 10 million games at that speed.

For each it prints games/s draining a backlog (from the group's first commit to its last,
read from the committed offsets every 50 ms; Quix's from its first game rated to its last),
CPU µs per game of the consumer processes, the Redis server's CPU µs per game (`INFO cpu`),
Redis round trips per game (client side), peak RSS (VmHWM); Redis's time by command
(`INFO commandstats`), the worker's scripts timed on one fixed batch, worker x1's CPU by part
(py-spy, if installed), the replay's CPU per game on the same games, and the ratios and
targets. `links` drains worker x1 and the batched loop over direct links and over links with
latency (a delay line in front of the broker and Redis). `latency` measures end-to-end
latency p50/p99/p99.9 at a steady offered load (input timestamp -> the game's first output
record seen by a probe consumer), `soak` one worker's RSS over a steady load (with
`--tracemalloc`, in the worker's tracemalloc mode: snapshots after the warm-up, at the middle and
at the end, compared per allocation site, per 1,000 games, to tell a leak from a working set
that grew). Numbers are
printed, not asserted: the targets and results are in docs/benchmarks.md.

`--child ceiling|naive|batched|proxy` is internal: the parent starts the comparison consumers
and the delay lines so.
"""

import argparse
import asyncio
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from redis.asyncio import Redis

from worker.embedded.stack import (
    TANSU_FETCH_WAIT_MS,
    Broker,
    RedisServer,
    free_port,
    start_worker,
    worker_env,
)
from worker.embedded.traffic import traffic
from worker.engine.decoder import decode_game
from worker.engine.engine import Engine, Verdict
from worker.rules.hundredths import Points
from worker.service import memory_trace
from worker.settings import WorkerSettings
from worker.store import keys
from worker.store.redis_store import RedisStore
from worker.store.schedule import read_and_plan
from worker.stream.publisher import Publisher
from worker.systems.arena.codec import RATING_STATES, decode_state, encode_state
from worker.systems.arena.state import UNSEEN
from worker.systems.arena.traffic import ArenaSimulation
from worker.systems.registry import ARENA, BY_NAME

PARTITIONS = 6  # input partitions: room for 2 workers (and more) to share the load
OUT_PARTITIONS = 6
PLAYERS = 10000
GAMES_TOPIC, RATINGS_TOPIC, DLQ_TOPIC = "bench.games", "bench.ratings", "bench.dlq"
GROUP = "bench"
PREFIX = "rating:"
POLL = 0.05  # seconds between two reads of the committed offsets
TICK = 0.01  # seconds between two sends of the steady load
BEHIND_LIMIT = 2.0  # seconds after the load: a consumer still busy longer than this fell behind
DEFAULTS = WorkerSettings()
# On tansu, a fetch is answered only when its wait runs out (worker.embedded.stack): every consumer of
# the benchmark waits 10 ms, the worker too in the runs marked so (and the soak).
TANSU_SETTINGS: dict[str, object] = {"kafka_fetch_max_wait_ms": TANSU_FETCH_WAIT_MS}
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# --- processes: CPU and memory from /proc --------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


def memory_kib(pid: int, field_name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    return 0


# --- the stack ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Links:
    """Latency added to every client's links to the broker and to Redis, each way (0: direct)."""

    kafka_ms: float = 0.0
    redis_ms: float = 0.0

    def __str__(self) -> str:
        return f"+{self.kafka_ms:g} ms to Kafka, +{self.redis_ms:g} ms to Redis" if self else "direct links"

    def __bool__(self) -> bool:
        return bool(self.kafka_ms or self.redis_ms)


@dataclass
class Stack:
    """A fresh broker and Redis with the bench's topics, and the arena's seed imported; with
    `links`, every client reaches them through a delay line (`delay_line`)."""

    workdir: Path
    links: Links = field(default_factory=Links)
    broker: Broker = field(default_factory=Broker)
    redis: RedisServer = field(init=False)
    consumers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    proxies: list[subprocess.Popen[bytes]] = field(default_factory=list)
    redis_url: str = ""  # what the clients use: Redis's own, or its delay line's

    def __post_init__(self) -> None:
        self.redis = RedisServer(directory=Path(tempfile.mkdtemp(dir=self.workdir)))
        self.redis_url = self.redis.url

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    def _delay_line(self, upstream: int, delay_ms: float) -> int:
        listen = free_port()
        command = [sys.executable, __file__, "--child", "proxy", "--upstream", str(upstream), "--listen", str(listen)]
        proxy = subprocess.Popen(
            [*command, "--delay-ms", str(delay_ms)], stdout=subprocess.PIPE, start_new_session=True
        )
        self.proxies.append(proxy)
        assert proxy.stdout is not None and proxy.stdout.readline(), "the delay line did not start"
        return listen

    async def start(self, seed_csv: Path | None, system: str = "arena") -> None:
        if self.links.kafka_ms:  # the broker tells clients to connect to its delay line
            self.broker.advertised_port = self._delay_line(self.broker.port, self.links.kafka_ms)
        self.broker.start()
        self.redis.start()
        if self.links.redis_ms:
            self.redis_url = f"redis://127.0.0.1:{self._delay_line(self.redis.port, self.links.redis_ms)}/0"
        # Retention stated: Apache Kafka describes it for every topic, tansu only when it was set
        # at creation, and Quix Streams derives its repartition topic's from the input's.
        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
        await admin.start()
        try:
            topics = {GAMES_TOPIC: PARTITIONS, RATINGS_TOPIC: OUT_PARTITIONS, DLQ_TOPIC: 1}
            retention = {"retention.ms": "-1"}
            await admin.create_topics([NewTopic(name, n, 1, topic_configs=retention) for name, n in topics.items()])
        finally:
            await admin.close()
        if seed_csv is not None:
            command = [sys.executable, "-m", "worker", "import", str(seed_csv)]
            subprocess.run(command, env=self.env(system=system), check=True, capture_output=True, timeout=600)

    def env(self, **settings: object) -> dict[str, str]:
        names = {"topic_games": GAMES_TOPIC, "topic_ratings": RATINGS_TOPIC, "topic_dead_letters": DLQ_TOPIC}
        env = worker_env(self.broker, self.redis, kafka_group_id=GROUP, log_level="warning", **names, **settings)
        return env | {"RATING_REDIS_URL": self.redis_url}

    def start_workers(self, n: int, **settings: object) -> list[int]:
        """`rating-worker run` n times; returns their metrics ports."""
        ports = []
        for i in range(n):
            port = free_port()
            log = self.workdir / f"worker-{time.monotonic_ns()}-{i}.log"
            self.consumers.append(start_worker(self.env(metrics_port=port, **settings), log))
            ports.append(port)
        return ports

    def start_child(self, kind: str, expect: int) -> None:
        command = [sys.executable, __file__, "--child", kind, "--bootstrap", self.bootstrap]
        command += ["--redis-url", self.redis_url, "--expect", str(expect)]
        self.consumers.append(subprocess.Popen(command, stdout=subprocess.PIPE, start_new_session=True))

    def child_report(self) -> dict[str, float]:
        """What the (single) child consumer printed when it had consumed what it expected."""
        out = self.consumers[0].stdout
        assert out is not None
        report: dict[str, float] = json.loads(out.readline())
        return report

    def kill(self) -> None:
        for p in self.consumers + self.proxies:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.broker.kill()
        self.redis.kill()


@contextmanager
def stack_in(workdir: Path, links: Links = Links()) -> Iterator[Stack]:
    stack = Stack(workdir, links)
    try:
        yield stack
    finally:
        stack.kill()


# --- input -----------------------------------------------------------------------------------------


async def produce_backlog(bootstrap: str, lines: Sequence[bytes]) -> None:
    """All of `lines` into the games topic, keyed by game id as the contract says, in batches."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", max_batch_size=1 << 20)
    await producer.start()
    try:
        # The worker's own publisher: per partition, create_batch/send_batch.
        await Publisher(producer, GAMES_TOPIC, 60).send(
            [(json.loads(line)["game_id"].encode(), line) for line in lines]
        )
    finally:
        await producer.stop()


class Committed:
    """The group's committed offsets, summed over the input partitions."""

    def __init__(self, bootstrap: str) -> None:
        self.consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False)
        self.partitions = [TopicPartition(GAMES_TOPIC, p) for p in range(PARTITIONS)]

    async def __aenter__(self) -> "Committed":
        await self.consumer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.consumer.stop()

    async def total(self) -> int:
        offsets = await asyncio.gather(*(self.consumer.committed(tp) for tp in self.partitions))
        return sum(o or 0 for o in offsets)

    async def wait_for(self, total: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while await self.total() < total:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the group did not commit {total} records within {timeout:.0f} s")
            await asyncio.sleep(POLL)


# --- measurements ----------------------------------------------------------------------------------


@dataclass
class Drain:
    games_per_s: float
    cpu_per_1000: float  # the consumer processes
    infra_cpu_per_1000: float  # broker + Redis
    peak_rss_mib: float  # the largest consumer process
    redis_cpu_us_per_game: float  # the Redis server's CPU (INFO cpu) over the drain, per game
    redis_trips_per_game: float | None = None
    commands: dict[str, tuple[int, float]] = field(default_factory=dict)  # command -> (calls, µs per game)
    profile: dict[str, float] = field(default_factory=dict)  # part -> share of the CPU samples (py-spy)

    @property
    def cpu_us_per_game(self) -> float:
        return self.cpu_per_1000 * 1000


async def redis_cpu(url: str) -> float:
    """The Redis server's CPU seconds so far (`INFO cpu`: user + system of the main process)."""
    client = Redis.from_url(url)
    try:
        info = await client.info("cpu")
    finally:
        await client.aclose()
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


async def reset_redis_commands(url: str) -> None:
    """Command statistics (`INFO commandstats`) from zero."""
    client = Redis.from_url(url)
    try:
        await client.config_resetstat()
    finally:
        await client.aclose()


async def redis_commands(url: str, games: int) -> dict[str, tuple[int, float]]:
    """Command -> (calls, server µs per game) since `reset_redis_commands`, the commands that
    scripts call included (`INFO commandstats`)."""
    client = Redis.from_url(url)
    try:
        stats = await client.info("commandstats")
    finally:
        await client.aclose()
    return {
        name.removeprefix("cmdstat_"): (int(v["calls"]), float(v["usec"]) / games)
        for name, v in stats.items()
        if isinstance(v, dict)
    }


async def time_scripts(workdir: Path, lines: Sequence[bytes], seed_csv: Path) -> dict[str, float]:
    """Server µs per game of each of the worker's scripts on a fixed batch: the first `len(lines)`
    games read, planned and applied as one batch on a fresh Redis with the seed imported, then
    every claimed event acknowledged (`INFO commandstats`' time of EVALSHA after each step)."""
    engine = Engine(ARENA, Points(DEFAULTS.training_rating))
    games = [decode_game(line, DEFAULTS.max_message_bytes) for line in lines]
    with stack_in(workdir) as stack:
        await stack.start(seed_csv)
        client = Redis.from_url(stack.redis.url)
        store = RedisStore(client, PREFIX, "bench", lease_seconds=60, retention_seconds=86400, codec=RATING_STATES)

        async def server_us() -> float:
            return float((await client.info("commandstats"))["cmdstat_evalsha"]["usec"])

        try:
            await store.read([], [])  # the scripts loaded, the guard's keys in place
            before = await server_us()
            _, _, planned = await read_and_plan(engine, games, store.read)
            after_read = await server_us()
            _, claimed = await store.apply([p.write for p in planned if p.write is not None])
            after_apply = await server_us()
            outboxes = {rating: list(events) for rating, events in claimed.outboxes.items()}
            while outboxes:  # in rounds, one event per rating each, as the worker publishes
                heads = {rating: events.pop(0) for rating, events in outboxes.items()}
                outboxes = {rating: events for rating, events in outboxes.items() if events}
                await store.ack(heads, keep=outboxes.keys())
            after_ack = await server_us()
        finally:
            await client.aclose()
    n = len(games)
    return {
        "read": (after_read - before) / n,
        "apply": (after_apply - after_read) / n,
        "ack": (after_ack - after_apply) / n,
    }


async def measure_drain(stack: Stack, total: int, timeout: float) -> tuple[float, int, dict[int, float], float]:
    """From the group's first commit to its commit of `total` records: (seconds, records, CPU
    seconds per process over that window, the processes being the consumers, broker, Redis;
    the Redis server's CPU seconds over that window by `INFO cpu`)."""
    pids = [p.pid for p in stack.consumers]
    infra = [pid for pid in (stack.broker.process, stack.redis.process) if pid is not None]
    watched = pids + [p.pid for p in infra]
    async with Committed(stack.bootstrap) as committed:
        deadline = time.monotonic() + timeout
        first: tuple[float, int, dict[int, float], float] | None = None
        while True:
            done = await committed.total()
            now = time.perf_counter()
            if first is None and done > 0:
                first = (now, done, {pid: cpu_seconds(pid) for pid in watched}, await redis_cpu(stack.redis.url))
            if done >= total:
                assert first is not None
                cpu = {pid: cpu_seconds(pid) - first[2][pid] for pid in watched}
                return now - first[0], total - first[1], cpu, await redis_cpu(stack.redis.url) - first[3]
            for p in stack.consumers:
                if p.poll() is not None:
                    raise RuntimeError(f"consumer {p.args!r} exited with {p.returncode}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{done} of {total} records committed after {timeout:.0f} s")
            await asyncio.sleep(POLL)


def drain_result(stack: Stack, seconds: float, records: int, cpu: dict[int, float], redis_seconds: float) -> Drain:
    consumers = {p.pid for p in stack.consumers}
    mine = sum(c for pid, c in cpu.items() if pid in consumers)
    infra = sum(c for pid, c in cpu.items() if pid not in consumers)
    peak = max(memory_kib(pid, "VmHWM") for pid in consumers) / 1024
    return Drain(records / seconds, mine / records * 1000, infra / records * 1000, peak, redis_seconds / records * 1e6)


def scrape(port: int) -> list[str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        lines: list[str] = response.read().decode().splitlines()
        return lines


def redis_round_trips(ports: Sequence[int]) -> int:
    """Script calls the workers made (each one round trip), from their /metrics."""
    total = 0
    for port in ports:
        for line in scrape(port):
            if line.startswith("rating_redis_seconds_count"):
                total += int(float(line.rsplit(" ", 1)[1]))
    return total


def end_to_end_buckets(port: int) -> dict[float, float]:
    """The worker's own `rating_end_to_end_seconds` histogram: cumulative count per upper bound."""
    buckets = {}
    for line in scrape(port):
        if line.startswith("rating_end_to_end_seconds_bucket{"):
            bound = line.split('le="', 1)[1].split('"', 1)[0]
            buckets[float(bound)] = float(line.rsplit(" ", 1)[1])
    return buckets


def histogram_quantile(q: float, before: dict[float, float], after: dict[float, float]) -> float:
    """Prometheus's histogram_quantile over the observations between two scrapes (linear
    within the bucket, so only as fine as the buckets)."""
    bounds = sorted(after)
    counts = [after[b] - before.get(b, 0.0) for b in bounds]
    rank = q * counts[-1]
    lower, below = 0.0, 0.0
    for bound, cumulative in zip(bounds, counts, strict=True):
        if cumulative >= rank:
            if bound == float("inf"):
                return lower
            return lower + (bound - lower) * (rank - below) / max(cumulative - below, 1e-9)
        lower, below = bound, cumulative
    return lower


# Where a worker's CPU goes, by the innermost frame of each sample that is one of these (the
# first that matches, in this order): the encoding of events runs inside the engine's calls and
# pydantic inside the decoder's, so each gets its own share.
PROFILE_PARTS = [
    ("encode", ("worker/engine/events.py", "worker/store/state_codec.py")),
    ("decode", ("worker/engine/decoder.py", "pydantic")),
    ("engine", ("worker/engine/", "worker/rules/")),
    ("Redis client", ("redis/", "msgpack", "worker/store/")),
    ("Kafka client", ("aiokafka/", "kafka/")),
]


def py_spy() -> str | None:
    """py-spy, if installed (a tool of the benchmark, not a dependency: `pip install py-spy`)."""
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


def profile_parts(raw: Path) -> dict[str, float]:
    """Share of the samples of a `py-spy record -f raw` file per part of `PROFILE_PARTS` (and "other")."""
    counts: dict[str, int] = {name: 0 for name, _ in PROFILE_PARTS} | {"other": 0}
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        frames = reversed(stack.split(";"))  # innermost first
        parts = (name for frame in frames for name, marks in PROFILE_PARTS if any(m in frame for m in marks))
        counts[next(parts, "other")] += int(n)
    total = sum(counts.values()) or 1
    return {name: c / total for name, c in counts.items()}


async def run_drain(
    workdir: Path,
    kind: str,
    lines: Sequence[bytes],
    seed_csv: Path,
    workers: int = 1,
    profile: bool = False,
    links: Links = Links(),
    system: str = "arena",
) -> Drain:
    with stack_in(workdir, links) as stack:
        await stack.start(None if kind == "ceiling" else seed_csv, system)
        await produce_backlog(stack.bootstrap, lines)
        await reset_redis_commands(stack.redis.url)
        ports: list[int] = []
        spy, raw = None, workdir / f"profile-{time.monotonic_ns()}.txt"
        if kind == "worker":
            ports = stack.start_workers(workers, system=system)
            if profile and (binary := py_spy()) is not None:
                command = [
                    binary,
                    "record",
                    "-r",
                    "200",
                    "-f",
                    "raw",
                    "-o",
                    str(raw),
                    "-p",
                    str(stack.consumers[0].pid),
                ]
                spy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        else:
            stack.start_child(kind, len(lines))
        seconds, records, cpu, redis_seconds = await measure_drain(stack, len(lines), timeout=1800)
        if spy is not None:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file and exits
            spy.wait(timeout=60)
        result = drain_result(stack, seconds, records, cpu, redis_seconds)
        result.commands = await redis_commands(stack.redis.url, len(lines))
        if kind == "worker":
            result.redis_trips_per_game = redis_round_trips(ports) / len(lines)
        elif kind in ("naive", "batched"):
            result.redis_trips_per_game = stack.child_report()["redis_round_trips"] / len(lines)
        else:
            result.redis_trips_per_game = 0.0
        if spy is not None and raw.exists():
            result.profile = profile_parts(raw)
        return result


PEERS = Path(__file__).with_name("peers")
QUIX_GUARANTEES = {"quix": "at-least-once", "quix-eos": "exactly-once"}


def peers_ready() -> str | None:
    """The peers' virtual environment, set up if missing (`bench/peers/setup`); None if it fails."""
    if not (PEERS / ".venv" / "bin" / "python").exists():
        _progress("setting up bench/peers/.venv (Quix Streams, hashed requirements, type check)")
        done = subprocess.run([str(PEERS / "setup")], check=False, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"the peers' environment could not be set up (bench/peers/setup):\n{done.stdout}{done.stderr}")
            return None
    return str(PEERS / ".venv" / "bin" / "python")


async def run_quix_drain(workdir: Path, kind: str, lines: Sequence[bytes], seed_csv: Path, python: str) -> Drain:
    """Quix Streams (`bench/peers/quix_peer.py`) draining the backlog. Its games are counted where
    they are rated, after the repartition topic (the input's commits say only that a game was
    re-keyed): games/s and CPU are the peer's own, from its first game rated to its last; the
    broker's CPU is over the whole run, joining included (an upper bound)."""
    with stack_in(workdir) as stack:
        await stack.start(None)
        await produce_backlog(stack.bootstrap, lines)
        command = [python, str(PEERS / "quix_peer.py"), "--bootstrap", stack.bootstrap, "--seed", str(seed_csv)]
        command += ["--expect", str(len(lines)), "--state-dir", tempfile.mkdtemp(dir=workdir)]
        command += ["--guarantee", QUIX_GUARANTEES[kind]]
        env = os.environ | {"PYTHONPATH": str(PEERS.parent.parent)}  # the project's rules
        log = (workdir / f"quix-{time.monotonic_ns()}.log").open("wb")
        peer = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=log, start_new_session=True)
        stack.consumers.append(peer)
        assert stack.broker.process is not None
        broker_before = cpu_seconds(stack.broker.process.pid)
        assert peer.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(peer.stdout.readline), timeout=1800)
        if not line:
            raise RuntimeError(f"the Quix peer exited with {peer.wait()} (log: {log.name})")
        report = json.loads(line)
        games = report["games"]
        broker = cpu_seconds(stack.broker.process.pid) - broker_before
        peak = memory_kib(peer.pid, "VmHWM") / 1024
        drain = Drain(games / report["seconds"], report["cpu_seconds"] / games * 1000, broker / games * 1000, peak, 0.0)
        drain.redis_trips_per_game = 0.0
        return drain


@dataclass
class Latency:
    offered_per_s: float
    samples: int
    p50_ms: float
    p99_ms: float
    p999_ms: float
    behind_s: float  # from the end of the load to all of it committed: > ~1 s, the consumer fell behind
    own: tuple[float, float, float] | None = None  # the worker's histogram: p50, p99, p99.9 in ms


class Probe:
    """Reads the output topic and notes when each game's first event arrives (wall clock)."""

    def __init__(self, bootstrap: str) -> None:
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=TANSU_FETCH_WAIT_MS
        )
        self.seen: dict[str, float] = {}
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.consumer.start()
        self.consumer.assign([TopicPartition(RATINGS_TOPIC, p) for p in range(OUT_PARTITIONS)])
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        while True:
            batches = await self.consumer.getmany(timeout_ms=100, max_records=10000)
            now = time.time()
            for records in batches.values():
                for record in records:
                    game_id = json.loads(record.value).get("game_id")
                    if game_id is not None and game_id not in self.seen:
                        self.seen[game_id] = now

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
        await self.consumer.stop()


async def steady(
    bootstrap: str,
    lines: Iterator[bytes],
    rate: float,
    seconds: float,
    on_tick: "Callable[[float], None] | None" = None,
) -> dict[str, float]:
    """Offer `rate` games/s for `seconds`; returns each game's input timestamp (s)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    sent: dict[str, float] = {}
    futures: list[asyncio.Future[object]] = []
    try:
        start = time.monotonic()
        n = 0
        while (elapsed := time.monotonic() - start) < seconds:
            due = int(rate * elapsed)
            while n < due:
                line = next(lines)
                game_id = json.loads(line)["game_id"]
                now_ms = int(time.time() * 1000)
                futures.append(await producer.send(GAMES_TOPIC, line, key=game_id.encode(), timestamp_ms=now_ms))
                sent[game_id] = now_ms / 1000
                n += 1
            if len(futures) > 1000:
                await asyncio.gather(*futures)
                futures.clear()
            if on_tick is not None:
                on_tick(elapsed)
            await asyncio.sleep(TICK)
        await asyncio.gather(*futures)
    finally:
        await producer.stop()
    return sent


class TickHook:
    """Samples a process's RSS (and the broker's CPU time) every `every` seconds of the steady load."""

    def __init__(self, pid: int, every: float, broker: int, metrics_port: int) -> None:
        self.pid, self.every, self.broker, self.port = pid, every, broker, metrics_port
        self.samples: list[tuple[float, int]] = []
        self.broker_cpu: list[tuple[float, float]] = []
        self.batches: list[tuple[float, float, float]] = []  # (elapsed, games consumed, batches)

    def __call__(self, elapsed: float) -> None:
        if not self.samples or elapsed - self.samples[-1][0] >= self.every:
            self.samples.append((elapsed, memory_kib(self.pid, "VmRSS")))
            self.broker_cpu.append((elapsed, cpu_seconds(self.broker)))
            totals = {"rating_games_consumed_total": 0.0, "rating_batch_processing_seconds_count": 0.0}
            try:
                lines = scrape(self.port)
            except OSError:
                return  # the worker is still starting
            for line in lines:
                name, _, value = line.partition(" ")
                if name in totals:
                    totals[name] = float(value)
            games, batches = totals.values()
            self.batches.append((elapsed, games, batches))

    def batch_sizes(self, window: float = 60.0) -> tuple[float, float]:
        """Mean games per batch of the worker in the first and in the last `window` seconds."""

        def mean(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
            return (b[1] - a[1]) / max(b[2] - a[2], 1.0)

        seen = self.batches
        first = next((b for b in seen if b[0] >= window), seen[-1])
        last = next((b for b in seen if b[0] >= seen[-1][0] - window), seen[0])
        return mean(seen[0], first), mean(last, seen[-1])

    def broker_share(self, window: float = 60.0) -> tuple[float, float]:
        """The share of a core the broker used in the first and in the last `window` seconds."""

        def share(a: tuple[float, float], b: tuple[float, float]) -> float:
            return (b[1] - a[1]) / max(b[0] - a[0], 1e-9)

        cpu = self.broker_cpu
        first = next((c for c in cpu if c[0] >= window), cpu[-1])
        last = next((c for c in cpu if c[0] >= cpu[-1][0] - window), cpu[0])
        return share(cpu[0], first), share(last, cpu[-1])


def slow_moments(sent: dict[str, float], seen: dict[str, float], start: float) -> list[str]:
    """When the games slower than 100 ms were offered: 'from s-to s: max ms', seconds into the run."""
    slow = sorted((t - start, (seen[g] - t) * 1000) for g, t in sent.items() if g in seen and seen[g] - t > 0.1)
    moments: list[list[float]] = []
    for at, wait in slow:
        if moments and at - moments[-1][1] < 1.0:
            moments[-1][1], moments[-1][2] = at, max(moments[-1][2], wait)
        else:
            moments.append([at, at, wait])
    return [f"{a:.1f}-{b:.1f} s: {w:.0f} ms" for a, b, w in moments]


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run_latency(
    workdir: Path,
    kind: str,
    lines: Iterator[bytes],
    seed_csv: Path,
    rate: float,
    seconds: float,
    warmup: float = 1.0,
    settings: dict[str, object] | None = None,
) -> Latency:
    with stack_in(workdir) as stack:
        await stack.start(None if kind == "ceiling" else seed_csv)
        ports = stack.start_workers(1, **(settings or {})) if kind == "worker" else []
        if kind != "worker":
            stack.start_child(kind, expect=10**12)  # as many as come
        async with Committed(stack.bootstrap) as committed:
            probe = Probe(stack.bootstrap)
            await probe.start()
            try:
                # The group joined and the consumer runs before the measured load begins.
                ready = await steady(stack.bootstrap, lines, rate, 0.2)
                await committed.wait_for(len(ready), timeout=120)
                before = end_to_end_buckets(ports[0]) if ports else {}
                sent = await steady(stack.bootstrap, lines, rate, seconds)
                load_end = time.monotonic()
                await committed.wait_for(len(ready) + len(sent), timeout=300)
                behind = time.monotonic() - load_end
                after = end_to_end_buckets(ports[0]) if ports else {}
                await asyncio.sleep(0.5)  # the probe's last fetch
            finally:
                await probe.stop()
        first = min(sent.values()) + warmup
        waits = [(probe.seen[g] - t) * 1000 for g, t in sent.items() if g in probe.seen and t >= first]
        _progress(f"  slow moments (> 100 ms): {slow_moments(sent, probe.seen, first)}")
        own = None
        if ports:
            own = (
                histogram_quantile(0.5, before, after) * 1000,
                histogram_quantile(0.99, before, after) * 1000,
                histogram_quantile(0.999, before, after) * 1000,
            )
        p50, p99, p999 = (percentile(waits, q) for q in (0.5, 0.99, 0.999))
        return Latency(rate, len(waits), p50, p99, p999, behind, own)


@dataclass
class Soak:
    seconds: float
    rate: float
    rss_start_mib: float
    rss_warm_mib: float
    rss_end_mib: float
    rss_max_mib: float
    warmup: float
    broker_cpu: tuple[float, float]  # share of a core the broker used, first and last minute
    batch_sizes: tuple[float, float]  # mean games per batch of the worker, first and last minute

    @property
    def growth(self) -> float:
        return (self.rss_end_mib - self.rss_warm_mib) / self.rss_warm_mib


async def run_soak(
    workdir: Path, lines: Iterator[bytes], seed_csv: Path, rate: float, seconds: float, trace: bool = False
) -> Soak:
    """One worker under a steady load; with `trace`, in its tracemalloc mode (one frame), with a
    snapshot after the warm-up, at the middle and at the end (worker.service.memory_trace)."""
    warmup = min(60.0, seconds / 5)
    settings = {"tracemalloc_frames": 1, "tracemalloc_dir": str(workdir)} if trace else {}
    with stack_in(workdir) as stack:
        await stack.start(seed_csv)
        port = stack.start_workers(1, **settings)[0]  # as shipped: latency is not measured here
        assert stack.broker.process is not None
        pid = stack.consumers[0].pid
        hook = TickHook(pid, every=5.0, broker=stack.broker.process.pid, metrics_port=port)
        marks = [warmup, (warmup + seconds) / 2] if trace else []

        def tick(elapsed: float) -> None:
            hook(elapsed)
            if marks and elapsed >= marks[0]:
                marks.pop(0)
                os.kill(pid, signal.SIGUSR2)

        sent = await steady(stack.bootstrap, lines, rate, seconds, tick)
        async with Committed(stack.bootstrap) as committed:
            await committed.wait_for(len(sent), timeout=300)
        hook(seconds + hook.every)
        if trace:
            os.kill(pid, signal.SIGUSR2)
            deadline = time.monotonic() + 120
            while len(list(workdir.glob(f"tracemalloc-{pid}-*.snap"))) < 3 and time.monotonic() < deadline:
                await asyncio.sleep(0.5)
        warm = next(rss for t, rss in hook.samples if t >= warmup)
        rss = [r / 1024 for _, r in hook.samples]
        return Soak(
            seconds, rate, rss[0], warm / 1024, rss[-1], max(rss), warmup, hook.broker_share(), hook.batch_sizes()
        )


def print_trace(workdir: Path) -> None:
    """The soak's tracemalloc snapshots compared: totals, and the sites that grew most."""
    paths = sorted(workdir.glob("tracemalloc-*.snap"))
    if len(paths) < 3:
        print(f"tracemalloc: {len(paths)} snapshots written, 3 expected")
        return
    games, totals, sites = memory_trace.compare(paths)
    held = (f"{t / 1024:.0f} KiB after {g:,} games" for g, t in zip(games, totals, strict=True))
    print("\ntracemalloc (1 frame): " + ", ".join(held))
    print("sites that grew most from the first snapshot to the last (bytes per 1,000 games in each interval):")
    for site in sites:
        flag = "GROWS WITH GAMES" if site.grows_with_games else ""
        rates = " / ".join(f"{r:+,.0f}" for r in site.per_thousand)
        print(f"  {site.site:<60} {site.sizes[0] / 1024:8.1f} -> {site.sizes[-1] / 1024:8.1f} KiB  {rates}  {flag}")
    leaks = [s.site for s in sites if s.grows_with_games]
    print(f"sites growing with the games (a byte a game or more, in every interval): {leaks or 'none'}")


# --- the two comparison consumers (child processes) ------------------------------------------------


def games_consumer(bootstrap: str) -> AIOKafkaConsumer:
    """The comparison consumers' input, in the benchmark's group, from the beginning."""
    return AIOKafkaConsumer(
        GAMES_TOPIC,
        bootstrap_servers=bootstrap,
        group_id=GROUP,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=TANSU_FETCH_WAIT_MS,
    )


async def ceiling_child(bootstrap: str, expect: int) -> dict[str, float]:
    """Pass-through: parse each game, two small events per game by send_batch, commit per batch."""
    consumer = games_consumer(bootstrap)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", max_batch_size=1 << 20)
    await asyncio.gather(consumer.start(), producer.start())
    # The worker's own publisher: per partition, create_batch/send_batch, all acknowledged.
    publisher = Publisher(producer, RATINGS_TOPIC, 60)
    done = 0
    try:
        while done < expect:
            batches = await consumer.getmany(timeout_ms=200, max_records=DEFAULTS.batch_size)
            events: list[tuple[bytes, bytes]] = []
            for records in batches.values():
                for record in records:
                    game = json.loads(record.value)
                    for player in (game["white_id"], game["black_id"]):
                        value = json.dumps({"game_id": game["game_id"], "player_id": player}).encode()
                        events.append((player.encode(), value))
                done += len(records)
            await publisher.send(events)
            if batches:
                await consumer.commit()
    finally:
        await asyncio.gather(consumer.stop(), producer.stop())
    return {"games": done, "redis_round_trips": 0}


async def naive_child(bootstrap: str, redis_url: str, expect: int) -> dict[str, float]:
    """One game at a time: read, rate, write, publish and await, commit."""
    engine = Engine(ARENA, Points(DEFAULTS.training_rating))
    consumer = games_consumer(bootstrap)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    redis = Redis.from_url(redis_url)
    retention_ms = DEFAULTS.idempotency_retention_seconds * 1000
    await asyncio.gather(consumer.start(), producer.start())
    done = trips = 0
    try:
        async for record in consumer:
            game = decode_game(record.value, DEFAULTS.max_message_bytes)
            ratings = engine.ratings_read(game) or ()
            values = await redis.mget(
                *(keys.state_key(PREFIX, r) for r in ratings), keys.game_key(PREFIX, game.game_id)
            )
            trips += 1
            states = {r: UNSEEN if v is None else decode_state(v) for r, v in zip(ratings, values, strict=False)}
            record_hex = values[-1]
            known = (
                None
                if record_hex is None
                else bytes.fromhex(record_hex if isinstance(record_hex, str) else record_hex.decode())
            )
            outcome = engine.apply(game, states, known)
            if outcome.verdict in (Verdict.APPLIED, Verdict.SKIPPED):
                async with redis.pipeline(transaction=True) as pipe:
                    for update in outcome.updates:
                        pipe.set(keys.state_key(PREFIX, update.key), encode_state(update.state))
                    pipe.set(keys.game_key(PREFIX, game.game_id), outcome.digest.hex(), px=retention_ms)
                    await pipe.execute()
                trips += 1
                for update in outcome.updates:
                    await producer.send_and_wait(RATINGS_TOPIC, update.payload, key=update.key.encode())
            await consumer.commit()
            done += 1
            if done >= expect:
                break
    finally:
        await asyncio.gather(consumer.stop(), producer.stop())
        await redis.aclose()
    return {"games": done, "redis_round_trips": trips}


async def batched_child(bootstrap: str, redis_url: str, expect: int) -> dict[str, float]:
    """The careful batched loop a strong engineer writes in a day: per `getmany`, one MGET of the
    batch's states, the project's engine over them in consumed order, one pipelined write of the
    new states, the events by `send_batch`, a commit. No idempotency records, no outboxes, no
    leases: correct for one instance that never crashes between its write and its commit."""
    engine = Engine(ARENA, Points(DEFAULTS.training_rating))
    consumer = games_consumer(bootstrap)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", max_batch_size=1 << 20)
    redis = Redis.from_url(redis_url)
    publisher = Publisher(producer, RATINGS_TOPIC, 60)
    await asyncio.gather(consumer.start(), producer.start())
    done = trips = 0
    try:
        while done < expect:
            batches = await consumer.getmany(timeout_ms=200, max_records=DEFAULTS.batch_size)
            games = [decode_game(r.value, DEFAULTS.max_message_bytes) for records in batches.values() for r in records]
            classified = [engine.classify(g) for g in games]  # once per game, as the worker does
            ratings = sorted({r for _, keys_read in classified for r in keys_read or ()})
            states = {}
            if ratings:
                values = await redis.mget([keys.state_key(PREFIX, r) for r in ratings])
                trips += 1
                states = {r: UNSEEN if v is None else decode_state(v) for r, v in zip(ratings, values, strict=True)}
            written, events = {}, []
            for game, classification in zip(games, classified, strict=True):
                for update in engine.apply(game, states, None, classification).updates:
                    states[update.key] = written[update.key] = update.state
                    events.append((update.key.encode(), update.payload))
            if written:
                async with redis.pipeline(transaction=False) as pipe:
                    for rating, state in written.items():
                        pipe.set(keys.state_key(PREFIX, rating), encode_state(state))
                    await pipe.execute()
                trips += 1
            await publisher.send(events)
            if batches:
                await consumer.commit()
            done += len(games)
    finally:
        await asyncio.gather(consumer.stop(), producer.stop())
        await redis.aclose()
    return {"games": done, "redis_round_trips": trips}


async def delay_line(listen: int, upstream: int, delay: float) -> None:
    """A TCP proxy that forwards each chunk `delay` seconds after it arrived, both ways, without
    holding back the chunks behind it: a link's latency, not a bandwidth cap."""

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def receive() -> None:
            while data := await reader.read(1 << 16):
                queue.put_nowait((time.monotonic() + delay, data))
            queue.put_nowait((0.0, b""))

        async def send() -> None:
            while (item := await queue.get())[1]:
                await asyncio.sleep(max(0.0, item[0] - time.monotonic()))
                writer.write(item[1])
                await writer.drain()
            writer.close()

        await asyncio.gather(receive(), send())

    async def connection(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", upstream)
        await asyncio.gather(pump(client_r, server_w), pump(server_r, client_w), return_exceptions=True)
        client_w.close()
        server_w.close()

    server = await asyncio.start_server(connection, "127.0.0.1", listen)
    print("listening", flush=True)
    await server.serve_forever()


async def child(args: argparse.Namespace) -> None:
    """Consume `expect` games, print the report, then stay (alive, measurable) until killed
    (or, for `proxy`, forward until killed)."""
    if args.child == "proxy":
        await delay_line(args.listen, args.upstream, args.delay_ms / 1000)
        return
    if args.child == "ceiling":
        report = await ceiling_child(args.bootstrap, args.expect)
    elif args.child == "batched":
        report = await batched_child(args.bootstrap, args.redis_url, args.expect)
    else:
        report = await naive_child(args.bootstrap, args.redis_url, args.expect)
    print(json.dumps(report), flush=True)
    await asyncio.Event().wait()


# --- the run ----------------------------------------------------------------------------------------


def workload(players: int, games: int) -> Iterator[bytes]:
    """The same games every time: one simulation, one seed."""
    return ArenaSimulation(players, seed=6).game_lines(games)


def table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    out.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(out)


async def bench(args: argparse.Namespace) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="stream-bench-"))
    seed_csv = workdir / "seed.csv"
    seed_csv.write_text(ArenaSimulation(args.players, seed=6).seed_csv(), encoding="utf-8")
    naive_rate = args.naive_rate
    if args.only in (None, "drain"):
        drains = await drain_part(args, workdir, seed_csv)
        naive_rate = naive_rate or 0.8 * drains["naive"].games_per_s
    if args.only in (None, "links"):
        await links_part(args, workdir, seed_csv)
    if args.only in (None, "systems"):
        await systems_part(args, workdir)
    if args.only in (None, "latency"):
        if naive_rate is None:
            raise SystemExit("--only latency needs --naive-rate (80% of the naive loop's drain rate)")
        await latency_part(args, workdir, seed_csv, naive_rate)
    if args.only in (None, "soak") and args.soak_seconds > 0:
        _progress(f"soak: worker x1 at {args.rate:.0f} games/s for {args.soak_seconds:.0f} s")
        soak = await run_soak(
            workdir, workload(args.players, 10**9), seed_csv, args.rate, args.soak_seconds, args.tracemalloc
        )
        print(
            f"\nsoak: worker x1 at {soak.rate:.0f} games/s for {soak.seconds:.0f} s: RSS {soak.rss_start_mib:.1f} MiB "
            f"at the start, {soak.rss_warm_mib:.1f} MiB after {soak.warmup:.0f} s of warm-up, "
            f"{soak.rss_end_mib:.1f} MiB at the end ({soak.growth * 100:+.1f}% after warm-up), at most "
            f"{soak.rss_max_mib:.1f} MiB; the broker used {soak.broker_cpu[0]:.0%} of a core in the first "
            f"minute, {soak.broker_cpu[1]:.0%} in the last; the worker's batches held {soak.batch_sizes[0]:.0f} "
            f"games on average in the first minute, {soak.batch_sizes[1]:.0f} in the last"
        )
        if args.tracemalloc:
            print_trace(workdir)
    print(f"(machine: {os.cpu_count()} cores, Python {sys.version.split()[0]})")


def replay_cpu_us_per_game(workdir: Path, lines: Sequence[bytes], seed_csv: Path) -> float:
    """`rating-worker rate`'s CPU per game on the same games and seed: the CPU of a replay of them
    less that of a replay of no games (start-up and seeding), both whole processes."""
    games, empty = workdir / "games.jsonl", workdir / "empty.jsonl"
    games.write_bytes(b"".join(line + b"\n" for line in lines))
    empty.write_bytes(b"")

    def cpu_of(path: Path) -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        command = [sys.executable, "-m", "worker", "rate", str(path), "--seed", str(seed_csv)]
        subprocess.run([*command, "--out", "/dev/null", "--dlq", "/dev/null"], check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime

    return (cpu_of(games) - cpu_of(empty)) / len(lines) * 1e6


def median_drain(runs: Sequence[Drain]) -> Drain:
    """The run of median speed (its other figures with it, so that a row is one run)."""
    return sorted(runs, key=lambda d: d.games_per_s)[len(runs) // 2]


async def drain_part(args: argparse.Namespace, workdir: Path, seed_csv: Path) -> dict[str, Drain]:
    lines = list(workload(args.players, args.games))
    kinds = [("ceiling", "ceiling", 1), ("batched loop", "batched", 1), ("naive loop", "naive", 1)]
    python = peers_ready()
    if python is not None:
        kinds += [("Quix at-least-once", "quix", 1), ("Quix exactly-once", "quix-eos", 1)]
    kinds += [("worker x1", "worker", 1), ("worker x2", "worker", 2)]
    runs: dict[str, list[Drain]] = {name: [] for name, _, _ in kinds}
    replay: list[float] = []
    for run in range(1, args.runs + 1):
        for name, kind, workers in kinds:
            backlog = lines[: args.naive_games] if kind == "naive" else lines
            _progress(f"run {run}: backlog of {len(backlog)} games: {name}")
            if kind in QUIX_GUARANTEES:
                assert python is not None
                runs[name].append(await run_quix_drain(workdir, kind, backlog, seed_csv, python))
            else:
                profile = name == "worker x1" and run == args.runs  # py-spy's samples cost a little: once
                runs[name].append(await run_drain(workdir, kind, backlog, seed_csv, workers=workers, profile=profile))
            d = runs[name][-1]
            print(
                f"run {run}: {name}: {d.games_per_s:,.0f} games/s, {d.cpu_us_per_game:.0f} µs CPU/game, "
                f"Redis {d.redis_cpu_us_per_game:.1f} µs CPU/game",
                flush=True,
            )
        replay.append(replay_cpu_us_per_game(workdir, lines, seed_csv))
        print(f"run {run}: rate (the replay) on the same games: {replay[-1]:.0f} µs CPU/game", flush=True)
    drains = {name: median_drain(r) for name, r in runs.items()}
    profiled = runs["worker x1"][-1]
    header = ["consumer", "games", "games/s", "CPU µs/game", "Redis CPU µs/game", "broker+Redis CPU s/1000"]
    rows = [[*header, "Redis trips/game", "peak RSS MiB"]]
    for name, d in drains.items():
        games = args.naive_games if name == "naive loop" else len(lines)
        trips = "-" if d.redis_trips_per_game is None else f"{d.redis_trips_per_game:.3f}"
        speed, cpu, infra = f"{d.games_per_s:,.0f}", f"{d.cpu_us_per_game:.0f}", f"{d.infra_cpu_per_1000:.2f}"
        redis = f"{d.redis_cpu_us_per_game:.1f}"
        rows.append([name, str(games), speed, cpu, redis, infra, trips, f"{d.peak_rss_mib:.0f}"])
    print(f"\nDraining a backlog, median of {args.runs} runs (games/s from the group's first commit to its last):")
    print(table(rows))
    for name in ("worker x1", "batched loop"):
        print(f"\nRedis server time per game of {name} by command (commandstats, the scripts' calls included):")
        top = sorted(drains[name].commands.items(), key=lambda kv: -kv[1][1])[:14]
        print("  " + ", ".join(f"{n} {us:.1f} µs ({c / args.games:.2f}/game)" for n, (c, us) in top))
    one = drains["worker x1"]
    if profiled.profile:
        us = profiled.cpu_us_per_game
        print(
            f"where worker x1's CPU goes (py-spy, run {args.runs}, {us:.0f} µs/game): "
            + ", ".join(f"{part} {share:.0%} ({share * us:.0f} µs)" for part, share in profiled.profile.items())
        )
    else:
        print("where worker x1's CPU goes: not measured (py-spy is not installed: pip install py-spy)")
    per_script = await time_scripts(workdir, lines[: DEFAULTS.batch_size], seed_csv)
    print(
        f"the worker's scripts on one batch of {DEFAULTS.batch_size} games (server µs per game): "
        + ", ".join(f"{name} {us:.1f}" for name, us in per_script.items())
    )
    ceiling, batched, naive = (drains[n] for n in ("ceiling", "batched loop", "naive loop"))
    two = drains["worker x2"]
    floor = statistics.median(replay)
    print(
        f"\nratios: worker x1 / ceiling {one.games_per_s / ceiling.games_per_s:.2f}, "
        f"worker x1 / batched loop {one.games_per_s / batched.games_per_s:.2f} (target >= 1.3), "
        f"worker x2 / batched loop {two.games_per_s / batched.games_per_s:.2f}, "
        f"worker x1 / naive {one.games_per_s / naive.games_per_s:.1f}, scaling x2 / x1 "
        f"{two.games_per_s / one.games_per_s:.2f}"
    )
    for name in ("Quix at-least-once", "Quix exactly-once"):
        if name in drains:
            print(f"worker x1 / {name} {one.games_per_s / drains[name].games_per_s:.2f}")
    print(
        f"worker x1 CPU {one.cpu_us_per_game:.0f} µs/game against replay {floor:.0f} + ceiling "
        f"{ceiling.cpu_us_per_game:.0f} + 10 = {floor + ceiling.cpu_us_per_game + 10:.0f} µs/game "
        "(target: at most that)"
    )
    print(
        f"Redis CPU: worker x1 {one.redis_cpu_us_per_game:.1f} µs/game, batched loop "
        f"{batched.redis_cpu_us_per_game:.1f} µs/game: "
        f"{one.redis_cpu_us_per_game / batched.redis_cpu_us_per_game:.1f}x (target <= 4x)"
    )
    return {"ceiling": ceiling, "naive": naive, "batched": batched, "worker x1": one, "worker x2": two}


async def systems_part(args: argparse.Namespace, workdir: Path) -> None:
    """Worker x1 of each rating system draining a backlog of its own games (its simulation's, its
    seed imported), with the pass-through ceiling on the arena's games as the baseline, in every
    run; and how long a new deployment takes to rate a history at that speed."""
    systems = list(BY_NAME)
    backlogs, seeds = {}, {}
    for system in systems:
        sim = traffic(BY_NAME[system])(args.players, seed=6)
        seeds[system] = workdir / f"seed-{system}.csv"
        seeds[system].write_text(sim.seed_csv(), encoding="utf-8")
        backlogs[system] = list(sim.game_lines(args.games))
    runs: dict[str, list[Drain]] = {name: [] for name in ["ceiling", *systems]}
    for run in range(1, args.runs + 1):
        _progress(f"run {run}: ceiling, then worker x1 of {', '.join(systems)}")
        runs["ceiling"].append(await run_drain(workdir, "ceiling", backlogs["arena"], seeds["arena"]))
        for system in systems:
            runs[system].append(await run_drain(workdir, "worker", backlogs[system], seeds[system], system=system))
        print(
            f"run {run}: " + ", ".join(f"{name} {r[-1].games_per_s:,.0f} games/s" for name, r in runs.items()),
            flush=True,
        )
    drains = {name: median_drain(r) for name, r in runs.items()}
    ceiling = drains["ceiling"].games_per_s
    print(f"\nEach system's worker x1 draining {args.games} of its games, median of {args.runs} runs:")
    rows = [["consumer", "games/s", "/ ceiling", "/ arena", "CPU µs/game", "peak RSS MiB", "10M games take"]]
    for name, d in drains.items():
        ratio = "-" if name == "ceiling" else f"{d.games_per_s / drains['arena'].games_per_s:.2f}"
        hours = 10_000_000 / d.games_per_s / 3600
        rows.append(
            [
                name if name == "ceiling" else f"worker x1, {name}",
                f"{d.games_per_s:,.0f}",
                f"{d.games_per_s / ceiling:.2f}",
                ratio,
                f"{d.cpu_us_per_game:.0f}",
                f"{d.peak_rss_mib:.0f}",
                f"{hours:.1f} h",
            ]
        )
    print(table(rows))


async def links_part(args: argparse.Namespace, workdir: Path, seed_csv: Path) -> None:
    """Worker x1 and the batched loop draining the same backlog over direct links and over links
    with latency (round trips cost what they cost between machines; here they cost nothing)."""
    lines = list(workload(args.players, args.links_games))
    slow = Links(args.kafka_latency_ms, args.redis_latency_ms)
    rows = [["consumer", "links", "games/s", "CPU µs/game", "Redis trips/game"]]
    speeds: dict[tuple[str, Links], float] = {}
    for links in (Links(), slow):
        for name, kind in (("batched loop", "batched"), ("worker x1", "worker")):
            runs = []
            for run in range(1, args.runs + 1):
                _progress(f"run {run}: backlog of {len(lines)} games, {links}: {name}")
                runs.append(await run_drain(workdir, kind, lines, seed_csv, links=links))
                print(f"run {run}: {name}, {links}: {runs[-1].games_per_s:,.0f} games/s", flush=True)
            d = median_drain(runs)
            speeds[name, links] = d.games_per_s
            trips = "-" if d.redis_trips_per_game is None else f"{d.redis_trips_per_game:.3f}"
            rows.append([name, str(links), f"{d.games_per_s:,.0f}", f"{d.cpu_us_per_game:.0f}", trips])
    print(f"\nDraining {len(lines)} games over direct and slow links, median of {args.runs} runs:")
    print(table(rows))
    for links in (Links(), slow):
        ratio = speeds["worker x1", links] / speeds["batched loop", links]
        print(f"worker x1 / batched loop, {links}: {ratio:.2f}")


async def latency_part(args: argparse.Namespace, workdir: Path, seed_csv: Path, naive_rate: float) -> None:
    header = ["consumer", "offered games/s", "games measured", "p50 ms", "p99 ms", "p99.9 ms"]
    rows = [[*header, "worker's own p50/p99/p99.9 ms", "done after the load (s)"]]
    runs: list[tuple[str, str, float, dict[str, object]]] = [
        (f"ceiling (fetch wait {TANSU_FETCH_WAIT_MS} ms)", "ceiling", args.rate, {}),
        (f"naive (fetch wait {TANSU_FETCH_WAIT_MS} ms)", "naive", naive_rate, {}),
        (f"worker (RATING_KAFKA_FETCH_MAX_WAIT_MS={TANSU_FETCH_WAIT_MS})", "worker", args.rate, TANSU_SETTINGS),
        (f"worker (default, {DEFAULTS.kafka_fetch_max_wait_ms})", "worker", args.rate, {}),
    ]
    for name, kind, offered, settings in runs:
        rate = offered
        while True:
            _progress(f"steady load: {name} at {rate:.0f} games/s for {args.latency_seconds:.0f} s")
            lines = workload(args.players, 10**9)
            lat = await run_latency(workdir, kind, lines, seed_csv, rate, args.latency_seconds, settings=settings)
            # The naive loop's drain rate may not be sustainable beside the load generator: then
            # its percentiles would measure a growing queue. Slow down until it keeps up.
            if kind != "naive" or lat.behind_s < BEHIND_LIMIT or rate < 10:
                break
            _progress(f"  the naive loop fell behind ({lat.behind_s:.0f} s): again at 80% of that rate")
            rate *= 0.8
        percentiles = [f"{lat.p50_ms:.1f}", f"{lat.p99_ms:.1f}", f"{lat.p999_ms:.1f}"]
        own = "-" if lat.own is None else "/".join(f"{v:.1f}" for v in lat.own)
        done = f"{lat.behind_s:.1f}"
        rows.append([name, f"{lat.offered_per_s:,.0f}", str(lat.samples), *percentiles, own, done])
    print(
        "\nEnd-to-end latency at a steady load (input timestamp -> the game's first output record read by a probe;"
        "\nthe worker's own: input timestamp -> its batch's events acknowledged, from its histogram's buckets):"
    )
    print(table(rows))


def _progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=200_000, help="backlog of the ceiling and the worker")
    parser.add_argument("--naive-games", type=int, default=20_000, help="backlog of the naive loop")
    parser.add_argument("--players", type=int, default=PLAYERS)
    parser.add_argument("--rate", type=float, default=1000.0, help="steady load of the latency runs and the soak")
    parser.add_argument("--latency-seconds", type=float, default=30.0)
    parser.add_argument("--soak-seconds", type=float, default=600.0, help="0: no soak")
    parser.add_argument(
        "--tracemalloc",
        action="store_true",
        help="the soak's worker in its tracemalloc mode: snapshots after warm-up, middle, end, compared",
    )
    parser.add_argument(
        "--only",
        choices=["drain", "links", "systems", "latency", "soak"],
        help="one part (latency needs the naive rate: --naive-rate)",
    )
    parser.add_argument("--links-games", type=int, default=20_000, help="backlog of the drains over slow links")
    parser.add_argument("--kafka-latency-ms", type=float, default=5.0, help="added to each way of every Kafka link")
    parser.add_argument("--redis-latency-ms", type=float, default=1.0, help="added to each way of every Redis link")
    parser.add_argument("--runs", type=int, default=3, help="drains of each consumer (the median is shown)")
    parser.add_argument("--naive-rate", type=float, help="offered load of the naive loop's latency run")
    parser.add_argument("--child", choices=["ceiling", "naive", "batched", "proxy"], help=argparse.SUPPRESS)
    parser.add_argument("--listen", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--upstream", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--delay-ms", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--redis-url", help=argparse.SUPPRESS)
    parser.add_argument("--expect", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        asyncio.run(child(args))
    else:
        asyncio.run(bench(args))


if __name__ == "__main__":
    main()
