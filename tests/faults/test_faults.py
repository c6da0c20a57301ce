"""Fault injection under a steady load: the broker frozen, Redis killed or frozen, one replica's
Redis replies lost, every input delivered three times, a flood of malformed input, a rebalance storm,
the connections to Redis or the broker slowed and cut by a TCP proxy.

Each test seeds an arena of 150 players, feeds its games in chunks every 0.5 s (keyed by game
id, so a player's games are spread over the 6 partitions and 2 workers race for his ratings)
while the fault happens, and ends with the exact accounting of `accounting.account`: every
game applied once, the output audits clean, Redis ends in each rating's last published state,
nothing published that was not applied, no outbox left. Each prints its recovery time:

    recovery       = end of the fault -> the group has committed every record the feeder had
                     handed to its producer by the end of the fault (acknowledged by then or,
                     with a frozen broker, just after);
    first progress = end of the fault -> the group's committed offsets first move again.

For the faults that last as long as the load (repeated input, the flood), "the end of the fault"
is the last chunk produced: recovery is the time to drain what was offered.

Run them alone with `pytest -m faults`; `bench/reliability_report.py` runs them and prints a
table of the per-fault lines they write to $RATING_FAULT_REPORT.
"""

import asyncio
import dataclasses
import hashlib
import json
import random
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.faults.accounting import Accounting, account, copies_context
from tests.faults.load import CommitTimeline, Feeder, Message, Sent, chunked, describe, keyed_messages
from tests.faults.proxy import Proxy, ReplyDropper, kafka_client_id
from tests.faults.signals import signal_when_publishing, thaw_process
from tests.support.contract import RESULTS, TERMINATIONS
from tests.support.stack import FAST_LEASE, Stack, require_local
from worker.service.connections import KAFKA_CLIENT_ID
from worker.store.scripts import ACK

# 100 s a test: a hang anywhere fails it; every wait inside has its own shorter bound.
pytestmark = [pytest.mark.integration, pytest.mark.faults, pytest.mark.slow, pytest.mark.timeout(100)]

PLAYERS = 150
PARTITIONS = 6
WORKERS = 2
PAUSE = 0.5  # seconds between two chunks of input
CHUNK = 100  # games per chunk: ~200 games/s offered, a steady load well under the workers' capacity
DRAIN_TIMEOUT = 60.0  # after the load: everything committed within this


@dataclass
class Load:
    """A seeded arena, its input lines, the feeder and the commit timeline of one test."""

    stack: Stack
    lines: list[bytes]
    feeder: Feeder
    timeline: CommitTimeline

    async def stop(self) -> None:
        await self.timeline.stop()
        await self.feeder.stop()


async def start_load(stack: Stack, seed: int, games: int, partitions: int = PARTITIONS) -> Load:
    await stack.create_topics(games=partitions, ratings=4)
    sim = stack.seeded_simulation(PLAYERS, seed=seed)
    lines = list(sim.game_lines(games))
    feeder = Feeder(stack.broker.bootstrap, stack.games_topic)
    await feeder.start()
    timeline = CommitTimeline(stack, partitions)
    await timeline.start()
    return Load(stack, lines, feeder, timeline)


async def start_workers(load: Load, first: list[Message], *, workers: int = WORKERS, **settings: object) -> None:
    """The first chunk, then the workers; returns once they joined and committed something."""
    await load.feeder.send(first)
    for _ in range(workers):
        load.stack.start_worker(**settings)
    await load.timeline.wait_some()


async def drain(load: Load) -> float:
    """Every record produced is committed: the monotonic time it was seen so."""
    end = await load.stack.end_offsets(len(load.feeder.sent))
    assert end == load.feeder.ends(), f"the topic's ends {end} are not the acknowledged ones {load.feeder.ends()}"
    return await load.timeline.wait_until(end, DRAIN_TIMEOUT)


async def settle(
    load: Load, fault_end: float, feeding: "asyncio.Task[None] | None" = None, alive: Sequence[int] | None = None
) -> tuple[float, float | None, float | None]:
    """After the fault: the rest of the feeding, then everything committed; the workers (all,
    unless `alive` says which) still running. Returns (when it was all committed, recovery, first
    progress), the last two in seconds after `fault_end`."""
    if feeding is not None:
        await asyncio.wait_for(feeding, 60)
    done = await drain(load)
    recovery, first = load.timeline.recovery(fault_end, load.feeder)
    load.stack.assert_alive(range(WORKERS) if alive is None else alive)
    return done, recovery, first


async def account_load(
    load: Load, fault: str, recovery: float | None, first: float | None, **options: bool
) -> Accounting:
    """`account` of this load's games and input messages."""
    return await account(
        load.stack,
        load.lines,
        fault=fault,
        messages=len(load.feeder.sent),
        recovery=recovery,
        first_progress=first,
        **options,
    )


def retried(stack: Stack, pattern: str) -> int:
    """How many retry warnings of the workers' logs match `pattern` (the fault was felt)."""
    return len(re.findall(pattern, stack.logs()))


# The broker and Redis faults hit work in flight: a burst of games keeps the workers busy, and
# the fault strikes while a worker is in its publication rounds (sending rounds to Kafka and
# acknowledging them in Redis, its outboxes' leases held): the most delicate moment of a batch.
BURST = 6000
BURST_AT = 8  # after this many chunks of steady load
MIN_LEASES = 100  # outboxes the publishing worker has still to finish (a batch claims ~350)


async def burst_then_signal(
    load: Load, chunks: list[list[Message]], pid: int, sig: signal.Signals
) -> "asyncio.Task[None]":
    """Steady chunks, a burst, then `sig` to `pid` while a worker publishes; returns the rest of the feeding."""
    await load.feeder.feed(chunks[1:BURST_AT], PAUSE)
    before = sum(load.feeder.ends().values())
    await load.feeder.send([m for chunk in chunks[BURST_AT : BURST_AT + BURST // CHUNK] for m in chunk])
    feeding = asyncio.create_task(load.feeder.feed(chunks[BURST_AT + BURST // CHUNK :], PAUSE))
    leases = await signal_when_publishing(load.stack, pid, sig, MIN_LEASES)
    behind = before + BURST - sum(load.timeline.latest().values())
    print(f"\n{sig.name} while a worker published ({leases} leases held), ~{behind} records of the burst uncommitted")
    return feeding


# 1. The broker frozen for longer than the session timeout.

BROKER_FREEZE = 8.0  # > the 3 s session timeout of FAST_GROUP: every member expires on thaw


async def test_broker_frozen_longer_than_the_session_timeout(stack: Stack) -> None:
    broker, _ = require_local(stack)
    load = await start_load(stack, seed=101, games=10000)
    try:
        chunks = chunked(keyed_messages(load.lines), CHUNK)
        await start_workers(load, chunks[0])
        assert broker.process is not None
        try:
            feeding = await burst_then_signal(load, chunks, broker.process.pid, signal.SIGSTOP)  # = freeze()
            await asyncio.sleep(BROKER_FREEZE)
        finally:
            broker.thaw()
        fault_end = time.monotonic()
        done, recovery, first = await settle(load, fault_end, feeding)
        # Sends delayed beyond the 3 s publication lease by the frozen broker: the contract allows
        # byte-identical copies after a newer event of their key here (and only here).
        result = await account_load(
            load,
            "broker frozen 8 s",
            recovery,
            first,
            allow_stale_copies=True,
        )
        print(
            f"\nbroker frozen {BROKER_FREEZE:.0f} s: {len(load.lines)} games, {len(result.tally.events)} events, "
            f"{result.tally.copies} copies ({result.stale_copies} after a newer event); "
            f"recovery {describe(recovery)}, first commit progress {describe(first)}; "
            f"drained {done - fault_end:.1f} s after the thaw"
        )
    finally:
        await load.stop()


# 2. Redis killed with SIGKILL and restarted on the same port with its append-only file.


async def test_redis_killed_and_restarted_from_its_append_only_file(stack: Stack) -> None:
    _, redis_server = require_local(stack)
    assert redis_server.appendonly, "the fixture's redis-server runs without an append-only file"
    load = await start_load(stack, seed=202, games=10000)
    try:
        chunks = chunked(keyed_messages(load.lines), CHUNK)
        await start_workers(load, chunks[0])
        assert redis_server.process is not None
        feeding = await burst_then_signal(load, chunks, redis_server.process.pid, signal.SIGKILL)
        redis_server.process.wait(timeout=10)
        killed_at = time.monotonic()
        await asyncio.sleep(1.0)  # the workers see connections refused
        await asyncio.to_thread(stack.processes.restart, redis_server)  # same port and directory: replays the file
        fault_end = time.monotonic()
        done, recovery, first = await settle(load, fault_end, feeding)
        assert retried(stack, REDIS_RETRIES), "no worker noticed the Redis crash"
        result = await account_load(
            load,
            "redis SIGKILL + AOF restart",
            recovery,
            first,
        )
        print(
            f"\nredis SIGKILL, down {fault_end - killed_at:.1f} s: {len(load.lines)} games, "
            f"{len(result.tally.events)} events, {result.tally.copies} copies; retried: {retried_what(stack)}; "
            f"recovery {describe(recovery)}, first commit progress {describe(first)}; "
            f"drained {done - fault_end:.1f} s after the restart"
        )
    finally:
        await load.stop()


REDIS_RETRIES = r"(redis_read|redis_apply|redis_ack|redis_claim) failed \(\w+"


def retried_what(stack: Stack) -> dict[str, int]:
    """Which Redis operations were retried, and how often (all workers)."""
    return dict(Counter(m.group(1) for m in re.finditer(REDIS_RETRIES, stack.logs())))


# 3. Redis unreachable for 30 s (SIGSTOP, then SIGCONT).

REDIS_FREEZE = 30.0


@pytest.mark.parametrize("lease", [3.0, 60.0], ids=["lease-3s", "lease-60s"])
async def test_redis_unreachable_for_thirty_seconds(stack: Stack, lease: float) -> None:
    """With a 3 s lease, the outage outlives the publication lease of the outboxes the workers were
    publishing: they must send them no further, and their next holder re-sends only their last event
    sent. With the default 60 s lease, each worker keeps its leases through the outage and resumes its
    rounds, retrying the acknowledgements whose replies the outage swallowed."""
    _, redis_server = require_local(stack)
    load = await start_load(stack, seed=303, games=14000)
    try:
        chunks = chunked(keyed_messages(load.lines), CHUNK)
        # The producer's delivery timeout stays below the lease, as the settings require.
        delivery = FAST_LEASE["producer_delivery_timeout_seconds"] if lease < 30 else 30.0
        await start_workers(
            load, chunks[0], publication_lease_seconds=lease, producer_delivery_timeout_seconds=delivery
        )
        assert redis_server.process is not None
        pid = redis_server.process.pid
        try:
            feeding = await burst_then_signal(load, chunks, pid, signal.SIGSTOP)
            frozen_until = time.monotonic() + REDIS_FREEZE
            while time.monotonic() < frozen_until:  # the workers keep running through the outage
                stack.assert_alive(range(WORKERS))
                await asyncio.sleep(1.0)
        finally:
            thaw_process(pid)
        fault_end = time.monotonic()
        stuck = load.timeline.latest()
        done, recovery, first = await settle(load, fault_end, feeding)
        assert retried(stack, REDIS_RETRIES), "no worker noticed the Redis outage"
        result = await account_load(
            load,
            f"redis unreachable 30 s (lease {lease:.0f} s)",
            recovery,
            first,
        )
        behind = sum(load.feeder.ends(sent_before=fault_end).values()) - sum(stuck.values())
        print(
            f"\nredis frozen {REDIS_FREEZE:.0f} s ({behind} records behind at SIGCONT): {len(load.lines)} games, "
            f"{len(result.tally.events)} events, {result.tally.copies} copies; retried: {retried_what(stack)}; "
            f"recovery {describe(recovery)}, first commit progress {describe(first)}; "
            f"drained {done - fault_end:.1f} s after SIGCONT"
        )
        if result.tally.copies:
            print(copies_context(result.records))
    finally:
        await load.stop()


# 3b. One replica cut off from Redis's replies for 30 s while it publishes (the lease outlives it).

ACK_SHA = hashlib.sha1(ACK.encode()).hexdigest().encode()  # what an acknowledgement request carries
BIG_ACK = 3000  # bytes: an acknowledgement of ~10 outboxes (each carries the event it drops)


async def test_one_replica_loses_redis_replies_for_thirty_seconds(stack: Stack) -> None:
    """Worker 0 talks to Redis through a proxy that, from its first large acknowledgement on, lets its
    requests through but drops every reply for 30 s; worker 1 is unaffected. Default lease (60 s),
    so worker 0 keeps its leases through the cut, and worker 1 appends to outboxes it holds."""
    _, redis_server = require_local(stack)
    proxy = ReplyDropper(redis_server.port, trigger=ACK_SHA, min_request=BIG_ACK)
    load = await start_load(stack, seed=707, games=14000)
    try:
        proxy.start()
        default_lease = {"publication_lease_seconds": 60, "producer_delivery_timeout_seconds": 30}
        chunks = chunked(keyed_messages(load.lines), CHUNK)
        await load.feeder.send(chunks[0])
        stack.start_worker(redis_url=proxy.redis_url, **default_lease)
        stack.start_worker(**default_lease)
        await load.timeline.wait_some()
        await load.feeder.feed(chunks[1:BURST_AT], PAUSE)
        proxy.armed = True
        await load.feeder.send([m for chunk in chunks[BURST_AT : BURST_AT + BURST // CHUNK] for m in chunk])
        feeding = asyncio.create_task(load.feeder.feed(chunks[BURST_AT + BURST // CHUNK :], PAUSE))
        deadline = time.monotonic() + 20
        while proxy.cut_at is None:
            assert time.monotonic() < deadline, "worker 0 sent no large acknowledgement within 20 s"
            await asyncio.sleep(0.01)
        try:
            while time.monotonic() < proxy.cut_at + REDIS_FREEZE:
                stack.assert_alive(range(WORKERS))
                await asyncio.sleep(0.5)
        finally:
            proxy.heal()
        fault_end = time.monotonic()
        done, recovery, first = await settle(load, fault_end, feeding)
        assert retried(stack, "redis_ack failed"), "worker 0 never retried an acknowledgement"
        result = await account_load(
            load,
            "one replica's redis replies lost 30 s",
            recovery,
            first,
        )
        print(
            f"\nworker 0's redis replies lost {REDIS_FREEZE:.0f} s: {len(load.lines)} games, "
            f"{len(result.tally.events)} events, {result.tally.copies} copies; retried: {retried_what(stack)}; "
            f"recovery {describe(recovery)}, first commit progress {describe(first)}; "
            f"drained {done - fault_end:.1f} s after the cut healed"
        )
    finally:
        await load.stop()
        proxy.stop()


# 4. Every input delivered three times, interleaved.

TRIPLE_CHUNK = 60  # games per chunk; each chunk carries 180 records


def triple_deliveries(messages: list[Message], rng: random.Random) -> list[list[Message]]:
    """Chunk i: its games twice, shuffled together (copies in the same batch), and the third
    delivery of chunk i-2's games (copies a batch or more later, possibly after a commit)."""
    games = chunked(messages, TRIPLE_CHUNK)
    out: list[list[Message]] = []
    for i in range(len(games) + 2):
        now = [*games[i], *games[i]] if i < len(games) else []
        rng.shuffle(now)
        late = list(games[i - 2]) if i >= 2 else []
        out.append(now + late)
    return out


async def test_every_input_delivered_three_times(stack: Stack) -> None:
    load = await start_load(stack, seed=404, games=3000)
    try:
        chunks = triple_deliveries(keyed_messages(load.lines), random.Random(404))
        produced = sum(len(c) for c in chunks)
        assert produced == 3 * len(load.lines)
        await start_workers(load, chunks[0])
        await asyncio.wait_for(load.feeder.feed(chunks[1:], PAUSE), 90)
        fault_end = load.feeder.last_ack()
        done, recovery, first = await settle(load, fault_end)
        result = await account_load(
            load,
            "every input 3 times",
            recovery,
            first,
        )
        print(
            f"\nevery game delivered 3 times: {produced} records, {len(load.lines)} games, "
            f"{len(result.tally.events)} distinct events, {result.tally.copies} byte-identical copies; "
            f"drained {done - fault_end:.1f} s after the last chunk"
        )
    finally:
        await load.stop()


# 5. A flood of malformed input mixed with good games.

MAX_BYTES = 2048  # the workers' RATING_MAX_MESSAGE_BYTES here: larger records are too_large
FLOOD_CHUNKS = 30
GOOD_PER_CHUNK = 40
# Per chunk: 160 bad records, 4 for every good game.
BAD_MIX = {"mutated": 70, "bytes": 35, "text": 25, "too_large": 10, "conflict": 20}
HYPOTHESIS_EXAMPLES = 600

ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}", re.ASCII)  # the contract's id, matched in full
STRING_FIELDS = ["event_id", "game_id", "finished_at", "white_id", "black_id", "result", "termination"]
ID_FIELDS = ["game_id", "white_id", "black_id"]
INT_FIELDS = ["time_control.base_seconds", "time_control.increment_seconds"]
ALL_PATHS = [*STRING_FIELDS, "rated", "time_control", *INT_FIELDS]
BAD_IDS = [
    "a/b",
    "a:b",
    "é",
    "x" * 129,
    "",
    "-a",
    "_a",
    ".a",
    "a b",
    "a\n",
    "\na",
    "ａ",
    "١٢",
    "a\x00",
    "p/blitz",
    "g:1",
]
BAD_TIMESTAMPS = [
    "2026-11-01T09:00:00",  # no offset
    "2026-11-01",
    "2026-13-01T09:00:00Z",
    "2026-02-30T09:00:00Z",
    "2026-11-01T24:00:00Z",
    "2026-11-01T09:00:00+25:00",
    "2026-11-01T09:00:00+0100",
    "2026-11-01T09:00Z",
    "1762000000",
    "yesterday",
    "",
]

T = TypeVar("T")
Mutation = tuple[str, str, Any]  # (what, path, value)

ANY_JSON: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**6), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([60.0, "60", "true", "1-0 ", 1, 0, True, False]),
    st.text(max_size=8),
    st.lists(st.integers(0, 9), max_size=3),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 3), max_size=2),
)


def _not_int(v: Any) -> bool:
    return not isinstance(v, int) or isinstance(v, bool)


BAD_ID = st.one_of(
    st.sampled_from(BAD_IDS),
    st.text(min_size=1, max_size=12).filter(lambda s: ID_RE.fullmatch(s) is None),
    st.text(alphabet="abc123_.-", min_size=128, max_size=140).map(lambda s: "a" + s),  # 129+ characters
)
MUTATIONS: st.SearchStrategy[Mutation] = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(STRING_FIELDS), ANY_JSON.filter(lambda v: not isinstance(v, str))),
    st.tuples(st.just("set"), st.just("rated"), ANY_JSON.filter(lambda v: not isinstance(v, bool))),
    st.tuples(st.just("set"), st.sampled_from(INT_FIELDS), ANY_JSON.filter(_not_int)),
    st.tuples(st.just("set"), st.sampled_from(INT_FIELDS), st.integers(min_value=-(10**6), max_value=-1)),
    st.tuples(st.just("set"), st.just("time_control"), ANY_JSON.filter(lambda v: not isinstance(v, dict))),
    st.tuples(st.just("set"), st.sampled_from(ID_FIELDS), BAD_ID),
    st.tuples(st.just("set"), st.just("finished_at"), st.one_of(st.sampled_from(BAD_TIMESTAMPS), st.text(max_size=12))),
    st.tuples(st.just("set"), st.just("result"), st.text(max_size=8).filter(lambda s: s not in RESULTS)),
    st.tuples(st.just("set"), st.just("termination"), st.text(max_size=12).filter(lambda s: s not in TERMINATIONS)),
    st.tuples(st.just("set"), st.just("event_id"), st.one_of(st.just(""), st.text(min_size=129, max_size=140))),
    st.tuples(st.just("drop"), st.sampled_from(ALL_PATHS), st.none()),
    st.tuples(st.just("same_players"), st.just(""), st.none()),
    st.tuples(st.just("replace"), st.just(""), ANY_JSON.filter(lambda v: not isinstance(v, dict))),
)


def hypothesis_examples(strategy: st.SearchStrategy[T], count: int) -> list[T]:
    """Up to `count` distinct examples, the same on every run (derandomized, no database)."""
    found: list[T] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @given(strategy)
    def collect(value: T) -> None:
        found.append(value)

    collect()
    return found


def mutate(game: dict[str, Any], mutation: Mutation) -> object:
    """The game with one field broken; every result is invalid by the contract."""
    what, path, value = mutation
    broken: dict[str, Any] = json.loads(json.dumps(game))
    if what == "replace":
        return value
    if what == "same_players":
        broken["black_id"] = broken["white_id"]
        return broken
    parent, name = (broken["time_control"], path.split(".")[1]) if "." in path else (broken, path)
    if what == "drop":
        del parent[name]
    else:
        parent[name] = value
    return broken


def json_kind(text: str) -> str:
    """What a text that is valid UTF-8 must be dead-lettered as: not JSON, or JSON but not a game."""

    def no_constants(name: str) -> None:
        raise ValueError(name)

    try:
        json.loads(text, parse_constant=no_constants)
    except ValueError:
        return "invalid_json"
    return "invalid_schema"


@dataclass(frozen=True)
class Offered:
    value: bytes
    key: bytes | None
    kind: str  # "good", or the dead letter's expected error.kind


def flood(lines: list[bytes], rng: random.Random) -> list[list[Offered]]:
    """Chunk 0: good games only (the warm-up); then each chunk 40 good games and 160 bad records."""
    mutations = hypothesis_examples(MUTATIONS, HYPOTHESIS_EXAMPLES)
    texts = hypothesis_examples(st.text(max_size=40), 200)
    assert len(mutations) > 300 and len(texts) > 100, (len(mutations), len(texts))
    chunks: list[list[Offered]] = []
    earlier: list[dict[str, Any]] = []
    n = 0
    for c, start in enumerate(range(0, len(lines), GOOD_PER_CHUNK)):
        good = [
            Offered(line, json.loads(line)["game_id"].encode(), "good")
            for line in lines[start : start + GOOD_PER_CHUNK]
        ]
        bad: list[Offered] = []
        if c > 0:
            for what, count in BAD_MIX.items():
                for _ in range(count):
                    n += 1
                    bad.append(bad_record(what, n, lines, earlier, mutations, texts, rng))
        earlier += [json.loads(o.value) for o in good]
        mixed = good + bad
        rng.shuffle(mixed)
        chunks.append(mixed)
    return chunks


def bad_record(
    what: str,
    n: int,
    lines: list[bytes],
    earlier: list[dict[str, Any]],
    mutations: list[Mutation],
    texts: list[str],
    rng: random.Random,
) -> Offered:
    base: dict[str, Any] = json.loads(rng.choice(lines))
    base.update(game_id=f"bad{n:06d}", event_id=f"bad-evt-{n:06d}")  # a game never offered
    if what == "mutated":
        broken = mutate(base, mutations[n % len(mutations)])
        value = json.dumps(broken, ensure_ascii=rng.random() < 0.5).encode()
        game_id = broken.get("game_id") if isinstance(broken, dict) else None
        key = game_id.encode() if isinstance(game_id, str) else None
        assert len(value) <= MAX_BYTES, value
        return Offered(value, key, "invalid_schema")
    if what == "bytes":
        while True:
            junk = rng.randbytes(rng.randrange(1, 300))
            try:
                junk.decode()
            except UnicodeDecodeError:
                return Offered(junk, None, "invalid_encoding")
    if what == "text":
        text = texts[n % len(texts)]
        return Offered(text.encode(), None, json_kind(text))
    if what == "too_large":
        if n % 2:
            value = json.dumps({**base, "comment": "x" * rng.randrange(MAX_BYTES, 3 * MAX_BYTES)}).encode()
        else:
            value = rng.randbytes(rng.randrange(MAX_BYTES + 1, 3 * MAX_BYTES))
        return Offered(value, base["game_id"].encode(), "too_large")
    # A conflicting duplicate: an earlier good game again, with other facts (same key, so after it).
    game = dict(rng.choice(earlier))
    change = rng.randrange(3)
    if change == 0:
        game["rated"] = not game["rated"]
    elif change == 1:
        game["result"] = rng.choice([r for r in RESULTS if r != game["result"]])
    else:
        game["white_id"], game["black_id"] = game["black_id"], game["white_id"]
    game["event_id"] = f"conflict-evt-{n:06d}"
    return Offered(json.dumps(game, separators=(",", ":")).encode(), game["game_id"].encode(), "conflicting_duplicate")


async def test_flood_of_malformed_input_is_dead_lettered_exactly(stack: Stack) -> None:
    load = await start_load(stack, seed=505, games=GOOD_PER_CHUNK * (FLOOD_CHUNKS + 1))
    try:
        offered = flood(load.lines, random.Random(505))
        chunks = [[(o.value, o.key) for o in chunk] for chunk in offered]
        kinds = [o.kind for chunk in offered for o in chunk]
        await start_workers(load, chunks[0], max_message_bytes=MAX_BYTES)
        flood_start = time.monotonic()
        await asyncio.wait_for(load.feeder.feed(chunks[1:], PAUSE), 60)
        fault_end = load.feeder.last_ack()
        done, recovery, first = await settle(load, fault_end)
        result = await account_load(
            load,
            "malformed flood (4 bad : 1 good)",
            recovery,
            first,
            expect_no_dead_letters=False,
        )
        sent = load.feeder.sent
        assert len(sent) == len(kinds)
        bad = {(s.partition, s.offset): (s, kind) for s, kind in zip(sent, kinds, strict=True) if kind != "good"}
        check_dead_letters(stack, result.dead_letters, bad)
        assert "dead-letter flood" in stack.logs(), "no flood alarm was logged"

        good_sent = [s for s, kind in zip(sent, kinds, strict=True) if kind == "good" and s.sent_at >= flood_start]
        rate = good_throughput(load.timeline, good_sent, flood_start)
        waits = sorted(commit_latencies(load.timeline, good_sent))
        counts = Counter(kind for _, kind in bad.values())
        print(
            f"\nflood: {len(bad)} bad records ({dict(sorted(counts.items()))}) and {len(load.lines)} good games; "
            f"all dead-lettered exactly. During the flood: good games committed {rate:.0f}/s "
            f"(offered {len(good_sent) / (fault_end - flood_start):.0f}/s; all records "
            f"{(len(sent) - len(offered[0])) / (done - flood_start):.0f}/s), a good game committed "
            f"{1000 * waits[len(waits) // 2]:.0f} ms after its acknowledgement (p50; p99 "
            f"{1000 * waits[len(waits) * 99 // 100]:.0f} ms, max {1000 * waits[-1]:.0f} ms); "
            f"drained {describe(recovery)} after the last chunk"
        )
    finally:
        await load.stop()


def check_dead_letters(stack: Stack, letters: list[Any], bad: dict[tuple[int, int], tuple[Sent, str]]) -> None:
    """Exactly one dead letter per bad record: same key, same bytes (cut if too large), right kind."""
    got: dict[tuple[int, int], Any] = {}
    for letter in letters:
        assert letter.headers.get("source.topic") == stack.games_topic, letter.headers
        source = (int(letter.headers["source.partition"]), int(letter.headers["source.offset"]))
        assert source not in got, f"record {source} dead-lettered twice"
        got[source] = letter
    missing, unexpected = bad.keys() - got.keys(), got.keys() - bad.keys()
    assert not missing, f"{len(missing)} bad records not dead-lettered, e.g. {[bad[m] for m in sorted(missing)[:3]]}"
    assert not unexpected, f"{len(unexpected)} dead letters of good records: {[got[u] for u in sorted(unexpected)[:3]]}"
    wrong = []
    for source, (sent, kind) in bad.items():
        letter = got[source]
        value = sent.value[:MAX_BYTES] if kind == "too_large" else sent.value
        if (letter.headers.get("error.kind"), letter.key, letter.value) != (kind, sent.key, value):
            wrong.append((kind, sent.value[:120], letter.headers, letter.value[:120]))
    assert not wrong, f"{len(wrong)} dead letters differ from their record, e.g. {wrong[:3]}"


def good_throughput(timeline: CommitTimeline, good: list[Sent], since: float) -> float:
    """Good games committed per second from `since` until the last of them was committed."""
    if not good:
        return 0.0
    need: dict[int, int] = {}
    for s in good:
        need[s.partition] = max(need.get(s.partition, 0), s.offset + 1)
    reached = timeline.reached(need, since)
    assert reached is not None, "the good games were never all committed"
    return len(good) / (reached - since)


def commit_latencies(timeline: CommitTimeline, records: list[Sent]) -> list[float]:
    """Per record, seconds from its acknowledgement to the first sample showing it committed."""
    waits = []
    for s in records:
        at = timeline.committed_at(s)
        assert at is not None, f"{s} never committed"
        waits.append(max(0.0, at - s.acked_at))
    return waits


# 6. A rebalance storm: replicas joining and leaving every 2-3 s.

STORM_SECONDS = 20.0


def _started(stack: Stack, n: int) -> bool:
    """The worker installed its signal handlers and consumes (a SIGTERM then means a clean stop)."""
    return '"consuming ' in (stack.tmp / f"worker-{n}.log").read_text(errors="replace")


async def test_rebalance_storm_of_replicas_joining_and_leaving(stack: Stack) -> None:
    load = await start_load(stack, seed=606, games=5000)
    rng = random.Random(606)
    try:
        chunks = chunked(keyed_messages(load.lines), CHUNK)
        await start_workers(load, chunks[0])
        feeding = asyncio.create_task(load.feeder.feed(chunks[1:], PAUSE))
        stopped: list[int] = []
        changes: list[str] = []
        storm_end = time.monotonic() + STORM_SECONDS
        while time.monotonic() < storm_end:
            await asyncio.sleep(rng.uniform(2.0, 3.0))
            running = [n for n in stack.live() if n not in stopped]
            stoppable = [n for n in running if _started(stack, n)]
            if len(running) >= 3 or (len(running) == 2 and stoppable and rng.random() < 0.5):
                victim = rng.choice(stoppable or running)
                stack.workers[victim].send_signal(signal.SIGTERM)
                stopped.append(victim)
                changes.append(f"-{victim}")
            else:
                stack.start_worker()
                changes.append(f"+{len(stack.workers) - 1}")
        fault_end = time.monotonic()
        done, recovery, first = await settle(load, fault_end, feeding, alive=())
        statuses = {n: await asyncio.to_thread(_exit_status, stack.workers[n]) for n in stopped}
        assert all(s == 0 for s in statuses.values()), f"SIGTERM'd workers did not exit 0: {statuses}"
        stack.assert_alive([n for n in range(len(stack.workers)) if n not in stopped])
        result = await account_load(
            load,
            "rebalance storm 20 s",
            recovery,
            first,
        )
        print(
            f"\nrebalance storm ({' '.join(changes)}): {len(load.lines)} games, {len(result.tally.events)} events, "
            f"{result.tally.copies} copies; recovery {describe(recovery)}, first commit progress "
            f"{describe(first)}; drained {done - fault_end:.1f} s after the last change"
        )
    finally:
        await load.stop()


def _exit_status(worker: subprocess.Popen[bytes], timeout: float = 30.0) -> int | None:
    try:
        return worker.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


# 7. The workers' connections to Redis or to the broker slowed, then cut, by a TCP proxy.

SLOW_DELAY = 0.05  # seconds added to every chunk of data, each way, while slowed
SLOW_CHUNKS = 16  # chunks of steady load fed while slowed (~8 s)
CUT_SECONDS = 10.0  # longer than the group's session timeout (3 s here)


@pytest.mark.parametrize("target", ["redis", "broker"])
async def test_connections_slowed_then_cut_by_a_proxy(stack: Stack, target: str) -> None:
    """Every connection of the workers to `target` goes through a proxy: slowed for ~8 s, then, right
    after a burst, reset and refused for 10 s. For the broker, a broker of this test advertises the
    proxy's address, so the clients' connections after their first metadata call go through it too;
    only those of the workers (their Kafka client id) are slowed and cut, not the test's own."""
    _, redis_server = require_local(stack)
    proxy = Proxy()
    port = proxy.start()
    redis_url = redis_server.url
    if target == "redis":
        proxy.upstream_port = redis_server.port
        redis_url = proxy.redis_url
    else:
        proxied = await asyncio.to_thread(stack.processes.broker, port)  # killed with the test's processes
        proxy.upstream_port = proxied.port
        proxy.target = lambda first: kafka_client_id(first) == KAFKA_CLIENT_ID
        stack = dataclasses.replace(stack, broker=proxied)  # same workers list: the fixture kills them
    load = await start_load(stack, seed=808, games=12000)
    try:
        chunks = chunked(keyed_messages(load.lines), CHUNK)
        await start_workers(load, chunks[0], redis_url=redis_url)
        await load.feeder.feed(chunks[1:BURST_AT], PAUSE)
        proxy.delay = SLOW_DELAY
        slowed_at = time.monotonic()
        await load.feeder.feed(chunks[BURST_AT : BURST_AT + SLOW_CHUNKS], PAUSE)
        progress_at = load.timeline.first_progress(slowed_at)
        slow_progress = None if progress_at is None else progress_at - slowed_at
        proxy.delay = 0.0
        burst_from = BURST_AT + SLOW_CHUNKS
        await load.feeder.send([m for chunk in chunks[burst_from : burst_from + BURST // CHUNK] for m in chunk])
        opened = proxy.connections
        proxy.cut()
        feeding = asyncio.create_task(load.feeder.feed(chunks[burst_from + BURST // CHUNK :], PAUSE))
        cut_until = time.monotonic() + CUT_SECONDS
        while time.monotonic() < cut_until:
            stack.assert_alive(range(WORKERS))
            await asyncio.sleep(0.5)
        proxy.heal()
        fault_end = time.monotonic()
        done, recovery, first = await settle(load, fault_end, feeding)
        # Strict: a produce request the client gave up on through the slowed link may still reach
        # the broker, but its ratings' next events wait one lease after it (worker.stream.pipeline),
        # so no copy may come after a newer event of its key (docs/reliability.md, 2026-12-03).
        result = await account_load(
            load,
            f"{target} link slowed {SLOW_DELAY * 1000:.0f} ms, cut {CUT_SECONDS:.0f} s",
            recovery,
            first,
        )
        # The traffic really crossed the proxy, and the workers reconnected through it after the cut.
        assert slow_progress is not None, "nothing was committed while the connections were slowed"
        assert proxy.connections > opened, "no worker reconnected through the proxy after the cut"
        events = sum(len(e.model_dump_json()) for e in result.tally.events.values())
        if target == "redis":
            # Each event was written to Redis (state and outbox) in a request of the workers.
            assert proxy.bytes_up > events, (proxy.bytes_up, events)
        else:
            # The workers fetched every game and produced every event through the proxy.
            assert proxy.bytes_down > sum(map(len, load.lines)), (proxy.bytes_down, sum(map(len, load.lines)))
            assert proxy.bytes_up > events, (proxy.bytes_up, events)
        print(
            f"\n{target} connections through the proxy ({proxy.connections} opened, {proxy.bytes_up} B up, "
            f"{result.stale_copies} late copies after a newer event, "
            f"{proxy.bytes_down} B down): {len(load.lines)} games, {len(result.tally.events)} events, "
            f"{result.tally.copies} copies; retried: {retried_what(stack)}; first commit {describe(slow_progress)} "
            f"after the slowing; recovery {describe(recovery)}, first commit progress {describe(first)} after the "
            f"cut healed; drained {done - fault_end:.1f} s after"
        )
    finally:
        await load.stop()
        proxy.stop()
