"""What the fault-injection tests share: a steady feeder, a commit timeline, the final accounting.

- `Feeder` produces chunks of input records on a schedule with one producer and remembers where
  each record landed (partition, offset, from the broker's acknowledgement), so the tests know
  exactly what was produced up to any moment without the broker's (wrong) end offsets.
- `CommitTimeline` samples the group's committed offsets every ~0.1 s in the background; the
  recovery times are read from it afterwards:
    * recovery  = from the end of the fault to the first sample where every partition's
      committed offset reaches the end of what had been acknowledged to the feeder at the
      end of the fault ("everything produced up to then is committed");
    * first progress = from the end of the fault to the first sample whose committed total
      exceeds the last one taken before the fault ended.
- `account` is the exact accounting every fault test ends with: every offered game applied
  once (its idempotency record `rating:g:{id}`), audit() clean on the output topic, Redis
  states equal to each rating's last event, no event of a game not applied, no outbox left.
  It writes the test's report line (fault_report) before asserting, so a failing run still
  reports its numbers.
"""

import asyncio
import json
import os
import signal
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError

from tests.integration.audit import Audit, audit
from tests.integration.conftest import Stack
from tests.integration.fault_report import FaultReport, report_fault
from tests.integration.kafka_io import Record, read_topic
from tests.integration.test_replicas import logs_tail, seq_regressions
from worker.embedded.stack import Broker, RedisServer
from worker.store import keys
from worker.store.state_codec import decode_state

PREFIX = "rating:"  # the worker's default RATING_REDIS_KEY_PREFIX
SAMPLE_EVERY = 0.1  # seconds between two samples of the committed offsets
COMMITTED_TIMEOUT = 2.0  # one sample's bound (the broker may be frozen)

Message = tuple[bytes, bytes | None]  # value, key


def run_fault(stack: Stack, body: Coroutine[Any, Any, None], timeout: float) -> None:
    """The test's body under a deadline (a hang fails); a failure carries each worker's log tail."""
    try:
        asyncio.run(asyncio.wait_for(body, timeout))
    except (AssertionError, TimeoutError) as e:
        e.add_note(logs_tail(stack))
        raise


def require_local(stack: Stack) -> tuple[Broker, RedisServer]:
    """Freezing and restarting need the local processes, not containers."""
    if not isinstance(stack.broker, Broker) or not isinstance(stack.redis, RedisServer):
        pytest.skip("fault injection needs the local broker and redis-server (RATING_TEST_BACKEND=local)")
    return stack.broker, stack.redis


def keyed_messages(lines: Sequence[bytes]) -> list[Message]:
    """Keyed by game id, as the arena does: one player's games land in many partitions."""
    return [(line, json.loads(line)["game_id"].encode()) for line in lines]


def chunked(items: Sequence[Message], size: int) -> list[list[Message]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


@dataclass(frozen=True)
class Sent:
    value: bytes
    key: bytes | None
    partition: int
    offset: int
    sent_at: float  # time.monotonic() when its chunk was handed to the producer
    acked_at: float  # time.monotonic() of the acknowledgement


@dataclass
class Feeder:
    """One producer for the whole test; `sent` holds every acknowledged record, in send order."""

    bootstrap: str
    topic: str
    sent: list[Sent] = field(default_factory=list)
    producer: AIOKafkaProducer | None = None

    async def start(self) -> None:
        self.producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5, acks="all")
        await self.producer.start()

    async def stop(self) -> None:
        if self.producer is not None:
            await self.producer.stop()

    async def send(self, messages: Sequence[Message]) -> None:
        """Produce and wait for every acknowledgement (per-partition order is the given order)."""
        assert self.producer is not None
        started = time.monotonic()
        futures = [await self.producer.send(self.topic, value, key=key) for value, key in messages]
        metadata = await asyncio.gather(*futures)
        now = time.monotonic()
        for (value, key), m in zip(messages, metadata, strict=True):
            self.sent.append(Sent(value, key, m.partition, m.offset, started, now))

    async def feed(self, chunks: Sequence[Sequence[Message]], pause: float) -> None:
        """One chunk every `pause` seconds (plus the time its acknowledgements take)."""
        for chunk in chunks:
            await self.send(chunk)
            await asyncio.sleep(pause)

    def ends(self, sent_before: float = float("inf")) -> dict[int, int]:
        """Per partition, the offset after the last record acknowledged (and handed to the producer
        before `sent_before`: a chunk sent during a frozen broker is acknowledged after the thaw)."""
        end: dict[int, int] = {}
        for s in self.sent:
            if s.sent_at <= sent_before:
                end[s.partition] = max(end.get(s.partition, 0), s.offset + 1)
        return end

    def last_ack(self) -> float:
        return max(s.acked_at for s in self.sent)


@dataclass
class CommitTimeline:
    """The consumer group's committed offsets, sampled in the background."""

    stack: Stack
    partitions: int
    samples: list[tuple[float, dict[int, int]]] = field(default_factory=list)
    consumer: AIOKafkaConsumer | None = None
    task: "asyncio.Task[None] | None" = None

    @property
    def group(self) -> str:
        return f"group-{self.stack.name}"

    async def start(self) -> None:
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=self.stack.broker.bootstrap, group_id=self.group, enable_auto_commit=False
        )
        await self.consumer.start()
        self.task = asyncio.create_task(self._sample())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        if self.consumer is not None:
            await self.consumer.stop()

    async def _sample(self) -> None:
        assert self.consumer is not None
        while True:
            try:
                async with asyncio.timeout(COMMITTED_TIMEOUT):
                    snap = {}
                    for p in range(self.partitions):
                        tp = TopicPartition(self.stack.games_topic, p)
                        snap[p] = await self.consumer.committed(tp) or 0
                self.samples.append((time.monotonic(), snap))
            except (KafkaError, TimeoutError, OSError):
                pass  # the broker is frozen or the coordinator moved: no sample this time
            await asyncio.sleep(SAMPLE_EVERY)

    def committed_at(self, sent: Sent) -> float | None:
        """When the record was first seen committed."""
        for t, snap in self.samples:
            if snap.get(sent.partition, 0) > sent.offset:
                return t
        return None

    def latest(self) -> dict[int, int]:
        return self.samples[-1][1] if self.samples else {}

    async def wait_until(self, ends: dict[int, int], timeout: float) -> float:
        """Wait until everything in `ends` is committed; the monotonic time of that sample."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reached = self.reached(ends, since=0.0)
            if reached is not None:
                return reached
            await asyncio.sleep(SAMPLE_EVERY)
        raise AssertionError(f"offsets not committed within {timeout} s: {self.latest()} < {ends}")

    async def wait_some(self, timeout: float = 30.0) -> None:
        """The workers joined and committed something: faults then hit work in flight."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sum(self.latest().values()) > 0:
                return
            await asyncio.sleep(SAMPLE_EVERY)
        raise AssertionError(f"nothing committed within {timeout} s of starting the workers")

    def reached(self, ends: dict[int, int], since: float) -> float | None:
        for t, snap in self.samples:
            if t >= since and all(snap.get(p, 0) >= end for p, end in ends.items()):
                return t
        return None

    def first_progress(self, since: float) -> float | None:
        before = [sum(snap.values()) for t, snap in self.samples if t < since]
        baseline = before[-1] if before else 0
        for t, snap in self.samples:
            if t >= since and sum(snap.values()) > baseline:
                return t
        return None

    def recovery(self, fault_end: float, feeder: Feeder) -> tuple[float | None, float | None]:
        """(recovery, first progress) in seconds after `fault_end`, None if never seen.

        Read once the feeding is over, so that the records sent before `fault_end` are all acknowledged.
        """
        reached, first = self.reached(feeder.ends(sent_before=fault_end), fault_end), self.first_progress(fault_end)
        return (
            None if reached is None else reached - fault_end,
            None if first is None else first - fault_end,
        )


def describe(seconds: float | None) -> str:
    return "never" if seconds is None else f"{seconds:.1f} s"


def drop_stale_copies(records: list[Record]) -> tuple[list[Record], int]:
    """Byte-identical copies that came after a newer event of their key, which the contract allows
    only when a send was delayed beyond the publication lease (a frozen process or broker)."""
    kept: list[Record] = []
    seen: dict[str, bytes] = {}
    top: dict[bytes | None, int] = {}
    stale = 0
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        event = json.loads(r.value or b"{}")
        event_id, seq = str(event.get("event_id")), int(event.get("seq", 0))
        if event_id in seen and seen[event_id] == r.value and seq < top.get(r.key, 0):
            stale += 1
            continue
        seen.setdefault(event_id, r.value or b"")
        top[r.key] = max(top.get(r.key, 0), seq)
        kept.append(r)
    return kept, stale


@dataclass
class Accounting:
    tally: Audit
    records: list[Record]
    stale_copies: int
    dead_letters: list[Record]


async def account(
    stack: Stack,
    good_lines: Sequence[bytes],
    *,
    fault: str,
    messages: int,
    recovery: float | None,
    first_progress: float | None = None,
    allow_stale_copies: bool = False,
    expect_no_dead_letters: bool = True,
) -> Accounting:
    """The exact accounting of a run (see the module doc); writes the report line, then asserts."""
    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1, timeout=60)
    letters = await read_topic(stack.broker.bootstrap, stack.dlq_topic, 0, timeout=10, idle=0.5)
    game_ids = {json.loads(line)["game_id"] for line in good_lines}
    assert len(game_ids) == len(good_lines), "the good lines repeat a game id"

    # The raw numbers first, before any assertion, for the report.
    payloads: dict[str, set[bytes]] = defaultdict(set)
    seqs: dict[bytes | None, set[int]] = defaultdict(set)
    event_games: dict[str, str | None] = {}
    for r in records:
        event = json.loads(r.value or b"{}")
        payloads[event["event_id"]].add(r.value or b"")
        seqs[r.key].add(int(event["seq"]))
        event_games[event["event_id"]] = event.get("game_id")
    twice = {str(event_games[e]) for e, p in payloads.items() if len(p) > 1}
    missing_events = sum(max(s) - len(s) for s in seqs.values())

    client = redis.Redis.from_url(stack.redis.url, socket_timeout=10)
    try:
        game_prefix = keys.game_key(PREFIX, "")
        recorded = {k.decode().removeprefix(game_prefix) for k in client.scan_iter(f"{game_prefix}*", count=5000)}
        state_prefix = keys.state_key(PREFIX, "")
        state_keys = list(client.scan_iter(f"{state_prefix}*", count=5000))
        stored = {}
        for key, value in zip(state_keys, client.mget(state_keys) if state_keys else [], strict=True):
            assert isinstance(value, bytes), f"{key!r} vanished or is not a string: {value!r}"
            stored[key.decode().removeprefix(state_prefix)] = decode_state(value)
        pending = [k.decode() for k in client.scan_iter(f"{keys.outbox_key(PREFIX, '')}*", count=5000)]
    finally:
        client.close()

    kept, stale = drop_stale_copies(records) if allow_stale_copies else (records, 0)
    copies = sum(len(v) for v in _copies(records).values())
    lost_games = game_ids - recorded
    report_fault(
        FaultReport(
            fault=fault,
            games_offered=len(game_ids),
            messages=messages,
            applied=len(game_ids & recorded),
            copies=copies,
            lost=len(lost_games) + missing_events,
            double_applied=len(twice),
            recovery_s=None if recovery is None else round(recovery, 2),
            first_progress_s=None if first_progress is None else round(first_progress, 2),
            dead_letters=len(letters),
        )
    )

    assert not lost_games, f"{len(lost_games)} games have no idempotency record, e.g. {sorted(lost_games)[:10]}"
    assert not twice, f"{len(twice)} games applied twice (an event id with different bytes): {sorted(twice)[:10]}"
    assert not missing_events, f"{missing_events} events missing from the topic:\n" + describe_gaps(
        records, stored, pending
    )
    try:
        tally = audit(kept)
    except AssertionError as e:
        e.add_note(seq_regressions(records))
        raise
    per_game = Counter(e.game_id for e in tally.events.values() if e.game_id is not None)
    assert set(per_game) <= game_ids, f"events of games never offered: {sorted(set(per_game) - game_ids)[:10]}"
    odd = {g: n for g, n in per_game.items() if n not in (1, 2)}
    assert not odd, f"games with other than 1 or 2 distinct events: {sorted(odd.items())[:10]}"
    assert recorded == game_ids, f"records of games never offered: {sorted(recorded - game_ids)[:10]}"
    published = tally.final_states()
    differ = sorted(k for k in stored.keys() | published.keys() if stored.get(k) != published.get(k))
    assert not differ, f"{len(differ)} ratings differ between Redis and their last published event, e.g. " + "; ".join(
        f"{k}: redis {stored.get(k)} vs published {published.get(k)}" for k in differ[:3]
    )
    assert not pending, f"{len(pending)} outboxes still hold events after everything was committed: {pending[:5]}"
    if expect_no_dead_letters:
        assert not letters, f"{len(letters)} valid games dead-lettered, e.g. {letters[:3]}"
    return Accounting(tally, records, stale, letters)


def describe_gaps(records: list[Record], stored: dict[str, Any], pending: list[str], shown: int = 5) -> str:
    """The first ratings whose seq has gaps in the topic: the seqs missing, the events around them,
    and what Redis holds (its state's seq, whether an outbox still holds events)."""
    history: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        event = json.loads(r.value or b"{}")
        history[(r.key or b"").decode()].append((r.offset, int(event["seq"]), str(event["event_id"])))
    outboxes = {k.removeprefix(keys.outbox_key(PREFIX, "")) for k in pending}
    lines = []
    for key, events in sorted(history.items()):
        published = {seq for _, seq, _ in events}
        gaps = sorted(set(range(1, max(published) + 1)) - published)
        if not gaps:
            continue
        near = [f"@{o} seq {q} {e}" for o, q, e in events if gaps[0] - 2 <= q <= gaps[-1] + 2]
        state = stored.get(key)
        lines.append(
            f"{key}: seqs {gaps} never published; redis state seq {getattr(state, 'seq', None)}, outbox "
            f"{'present' if key in outboxes else 'empty'}; around: {', '.join(near)}"
        )
        if len(lines) >= shown:
            break
    return "\n".join(lines)


def copies_context(records: list[Record], shown: int = 3) -> str:
    """Where re-publications are: for the first keys with a copy, that key's records around it."""
    history: dict[bytes | None, list[tuple[int, int, str]]] = defaultdict(list)
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        event = json.loads(r.value or b"{}")
        history[r.key].append((r.offset, int(event.get("seq", 0)), str(event.get("event_id"))))
    lines = []
    for key, events in history.items():
        seen: set[str] = set()
        for n, (_, _, event_id) in enumerate(events):
            if event_id in seen:
                around = ", ".join(f"@{o} seq {q}" for o, q, _ in events[max(0, n - 4) : n + 3])
                lines.append(f"{key!r}: {around}")
                break
            seen.add(event_id)
        if len(lines) >= shown:
            break
    return "\n".join(lines)


def _copies(records: list[Record]) -> dict[str, list[Record]]:
    """Every record after the first of its event id (byte-identical or not)."""
    first: set[str] = set()
    extra: dict[str, list[Record]] = defaultdict(list)
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        event_id = json.loads(r.value or b"{}")["event_id"]
        if event_id in first:
            extra[event_id].append(r)
        first.add(event_id)
    return extra


# Run in its own process, so that nothing (our event loop, the GIL) comes between seeing the
# leases and sending the signal. A worker holds the leases of a batch's outboxes from its apply
# script to the acknowledgement of their last round; it is known to have its apply's reply (a
# large one, which Redis may still be writing) once it released some of them: the moment, then,
# when the worker is in its rounds of sends to Kafka and acknowledgements in Redis.
_SIGNAL_WHEN_PUBLISHING = """
import collections, os, sys, time
import redis
url, pattern, pid, sig, least, timeout = sys.argv[1:]
client = redis.Redis.from_url(url, socket_timeout=5)
tokens = client.register_script(
    "local out = {} for i, k in ipairs(redis.call('KEYS', ARGV[1])) do out[i] = redis.call('GET', k) end return out"
)
deadline = time.monotonic() + float(timeout)
before = collections.Counter()
while time.monotonic() < deadline:
    held = collections.Counter(tokens(args=[pattern]))
    if any(before[t] > n >= int(least) for t, n in held.items()):
        os.kill(int(pid), int(sig))
        print(max(held.values()))
        sys.exit(0)
    before = held
sys.exit(1)
"""


async def signal_when_publishing(stack: Stack, pid: int, sig: signal.Signals, least: int, timeout: float = 20) -> int:
    """Send `sig` to process `pid` (redis-server or the broker) while a worker is in its publication
    rounds with at least `least` outboxes still to finish. Returns how many leases that worker held."""
    pattern = f"{PREFIX}{keys.LEASE}*"
    args = [stack.redis.url, pattern, str(pid), str(int(sig)), str(least), str(timeout)]
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _SIGNAL_WHEN_PUBLISHING, *args, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(process.communicate(), timeout + 10)
    assert process.returncode == 0, f"no worker was publishing {least} outboxes within {timeout} s"
    return int(out)


def kafka_client_id(first: bytes) -> str:
    """The client id in the header of a Kafka request (size, api key, version, correlation id, id)."""
    if len(first) < 14:
        return ""
    size = int.from_bytes(first[12:14], "big", signed=True)
    return first[14 : 14 + max(size, 0)].decode(errors="replace")


@dataclass
class Proxy:
    """A TCP proxy on 127.0.0.1 in front of `upstream_port`, to cut and slow a worker's connections.

    A connection is *targeted* when `target` accepts the first bytes its client sent (all are, by
    default; for the broker, those of the worker's Kafka client id). Only targeted connections
    feel the faults and are counted:
    - `delay`: each chunk waits that long before it is forwarded, both ways (added latency,
      and a bandwidth cap);
    - `cut()`: every targeted connection is reset, and new ones are reset as they open, until
      `heal()`.
    """

    upstream_port: int = 0
    target: Callable[[bytes], bool] = lambda first: True
    port: int = 0
    delay: float = 0.0
    cutting: bool = False
    connections: int = 0  # targeted connections opened
    bytes_up: int = 0  # targeted bytes, client -> server
    bytes_down: int = 0  # targeted bytes, server -> client
    open: set[asyncio.StreamWriter] = field(default_factory=set)  # both ends of every connection
    targeted: set[asyncio.StreamWriter] = field(default_factory=set)  # both ends of targeted ones
    loop: asyncio.AbstractEventLoop | None = None
    thread: threading.Thread | None = None

    def start(self) -> int:
        """Listen (on `port`, or a free one) in a thread of its own, so that a test blocked in a
        subprocess call cannot stall the traffic; returns the port."""
        ready = threading.Event()

        def serve() -> None:
            self.loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self.loop)  # this thread's loop, for the shutdown's gather()
            server = self.loop.run_until_complete(asyncio.start_server(self._connection, "127.0.0.1", self.port))
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            self.loop.run_forever()
            server.close()
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.close()

        self.thread = threading.Thread(target=serve, name="fault-proxy", daemon=True)
        self.thread.start()
        assert ready.wait(5), "the proxy did not start"
        return self.port

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def cut(self) -> None:
        self.cutting = True
        assert self.loop is not None
        self.loop.call_soon_threadsafe(self._reset_all, True)

    def heal(self) -> None:
        self.cutting = False

    def stop(self) -> None:
        if self.loop is not None and self.thread is not None:
            self.loop.call_soon_threadsafe(self._reset_all, False)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)

    def _reset_all(self, targeted_only: bool) -> None:
        for writer in list(self.open):
            if not targeted_only or writer in self.targeted:
                writer.transport.abort()

    def forward(self, data: bytes, up: bool) -> bool:
        """Whether to pass on this chunk of a targeted connection (all, here)."""
        return True

    async def _connection(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        first = await client_r.read(65536)
        targeted = bool(first) and self.target(first)
        if not first or (targeted and self.cutting):
            client_w.transport.abort()
            return
        try:
            server_r, server_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            client_w.transport.abort()
            return
        ends = (client_w, server_w)
        self.open.update(ends)
        if targeted:
            self.connections += 1
            self.targeted.update(ends)
        pumps = [
            asyncio.create_task(self._pump(client_r, server_w, up=True, targeted=targeted, first=first)),
            asyncio.create_task(self._pump(server_r, client_w, up=False, targeted=targeted)),
        ]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            for writer in ends:
                self.open.discard(writer)
                self.targeted.discard(writer)
                writer.transport.abort()

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, up: bool, targeted: bool, first: bytes = b""
    ) -> None:
        data = first or await reader.read(65536)
        while data:
            if targeted:
                if self.delay:
                    await asyncio.sleep(self.delay)
                if self.cutting:
                    return
                if up:
                    self.bytes_up += len(data)
                else:
                    self.bytes_down += len(data)
            if not targeted or self.forward(data, up):
                writer.write(data)
                await writer.drain()
            data = await reader.read(65536)


@dataclass
class ReplyDropper(Proxy):
    """A proxy in front of redis-server for one worker, to cut its replies off.

    Once armed, the first request carrying `trigger` (and at least `min_request` bytes) starts
    the cut: that request and every later one still reach Redis and run, but no reply comes
    back, on any connection, until `heal()`. An asymmetric partition, or a reply lost to a
    timeout: the client cannot know whether its command ran.
    """

    trigger: bytes = b""
    min_request: int = 0
    armed: bool = False
    dropping: bool = False
    cut_at: float | None = None

    def heal(self) -> None:
        self.dropping = False

    def forward(self, data: bytes, up: bool) -> bool:
        if up and self.armed and self.trigger in data and len(data) >= self.min_request:
            self.dropping, self.armed, self.cut_at = True, False, time.monotonic()
        return up or not self.dropping


def live(stack: Stack) -> list[int]:
    """Indexes of the workers still running."""
    return [n for n, w in enumerate(stack.workers) if w.poll() is None]


def assert_alive(stack: Stack, expected: Sequence[int]) -> None:
    dead = {n: stack.workers[n].returncode for n in expected if stack.workers[n].poll() is not None}
    assert not dead, f"workers exited on their own (index: status): {dead}"


def thaw_process(pid: int) -> None:
    os.kill(pid, signal.SIGCONT)
