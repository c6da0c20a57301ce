"""Closing a FIDE month: `rating-worker close-period` against `rate`'s close of the same month.

    .venv/bin/python bench/close_bench.py [--players 100000] [--rounds 1] [--workers 1]
                                          [--live-rate 1000] [--runs 3] [--profile]

The month is the one two months before the current (due, and the month after it is over too, so
that no game is in the future); every game is in blitz, between players seeded with whole ratings
(1400 to about 2700, some juniors, some new to the list: the K factors vary). Each round pairs
every player with another at random (a perfect matching: `--rounds 1`, the default, is one game a
player, so every player is in the month's index, and players / 2 games). Each run:

1. **the service**: a fresh tansu broker and redis-server (bench/stream_bench.py's stack);
   `close-period --init` of the month before (so the month's games are counted at once, not
   held one by one), then `import` of the seed; the games produced, `--workers` fide workers
   (`rating-worker run`) started, and timed until every game is committed (recording games/s);
   Redis's `used_memory` before and after, per recorded game. Then `close-period MONTH`, a
   process, with its log lines: the close proper is from its "marked" line to its "finished"
   line (the month's index closed in chunks of 500 through the workers' pipeline), its drain is
   what it reports; ratings/s and events/s over the close proper, the CPU of each process over
   the command, and what is left (the index must be empty);
2. **the service under load**: the same on a fresh stack, but from 2 s before `close-period`
   until it ends, games of the next month are produced at `--live-rate` games/s and the workers
   record them (held, then counted at once after the mark; a worker closes a player it meets
   still holding the month first, and `close-period` finds him closed). Its ratings/s counts every
   rating of the index, whoever closed it;
3. **the baseline, `rate`**, in the same run: a child process (pinned to the last core, as
   bench/replay_bench.py runs `rate`) replays the same file (the close line of the month
   before, the games) through `worker.replay.replay`, then times the close line's work, the
   function `rate` calls for it (`worker.replay.closes.close_period`: mark, close every rating of
   the index in batches, each close event written out), with `rate`'s collector threshold. The
   ratio of the service's ratings/s to it is the figure (target: at least 0.3). As a check, the
   whole `rate` command is also timed on the file with and without the close line.

Then, once, on a small stack: the sizes of a player's state in Redis (the state key's bytes) and
of his events on the output topic, with 1 and with 1,000 games in the month, before and after the
close. Every run is printed, then the medians (bench/recovery_bench.py's report) and a table.
With `--profile`, one more close (not timed) with `close-period` under `py-spy record --idle`
(installed beside the interpreter: a tool of the benchmark, not a dependency): its wall time by
part, by step of a chunk and by function. Nothing is asserted: the results are in
docs/benchmarks.md.

`--child rate-close` is internal: the baseline's child process.
"""

import argparse
import asyncio
import contextlib
import gc
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from recovery_bench import Result, report
from redis.asyncio import Redis
from replay_bench import run_rate, system_env, timed
from stream_bench import (
    OUT_PARTITIONS,
    RATINGS_TOPIC,
    TANSU_SETTINGS,
    Committed,
    Stack,
    cpu_seconds,
    measure_drain,
    produce_backlog,
    py_spy,
    redis_cpu,
    stack_in,
    steady,
    table,
)

from worker.embedded.stack import TANSU_FETCH_WAIT_MS
from worker.engine.engine import Engine, Update
from worker.replay.closes import close_period
from worker.replay.memory_store import MemoryStore
from worker.replay.replay import COLLECT_AFTER, replay
from worker.replay.seed_file import read_seed_file
from worker.rules.hundredths import Points
from worker.settings import RulesSettings
from worker.store import keys
from worker.systems.period_traffic import control_line, month_index, month_period, month_start

FIDE = "fide"
PREFIX = "rating-fide:"  # fide's default RATING_REDIS_KEY_PREFIX
SEED_HEADER = "player_id,category,rating,rated_games,reached_2400,birth_year"
WARM_UP = 2.0  # seconds of live load before close-period starts: the workers already recording
TIMEOUT = 3600.0  # seconds any one step may take at most
# Results by share: decisive games a little more often won by white, 15 % draws.
RESULTS = (("1-0", "resignation", 45), ("0-1", "checkmate", 40), ("1/2-1/2", "draw_agreement", 15))
BLITZ = ({"base_seconds": 180, "increment_seconds": 0}, {"base_seconds": 180, "increment_seconds": 2})


# --- the input -------------------------------------------------------------------------------------


def the_month(now: datetime) -> str:
    """Two months before `now`'s: due, and the month after it (the live games') over."""
    return month_period(month_index(now) - 2)


def player_id(i: int) -> str:
    return f"p{i:06d}"


def seed_csv(path: Path, players: int, rng: random.Random) -> Path:
    """One blitz rating a player: a whole number of at least 1400 (FIDE lists none lower), a few
    new to the list (K 40 under 30 games), some juniors (K 40 below 2300), 2400 reached or not."""
    rows = [SEED_HEADER]
    for i in range(players):
        rating = max(1400, round(rng.gauss(1800, 250)))
        games = rng.randrange(0, 30) if rng.random() < 0.1 else rng.randrange(30, 400)
        reached = "true" if rating >= 2400 else ""
        born = str(rng.randrange(2009, 2016)) if rng.random() < 0.1 else ""
        rows.append(f"{player_id(i)},blitz,{rating},{games},{reached},{born}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def game_line(game_id: str, white: str, black: str, at: datetime, rng: random.Random) -> bytes:
    result, termination, _ = rng.choices(RESULTS, weights=[r[2] for r in RESULTS])[0]
    value = {
        "event_id": f"e-{game_id}",
        "game_id": game_id,
        "finished_at": at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "rated": True,
        "time_control": rng.choice(BLITZ),
        "white_id": white,
        "black_id": black,
        "result": result,
        "termination": termination,
    }
    return json.dumps(value, separators=(",", ":")).encode()


def first_day(month: str) -> datetime:
    return datetime.strptime(month, "%Y-%m").replace(tzinfo=UTC)


def shifted(month: str, months: int) -> str:
    """The month `months` after `month` (before it, if negative)."""
    return month_period(month_index(first_day(month)) + months)


def month_games(players: int, month: str, rounds: int, rng: random.Random) -> list[bytes]:
    """`rounds` random perfect matchings of the players (one sits out a round when they are odd),
    each game at a random instant of `month`, in the order of their instants."""
    start = first_day(month)
    seconds = (month_start(month_index(start) + 1) - start).total_seconds()
    pairs: list[tuple[str, str, float]] = []
    ids = [player_id(i) for i in range(players)]
    for _ in range(rounds):
        rng.shuffle(ids)
        pairs.extend((ids[i], ids[i + 1], rng.uniform(0, seconds - 1)) for i in range(0, players - 1, 2))
    pairs.sort(key=lambda p: p[2])
    return [
        game_line(f"g{n:08d}", white, black, start + timedelta(seconds=at), rng)
        for n, (white, black, at) in enumerate(pairs)
    ]


def live_games(players: int, month: str, rng: random.Random) -> Iterator[bytes]:
    """Games of `month` without end, between players drawn at random, the clock a second apart."""
    at, n = first_day(month), 0
    while True:
        white, black = rng.sample(range(players), 2)
        yield game_line(f"live{n:08d}", player_id(white), player_id(black), at, rng)
        n += 1
        at += timedelta(seconds=1)


# --- the service -----------------------------------------------------------------------------------


def command(stack: Stack, *args: str, **settings: object) -> "subprocess.CompletedProcess[str]":
    """A `rating-worker` command of fide against the stack, to its end."""
    env = stack.env(system=FIDE, **TANSU_SETTINGS, **settings)
    done = subprocess.run(
        [sys.executable, "-m", "worker", *args], env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"rating-worker {' '.join(args)} failed ({done.returncode}): {done.stderr[-3000:]}")
    return done


async def used_memory(url: str) -> tuple[int, int]:
    """Redis's `used_memory` (bytes) and its number of keys."""
    client = Redis.from_url(url)
    try:
        return int((await client.info("memory"))["used_memory"]), int(await client.dbsize())
    finally:
        await client.aclose()


async def index_size(url: str, month: str) -> int:
    client = Redis.from_url(url)
    try:
        return int(await client.scard(keys.index_key(PREFIX, month)))
    finally:
        await client.aclose()


async def start_recording(stack: Stack, seed: Path, month: str, lines: Sequence[bytes], workers: int) -> Result:
    """A fresh stack with the month before `month` closed, the seed imported, `lines` recorded by
    the workers already started: games/s, Redis's memory per recorded game, the index's size."""
    await stack.start(None, FIDE)
    command(stack, "close-period", "--init", shifted(month, -1))
    command(stack, "import", str(seed))
    before = await used_memory(stack.redis.url)
    await produce_backlog(stack.bootstrap, lines)
    stack.start_workers(workers, system=FIDE, **TANSU_SETTINGS)
    seconds, records, _, _ = await measure_drain(stack, len(lines), TIMEOUT)
    after = await used_memory(stack.redis.url)
    return {
        # From the group's first commit: nan when that one commit was the whole month (a small run).
        "recording games/s": records / seconds if seconds > 0 else float("nan"),
        "Redis B per recorded game": (after[0] - before[0]) / len(lines),
        "Redis keys per recorded game": (after[1] - before[1]) / len(lines),
        "ratings in the index": float(await index_size(stack.redis.url, month)),
    }


@dataclass
class Close:
    """What one `close-period` process reported and took."""

    wall: float  # the process, start to exit
    drain: float  # what it reports
    close: float  # from its "marked" log line to its "finished" one
    closed: int  # ratings it closed
    by_games: int  # ratings found closed already (by a worker, their next game)
    cpu: float  # the process's own CPU seconds


_DONE = re.compile(r"done in [\d.]+ s \(drain ([\d.]+) s\).*; (\d+) ratings closed, (\d+) found closed already")


def _log_time(stderr: str, message: str) -> float:
    """When `close-period` logged `message` (its JSON log lines, to the millisecond)."""
    for line in stderr.splitlines():
        logged = json.loads(line) if line.startswith("{") else {}
        if logged.get("message") == message:
            return datetime.strptime(logged["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
    raise SystemExit(f"close-period logged no line {message!r}: {stderr[-3000:]}")


async def run_close(stack: Stack, month: str, under: Sequence[str] = ()) -> Close:
    """`close-period MONTH` as a process (the event loop free for a live load meanwhile); `under`:
    a command that runs it (a profiler's)."""
    env = stack.env(system=FIDE, **TANSU_SETTINGS) | {"RATING_LOG_LEVEL": "info"}
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *under, sys.executable, "-m", "worker", "close-period", month, env=env, stderr=asyncio.subprocess.PIPE
    )
    _, err = await asyncio.wait_for(process.communicate(), TIMEOUT)
    wall = time.perf_counter() - started
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    stderr = err.decode(errors="replace")
    found = _DONE.search(stderr)
    if process.returncode != 0 or found is None:
        raise SystemExit(f"close-period {month} failed ({process.returncode}): {stderr[-3000:]}")
    close = _log_time(stderr, f"the close of {month} is finished") - _log_time(stderr, f"marked {month} closed")
    cpu = cpu_after.ru_utime + cpu_after.ru_stime - cpu_before.ru_utime - cpu_before.ru_stime
    return Close(wall, float(found[1]), close, int(found[2]), int(found[3]), cpu)


class LoadStopped(Exception):
    """Raised from the live load's tick to end it: every game taken by then was sent."""


@dataclass(frozen=True)
class Setup:
    """What every run closes: the players' seed, the month and its games, the workers."""

    seed: Path
    players: int
    month: str
    lines: Sequence[bytes]
    workers: int


async def service_run(workdir: Path, setup: Setup, live_rate: float) -> Result:
    """One close on a fresh stack, under a live load of the next month's games if `live_rate`."""
    month, lines = setup.month, setup.lines
    with stack_in(workdir) as stack:
        result = await start_recording(stack, setup.seed, month, lines, setup.workers)
        ratings = int(result["ratings in the index"])
        offered = 0
        stop = False

        def counted(games: Iterator[bytes]) -> Iterator[bytes]:
            nonlocal offered
            for line in games:
                offered += 1
                yield line

        def tick(_: float) -> None:
            if stop:
                raise LoadStopped

        next_month = shifted(month, 1)
        live = counted(live_games(setup.players, next_month, random.Random(11)))
        load = asyncio.create_task(steady(stack.bootstrap, live, live_rate, TIMEOUT, tick)) if live_rate else None
        if load is not None:
            await asyncio.sleep(WARM_UP)
        pids = {"broker": _pid(stack.broker.process), **{f"worker {i}": p.pid for i, p in enumerate(stack.consumers)}}
        cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        redis_before, offered_before = await redis_cpu(stack.redis.url), offered
        close = await run_close(stack, month)
        cpu = {name: cpu_seconds(pid) - cpu_before[name] for name, pid in pids.items()}
        redis_seconds, during = await redis_cpu(stack.redis.url) - redis_before, offered - offered_before
        if load is not None:
            stop = True
            with contextlib.suppress(LoadStopped):
                await load
            async with Committed(stack.bootstrap) as committed:
                await committed.wait_for(len(lines) + offered, TIMEOUT)
        left = await index_size(stack.redis.url, month)
        if left or close.closed + close.by_games != ratings:
            raise SystemExit(f"the close left {left} ratings in the index, closed {close} of {ratings}")
        result |= {
            "close-period wall s": close.wall,
            "drain s": close.drain,
            "close s": close.close,
            "ratings/s": ratings / close.close,
            "events/s": (close.closed + close.by_games) / close.close,  # one close event a rating
            "closed by the workers": float(close.by_games),
            "close-period CPU s": close.cpu,
            "Redis CPU s": redis_seconds,
            "broker CPU s": cpu["broker"],
            "workers CPU s": sum(v for k, v in cpu.items() if k.startswith("worker")),
        }
        if live_rate:
            result["live games offered during the command"] = float(during)
        return result


def _pid(process: "subprocess.Popen[bytes] | None") -> int:
    assert process is not None
    return process.pid


# Where the close's time goes: the innermost frame of each sample that names one of these (the
# first that matches, in this order); a sample whose innermost frame is the event loop's wait
# (py-spy's --idle) is time spent waiting for Redis or Kafka.
CLOSE_PARTS = [
    ("waiting (event loop idle)", ("Selector.select (selectors.py",)),
    (
        "encode events and states",
        ("worker/engine/events", "worker/store/state_codec.py", "worker/systems/fide/codec.py"),
    ),
    ("engine and rules", ("worker/engine/", "worker/rules/", "worker/systems/")),
    ("scheduling (worker/store/schedule.py)", ("worker/store/schedule.py",)),
    ("Redis client", ("redis/", "msgpack", "worker/store/")),
    ("Kafka client", ("aiokafka/", "kafka/")),
    ("publication and pipeline", ("worker/stream/",)),
    ("close-period itself", ("worker/operate/",)),
    ("asyncio", ("asyncio/",)),
]


def parts_of(raw: Path, parts: Sequence[tuple[str, Sequence[str]]]) -> Counter[str]:
    """Samples of a `py-spy record -f raw` file per part: its innermost frame that matches one;
    the process's start-up (a sample under an import) and samples without a Python frame apart."""
    counts: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack.strip():
            counts["no Python frame"] += int(n)
            continue
        if "_find_and_load" in stack:
            counts["start-up (imports)"] += int(n)
            continue
        frames = reversed(stack.split(";"))  # innermost first
        found = (name for frame in frames for name, marks in parts if any(m in frame for m in marks))
        counts[next(found, "other")] += int(n)
    return counts


# The steps of a chunk (worker/operate/close_period.py, worker/stream/pipeline.py): a sample is
# the first step whose function is on its stack, in this order.
CLOSE_STEPS = [
    ("start-up (imports)", ("_find_and_load",)),
    ("waiting (event loop idle)", ("Selector.select (selectors.py",)),
    ("read the states", ("RedisStore.read ",)),
    ("read the opponents (second_read)", ("second_read ",)),
    ("plan: the engine's close, events encoded", ("plan (worker/store/schedule.py",)),
    ("apply: check-and-set write, outboxes", ("RedisStore.apply ",)),
    ("publish to Kafka", ("Publisher.",)),
    ("acknowledge", ("RedisStore.ack ",)),
    ("the index: SSCAN, SREM", ("with_retry (worker/operate/",)),
]


def steps_of(raw: Path) -> Counter[str]:
    """Samples of a `py-spy record -f raw` file per step of `CLOSE_STEPS` (else: its innermost file)."""
    counts: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        step = next((name for name, marks in CLOSE_STEPS if any(m in stack for m in marks)), None)
        if step is None:
            inner = re.search(r"\(([^()]*?)(?::\d+)?\)$", stack)
            step = f"other: {inner[1] if inner else 'no Python frame'}"
        counts[step] += int(n)
    return counts


def innermost(raw: Path) -> Counter[str]:
    """Samples per innermost function (`name (file)`, the line left out)."""
    counts: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        counts[re.sub(r":\d+\)$", ")", stack.rsplit(";", 1)[-1]) or "(no Python frame)"] += int(n)
    return counts


async def profile_close(workdir: Path, setup: Setup, spy: str) -> None:
    """One more close on a fresh stack (idle workers), `close-period` under py-spy at 200 samples a
    second, waits included (`--idle`); its time by part and its top functions. Not timed: the
    sampling slows the process."""
    raw = workdir / f"close-profile-{time.monotonic_ns()}.txt"
    with stack_in(workdir) as stack:
        await start_recording(stack, setup.seed, setup.month, setup.lines, setup.workers)
        under = [spy, "record", "--idle", "-r", "200", "-f", "raw", "-o", str(raw), "--"]
        close = await run_close(stack, setup.month, under)
    counts = parts_of(raw, CLOSE_PARTS)
    total = sum(counts.values()) or 1
    print(f"\nprofile of close-period (py-spy --idle, {total:,} samples; close {close.close:.1f} s under sampling):")
    print(table([["part", "share"], *([name, f"{n / total:.1%}"] for name, n in counts.most_common())]))
    steps = steps_of(raw)
    print("by step (the rest: the innermost file of a sample outside them, its event loop's callbacks):")
    print(table([["step", "share"], *([name, f"{n / total:.1%}"] for name, n in steps.most_common(15))]))
    print("top innermost functions:")
    for name, n in innermost(raw).most_common(20):
        print(f"  {n / total:6.1%}  {name}")


# --- the baseline: rate's close ----------------------------------------------------------------------


def rate_close_child(games: Path, seed: Path, month: str, result: Path) -> None:
    """`rate`'s steps in this process: the file replayed (`worker.replay.replay`, as `rate` does),
    then the close of `month` timed alone (`worker.replay.closes.close_period`, the function a
    close line calls), each close event written out as `rate` writes it."""
    settings = RulesSettings()
    engine = Engine(settings.spec(), Points(settings.training_rating))
    rows = read_seed_file(seed, settings.rules())
    kinds: Counter[str] = Counter()
    with games.open("rb") as lines, open(os.devnull, "wb") as out, open(os.devnull, "w", encoding="utf-8") as dlq:
        counts, backend = asyncio.run(replay(engine, rows, lines, out, dlq, settings.max_message_bytes))

        def emit(update: Update[Any]) -> None:
            out.write(update.payload + b"\n")
            kinds[update.event.kind] += 1

        ratings = len(backend.index.get(month, ()))
        before = gc.get_threshold()
        gc.set_threshold(COLLECT_AFTER, *before[1:])  # as `rate` runs (worker.replay.replay)
        started = time.perf_counter()
        marked = asyncio.run(close_period(engine, MemoryStore(backend), month, emit))
        seconds = time.perf_counter() - started
        gc.set_threshold(*before)
    summary = {"seconds": seconds, "ratings": ratings, "events": sum(kinds.values()), "marked": list(marked)}
    summary["kinds"] = dict(sorted(kinds.items()))
    summary["games"] = counts.games
    result.write_text(json.dumps(summary), encoding="utf-8")


def rate_run(workdir: Path, seed: Path, month: str, games: Path, closed: Path) -> Result:
    """The baseline: `rate`'s close timed in a child; then `rate` with and without the close line."""
    result_path = workdir / "rate-close.json"
    child = [sys.executable, __file__, "--child", "rate-close", "--games", str(games), "--seed", str(seed)]
    timed([*child, "--month", month, "--result", str(result_path)], system_env(FIDE))
    found = json.loads(result_path.read_text(encoding="utf-8"))
    with_close, _, _ = run_rate(FIDE, closed, seed)
    without, _, _ = run_rate(FIDE, games, seed)
    if found["marked"] != [month] or found["events"] != found["ratings"]:
        raise SystemExit(f"rate's close of {month}: {found}")
    print(f"  rate's close: {found['events']:,} close events, by kind {found['kinds']}", file=sys.stderr)
    return {
        "rate close s": found["seconds"],
        "rate ratings/s": found["ratings"] / found["seconds"],
        "rate events/s": found["events"] / found["seconds"],
        "rate with - without the close line s": with_close - without,
    }


# --- sizes ---------------------------------------------------------------------------------------------


async def output_records(bootstrap: str, expected: int) -> list[bytes]:
    """Every record of the output topic (at least `expected` of them)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=TANSU_FETCH_WAIT_MS
    )
    await consumer.start()
    try:
        partitions = [TopicPartition(RATINGS_TOPIC, p) for p in range(OUT_PARTITIONS)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        found: list[bytes] = []
        deadline = time.monotonic() + 120
        while len(found) < expected and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=200, max_records=10_000)).values():
                found.extend(r.value for r in records if r.value is not None)
        return found
    finally:
        await consumer.stop()


async def sizes(workdir: Path, month: str, counts: Sequence[int] = (1, 1000)) -> list[list[str]]:
    """Per count of games in the month: a player's state in Redis before and after the close, his
    last `period_game` event and his close event (bytes), on a small stack of as many pairs."""
    rng = random.Random(5)
    seed = workdir / "sizes-seed.csv"
    pairs = [(f"w{n}", f"b{n}") for n in counts]
    seed.write_text(
        "\n".join([SEED_HEADER, *(f"{w},blitz,2000,40,,\n{b},blitz,1900,40,," for w, b in pairs)]) + "\n",
        encoding="utf-8",
    )
    start = first_day(month)
    lines = [
        game_line(f"{w}-{i}", w, b, start + timedelta(minutes=i), rng)
        for (w, b), n in zip(pairs, counts, strict=True)
        for i in range(n)
    ]
    with stack_in(workdir) as stack:
        await stack.start(None, FIDE)
        command(stack, "close-period", "--init", shifted(month, -1))
        command(stack, "import", str(seed))
        await produce_backlog(stack.bootstrap, lines)
        stack.start_workers(1, system=FIDE, **TANSU_SETTINGS)
        async with Committed(stack.bootstrap) as committed:
            await committed.wait_for(len(lines), TIMEOUT)
        client = Redis.from_url(stack.redis.url)
        try:
            before = [await client.strlen(keys.state_key(PREFIX, f"{w}/blitz")) for w, _ in pairs]
            command(stack, "close-period", month)
            after = [await client.strlen(keys.state_key(PREFIX, f"{w}/blitz")) for w, _ in pairs]
        finally:
            await client.aclose()
        records = await output_records(stack.bootstrap, 2 * len(pairs) * 2 + 2 * len(lines))
    last: dict[tuple[str, str], int] = {}
    for value in records:
        event = json.loads(value)
        last[event["player_id"], "game" if event["kind"] == "period_game" else event["kind"]] = len(value)
    rows = [["games in the month", "state in Redis", "last period_game event", "close event", "state after"]]
    for (w, _), n, state, closed in zip(pairs, counts, before, after, strict=True):
        close_kind = next(k for p, k in last if p == w and k not in ("game", "imported"))
        rows.append([f"{n:,}", f"{state} B", f"{last[w, 'game']} B", f"{last[w, close_kind]} B ({close_kind})"])
        rows[-1].append(f"{closed} B")
    return rows


# --- the run ------------------------------------------------------------------------------------------


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


async def bench(args: argparse.Namespace) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="close-bench-"))
    month = the_month(datetime.now(UTC))
    rng = random.Random(3)
    seed = seed_csv(workdir / "seed.csv", args.players, rng)
    lines = month_games(args.players, month, args.rounds, rng)
    games, closed = workdir / "games.jsonl", workdir / "games-closed.jsonl"
    opening = control_line(shifted(month, -1))
    games.write_bytes(b"\n".join([opening, *lines]) + b"\n")
    closed.write_bytes(games.read_bytes() + control_line(month) + b"\n")
    setup = Setup(seed, args.players, month, lines, args.workers)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    print(
        f"close benchmark, commit {commit.stdout.strip()}, {time.ctime()}: {args.players:,} players, "
        f"{len(lines):,} games of {month} ({args.rounds} round(s)), {args.workers} worker(s), "
        f"live load {args.live_rate:g} games/s, {args.runs} runs"
    )
    runs: dict[str, list[Result]] = {"service": [], "service under load": [], "rate": []}
    for run in range(1, args.runs + 1):
        say(f"run {run}: the service's close")
        runs["service"].append(await service_run(workdir, setup, 0.0))
        say(f"run {run}: the service's close, games of the next month recorded meanwhile")
        runs["service under load"].append(await service_run(workdir, setup, args.live_rate))
        say(f"run {run}: rate's close")
        runs["rate"].append(rate_run(workdir, seed, month, games, closed))
        for name in ("service", "service under load"):
            ratio = runs[name][-1]["ratings/s"] / runs["rate"][-1]["rate ratings/s"]
            print(f"run {run}: {name} / rate {ratio:.2f}")
    for name, results in runs.items():
        report(name, results)

    def median(name: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[name])

    rate = median("rate", "rate ratings/s")
    rows = [["close of the month", "ratings", "drain s", "close s", "ratings/s", "events/s", "/ rate"]]
    for name in ("service", "service under load"):
        ratio = median(name, "ratings/s") / rate
        verdict = "met" if ratio >= 0.3 else "missed"
        rows.append(
            [
                f"`close-period`, {name.removeprefix('service').strip() or 'idle workers'}",
                f"{median(name, 'ratings in the index'):,.0f}",
                f"{median(name, 'drain s'):.1f}",
                f"{median(name, 'close s'):.1f}",
                f"{median(name, 'ratings/s'):,.0f}",
                f"{median(name, 'events/s'):,.0f}",
                f"{ratio:.2f} (target >= 0.3: {verdict})",
            ]
        )
    rows.append(
        [
            "`rate` (its close line)",
            f"{median('service', 'ratings in the index'):,.0f}",
            "-",
            f"{median('rate', 'rate close s'):.1f}",
            f"{rate:,.0f}",
            f"{median('rate', 'rate events/s'):,.0f}",
            "1.00",
        ]
    )
    print(f"\nmedians of {args.runs} runs (the ratio: of the medians):")
    print(table(rows))
    print(
        f"recording: {median('service', 'recording games/s'):,.0f} games/s; Redis memory "
        f"{median('service', 'Redis B per recorded game'):,.0f} B per recorded game "
        f"({median('service', 'Redis keys per recorded game'):.2f} keys more per game)"
    )
    say("sizes: a player with 1 and with 1,000 games in the month")
    print("\na player's state and events (bytes), with his games of the month counted at once:")
    print(table(await sizes(workdir, month)))
    if args.profile:
        spy = py_spy()
        if spy is None:
            print("no profile: py-spy is not installed (`.venv/bin/pip install py-spy`, a tool of the benchmark)")
        else:
            say("profile: one more close under py-spy")
            await profile_close(workdir, setup, spy)
    print(f"(machine: {os.cpu_count()} cores, Python {sys.version.split()[0]})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=1, help="games a player in the month")
    parser.add_argument("--workers", type=int, default=1, help="rating-worker run processes")
    parser.add_argument("--live-rate", type=float, default=1000.0, help="games/s of the next month during the close")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="then one more close under py-spy, by part")
    parser.add_argument("--child", choices=["rate-close"], help=argparse.SUPPRESS)
    parser.add_argument("--games", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--month", help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "rate-close":
        rate_close_child(args.games, args.seed, args.month, args.result)
    else:
        asyncio.run(bench(args))


if __name__ == "__main__":
    main()
