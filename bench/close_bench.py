"""Closing a FIDE month: `rating-worker close-period` against `rate`'s close of the same month;
with `--system tornelo`, closing Tornelo's tournaments (below) instead.

    .venv/bin/python bench/close_bench.py [--players 100000] [--rounds 1] [--workers 1]
                                          [--live-rate 1000] [--runs 3] [--profile]
    .venv/bin/python bench/close_bench.py --system tornelo [--tournaments 1000] [--tournament-players 100]
                                          [--spaced-ends 20] [--workers 1] [--live-rate 1000] [--runs 3]

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

**`--system tornelo`** (the default is fide's month, above, unchanged): `--tournaments` (1,000)
tournaments of `--tournament-players` (100) players each end one after another. Every player is
seeded in blitz (`player_id,category,rating,rated_games,k_modifier`: a whole rating about 1500, a
tenth provisional with fewer than 20 games, now and then a K modifier) and plays in one tournament
only (the players of two tournaments are disjoint: 100,000 players by default), one round of it:
its players paired at random, so that each has an entry of it (50 games a tournament, 50,000 in
all; the tournaments' games side by side in the stream). `--spaced-ends` (20) more tournaments of
as many players are recorded too, and ended one at a time after the others. Each run:

1. **the service**: a fresh stack (the tournament topic of one partition too), `import` of the
   seed, every game produced and `--workers` tornelo workers (`rating-worker run`) timed until
   every game is committed (recording games/s; Redis's `used_memory` and keys before and after,
   per recorded game); then the close follower, `close-period --follow`, a process logging its
   JSON lines, and the end of a tournament without games first (the follower joined, caught up,
   idle). Then the tournaments' end records are published at once (one batch, in order, on the
   tournament topic), and timed from then to the last tournament's close finished (its log
   line, to the millisecond; `{prefix}marked` holding every tournament and `{prefix}periods`
   without `closing` is when the benchmark looks): tournaments/s, ratings/s and events/s (one
   close event a rating, whoever closed it: its chunks' log lines); the drains over them (the
   follower drains once a fetch: their number and seconds, per end), a close's median time from
   its mark to its finish and from one finish to the next mark (the log lines), the CPU of each
   process, and Redis's `used_memory` and keys over the closes per mark (what a close frees,
   its index and its ratings' entries, and what stays: the `marked` hash's `MEMORY USAGE` per
   tournament too). It checks that every index is empty and that every rating was taken. Then
   the spaced ends, each published once the one before it is closed: from its publication to
   its mark and to its close finished, its acknowledgement by the broker and its drain (the
   medians);
2. **the service under load**: the same on a fresh stack, but from 2 s before the ends are
   published until the spaced ones are closed, games of open tournaments (`l00000`, ...: 50
   games each, never ended, between players drawn from all) are produced at `--live-rate`
   games/s and the workers record them (a worker meeting a player whose tournament is marked
   ended closes his rating first);
3. **the baseline, `rate`**, in the same run: the child of fide's baseline replays the same file
   (the games, no close line), then times the close lines' work for each tournament in turn, in
   the order of their ends (`worker.replay.closes.close_period`, one event loop), with `rate`'s
   collector threshold; the ratio of the service's tournaments/s to it (= of ratings/s) is the
   figure. As a check, `rate` is also timed on the file with and without the close lines.

Then, once, on a small stack: a player's state (the state key's bytes) and his events, with 1 and
with 1,000 games in a tournament, before and after its close (ended by the follower). Every run
is printed, then the medians and a table; nothing is asserted (docs/benchmarks.md, "Closing
Tornelo tournaments"). `--profile` is fide's only.

`--child rate-close` is internal: the baseline's child process (fide's month or the tournaments).
"""

import argparse
import asyncio
import contextlib
import gc
import itertools
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
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
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

from worker.embedded.stack import TANSU_FETCH_WAIT_MS, create_topics
from worker.engine.engine import Engine, Update
from worker.replay.closes import close_period
from worker.replay.memory_store import MemoryStore
from worker.replay.replay import COLLECT_AFTER, replay
from worker.replay.seed_file import read_seed_file
from worker.rules.hundredths import Points
from worker.settings import RulesSettings
from worker.store import keys
from worker.stream.publisher import Publisher
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


def game_line(
    game_id: str, white: str, black: str, at: datetime, rng: random.Random, tournament: str | None = None
) -> bytes:
    """A rated blitz game (of `tournament`, tornelo's, if given)."""
    result, termination, _ = rng.choices(RESULTS, weights=[r[2] for r in RESULTS])[0]
    value: dict[str, object] = {
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
    if tournament is not None:
        value["tournament_id"] = tournament
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


def command(stack: Stack, *args: str, system: str = FIDE, **settings: object) -> "subprocess.CompletedProcess[str]":
    """A `rating-worker` command of `system` (fide) against the stack, to its end."""
    env = stack.env(system=system, **TANSU_SETTINGS, **settings)
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


def rate_close_child(games: Path, seed: Path, periods: Sequence[str], result: Path) -> None:
    """`rate`'s steps in this process (RATING_SYSTEM: fide or tornelo): the file replayed
    (`worker.replay.replay`, as `rate` does), then the closes of `periods`, one after another in
    one event loop, timed alone (`worker.replay.closes.close_period`, the function a close line
    calls; fide: one month), each close event written out as `rate` writes it."""
    settings = RulesSettings()
    engine = Engine(settings.spec(), Points(settings.training_rating))
    rows = read_seed_file(seed, settings.rules())
    kinds: Counter[str] = Counter()
    with games.open("rb") as lines, open(os.devnull, "wb") as out, open(os.devnull, "w", encoding="utf-8") as dlq:
        counts, backend = asyncio.run(replay(engine, rows, lines, out, dlq, settings.max_message_bytes))

        def emit(update: Update[Any]) -> None:
            out.write(update.payload + b"\n")
            kinds[update.event.kind] += 1

        ratings = sum(len(backend.index.get(period, ())) for period in periods)

        async def close_all() -> list[str]:
            store = MemoryStore(backend)
            marked: list[str] = []
            for period in periods:
                marked.extend(await close_period(engine, store, period, emit))
            return marked

        before = gc.get_threshold()
        gc.set_threshold(COLLECT_AFTER, *before[1:])  # as `rate` runs (worker.replay.replay)
        started = time.perf_counter()
        marked = asyncio.run(close_all())
        seconds = time.perf_counter() - started
        gc.set_threshold(*before)
    summary = {"seconds": seconds, "ratings": ratings, "events": sum(kinds.values()), "marked": list(marked)}
    summary["kinds"] = dict(sorted(kinds.items()))
    summary["games"] = counts.games
    result.write_text(json.dumps(summary), encoding="utf-8")


def rate_run(
    workdir: Path, seed: Path, periods: Sequence[str], games: Path, closed: Path, system: str = FIDE
) -> Result:
    """The baseline: `rate`'s closes of `periods` (fide: the month) timed in a child; then `rate`
    with and without the close lines."""
    result_path = workdir / "rate-close.json"
    child = [sys.executable, __file__, "--child", "rate-close", "--games", str(games), "--seed", str(seed)]
    timed([*child, "--periods", ",".join(periods), "--result", str(result_path)], system_env(system))
    found = json.loads(result_path.read_text(encoding="utf-8"))
    with_close, _, _ = run_rate(system, closed, seed)
    without, _, _ = run_rate(system, games, seed)
    if found["marked"] != list(periods) or found["events"] != found["ratings"]:
        raise SystemExit(f"rate's close of {', '.join(periods[:3])}...: {found}")
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
    return size_rows("games in the month", records, pairs, counts, before, after)


def size_rows(
    first: str,
    records: Sequence[bytes],
    pairs: Sequence[tuple[str, str]],
    counts: Sequence[int],
    before: Sequence[int],
    after: Sequence[int],
) -> list[list[str]]:
    """The sizes' table: per pair, white's state before and after the close, his last
    `period_game` event and his close event (the last of each kind on the output topic)."""
    last: dict[tuple[str, str], int] = {}
    for value in records:
        event = json.loads(value)
        last[event["player_id"], "game" if event["kind"] == "period_game" else event["kind"]] = len(value)
    rows = [[first, "state in Redis", "last period_game event", "close event", "state after"]]
    for (w, _), n, state, closed in zip(pairs, counts, before, after, strict=True):
        close_kind = next(k for p, k in last if p == w and k not in ("game", "imported"))
        rows.append([f"{n:,}", f"{state} B", f"{last[w, 'game']} B", f"{last[w, close_kind]} B ({close_kind})"])
        rows[-1].append(f"{closed} B")
    return rows


# --- Tornelo: tournaments ended one after another, closed by the follower ---------------------------------

TORNELO = "tornelo"
TORNELO_PREFIX = "rating-tornelo:"  # tornelo's default RATING_REDIS_KEY_PREFIX
TORNELO_SEED_HEADER = "player_id,category,rating,rated_games,k_modifier"
ENDS_TOPIC = "bench.tournaments"  # RATING_TOPIC_TOURNAMENTS, of one partition
TORNELO_SETTINGS: dict[str, object] = {"topic_tournaments": ENDS_TOPIC}
WARM_UP_TOURNAMENT = "warm-up"  # ended (no game) before the timed ends: the follower joined and idle
LIVE_TOURNAMENT_GAMES = 50  # games of each open tournament of the live load
POLL_SECONDS = 0.02  # between two looks at Redis for the closes finished
K_MODIFIERS = ("", "", "", "", "", "", "", "0.50", "1.50", "2.00")  # mostly 1.00 (empty)


def tournament_id(i: int) -> str:
    return f"t{i:05d}"


def tornelo_seed_csv(path: Path, players: int, rng: random.Random) -> Path:
    """One blitz rating a player: a whole rating (about 1500), a tenth provisional (fewer than 20
    games: rated by performance at the close), the others established, now and then a K modifier."""
    rows = [TORNELO_SEED_HEADER]
    for i in range(players):
        rating = min(2700, max(100, round(rng.gauss(1500, 350))))
        games = rng.randrange(0, 20) if rng.random() < 0.1 else rng.randrange(20, 400)
        rows.append(f"{player_id(i)},blitz,{rating},{games},{rng.choice(K_MODIFIERS)}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def tournament_games(tournaments: Sequence[str], size: int, start: datetime, rng: random.Random) -> list[bytes]:
    """One round of each tournament: its `size` players (the i-th tournament's are players
    i * size to (i + 1) * size - 1, none in two) paired at random, one sitting out when they are
    odd; every game at a random instant of 6 hours from `start`, in the order of their instants (the
    tournaments side by side in the stream)."""
    games: list[tuple[float, str, str, str]] = []
    for i, tournament in enumerate(tournaments):
        ids = [player_id(i * size + j) for j in range(size)]
        rng.shuffle(ids)
        games.extend((rng.uniform(0, 6 * 3600), ids[k], ids[k + 1], tournament) for k in range(0, size - 1, 2))
    games.sort(key=lambda g: g[0])
    return [
        game_line(f"g{n:08d}", white, black, start + timedelta(seconds=at), rng, tournament)
        for n, (at, white, black, tournament) in enumerate(games)
    ]


def live_tournament_games(players: int, start: datetime, rng: random.Random) -> Iterator[bytes]:
    """Games of open tournaments without end (`l00000`, `l00001`, ..., LIVE_TOURNAMENT_GAMES each,
    never ended), between players drawn at random, the clock a second apart."""
    at, n = start, 0
    while True:
        white, black = rng.sample(range(players), 2)
        tournament = f"l{n // LIVE_TOURNAMENT_GAMES:05d}"
        yield game_line(f"live{n:08d}", player_id(white), player_id(black), at, rng, tournament)
        n += 1
        at += timedelta(seconds=1)


def end_record(tournament: str) -> bytes:
    """A tournament's end, as the platform publishes it."""
    finished_at = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    value = {"event_id": f"end-{tournament}", "tournament_id": tournament, "finished_at": finished_at}
    return json.dumps(value, separators=(",", ":")).encode()


class Ends:
    """A producer of end records on the tournament topic, started beforehand (its start is not timed)."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", max_batch_size=1 << 20)

    async def __aenter__(self) -> "Ends":
        await self.producer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.producer.stop()

    async def publish(self, tournaments: Sequence[str]) -> None:
        """Their end records, in order, all at once (one batch), acknowledged by the broker."""
        await Publisher(self.producer, ENDS_TOPIC, 60).send([(t.encode(), end_record(t)) for t in tournaments])


def tornelo_command(stack: Stack, *args: str) -> "subprocess.CompletedProcess[str]":
    return command(stack, *args, system=TORNELO, **TORNELO_SETTINGS)


@contextlib.contextmanager
def close_follower(stack: Stack, log: Path) -> Iterator["subprocess.Popen[bytes]"]:
    """`close-period --follow` logging (JSON lines, at info) to `log`; stopped (SIGTERM) at the end."""
    env = stack.env(system=TORNELO, **TANSU_SETTINGS, **TORNELO_SETTINGS) | {"RATING_LOG_LEVEL": "info"}
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "worker", "close-period", "--follow"],
            env=env,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def wait_closed(client: Redis, marks: int, follower: "subprocess.Popen[bytes]", log: Path) -> float:
    """Until `marks` tournaments are marked ended (`{prefix}marked`) and no close is in progress
    (`{prefix}periods` without `closing`): the last one's close finished. When (time.time())."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        marked = int(await client.hlen(keys.marked_key(TORNELO_PREFIX)))
        closing = await client.hget(keys.periods_key(TORNELO_PREFIX), "closing")
        if marked >= marks and closing is None:
            return time.time()
        if follower.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:]
            raise SystemExit(f"{marks} tournaments not closed ({marked} marked, closing {closing!r}): {tail}")
        await asyncio.sleep(POLL_SECONDS)


@dataclass
class FollowerLog:
    """What the follower's JSON log lines say, by tournament: when it marked it ended and when its
    close finished (unix seconds, to the millisecond), the ratings it closed, those its chunks took
    (closed by it, or by a worker first), and each drain: (when it ended, its seconds)."""

    marked: dict[str, float] = field(default_factory=dict)
    finished: dict[str, float] = field(default_factory=dict)
    closed: Counter[str] = field(default_factory=Counter)
    taken: Counter[str] = field(default_factory=Counter)
    drains: list[tuple[float, float]] = field(default_factory=list)


def follower_log(path: Path) -> FollowerLog:
    found = FollowerLog()
    for line in path.read_text(errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        logged = json.loads(line)
        at = datetime.strptime(logged["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
        step, period = logged.get("step"), logged.get("period")
        if step == "drain_end":
            found.drains.append((at, float(logged["seconds"])))
        elif step == "mark":
            found.marked[period] = at
        elif step == "finished":
            found.finished[period] = at
        elif step == "chunk":
            found.taken[period] += int(logged["ratings"])
        elif step == "done" and period is not None:
            found.closed[period] += int(logged["ratings"])
    return found


@dataclass(frozen=True)
class TorneloSetup:
    """What every run closes: the players' seed, the tournaments ended all at once (`burst`) and
    those ended one at a time after them (`spaced`), every game of theirs, the workers."""

    seed: Path
    players: int
    burst: Sequence[str]
    spaced: Sequence[str]
    lines: Sequence[bytes]
    workers: int
    live_start: datetime


async def tornelo_run(workdir: Path, setup: TorneloSetup, live_rate: float) -> Result:
    """The tournaments' closes on a fresh stack: every game recorded, then the burst's ends
    published at once and timed to the last close finished, then the spaced ends one at a time;
    under a live load of open tournaments' games if `live_rate`."""
    burst = setup.burst
    with stack_in(workdir) as stack:
        await stack.start(None, TORNELO)
        await create_topics(stack.bootstrap, {ENDS_TOPIC: 1})
        url = stack.redis.url
        tornelo_command(stack, "import", str(setup.seed))
        before = await used_memory(url)
        await produce_backlog(stack.bootstrap, setup.lines)
        stack.start_workers(setup.workers, system=TORNELO, **TANSU_SETTINGS, **TORNELO_SETTINGS)
        seconds, records, _, _ = await measure_drain(stack, len(setup.lines), TIMEOUT)
        recorded = await used_memory(url)
        result: Result = {
            "recording games/s": records / seconds if seconds > 0 else float("nan"),
            "Redis B per recorded game": (recorded[0] - before[0]) / len(setup.lines),
            "Redis keys per recorded game": (recorded[1] - before[1]) / len(setup.lines),
        }
        client = Redis.from_url(url)
        log = workdir / f"follower-{time.monotonic_ns()}.log"
        offered, stop = 0, False

        def counted(games: Iterator[bytes]) -> Iterator[bytes]:
            nonlocal offered
            for line in games:
                offered += 1
                yield line

        def tick(_: float) -> None:
            if stop:
                raise LoadStopped

        try:
            ratings = sum([int(await client.scard(keys.index_key(TORNELO_PREFIX, t))) for t in burst])
            with close_follower(stack, log) as follower:
                async with Ends(stack.bootstrap) as ends:
                    await ends.publish([WARM_UP_TOURNAMENT])
                    await wait_closed(client, 1, follower, log)
                    live = counted(live_tournament_games(setup.players, setup.live_start, random.Random(11)))
                    load = None
                    if live_rate:
                        load = asyncio.create_task(steady(stack.bootstrap, live, live_rate, TIMEOUT, tick))
                        await asyncio.sleep(WARM_UP)
                    pids = {"follower": follower.pid, "broker": _pid(stack.broker.process)}
                    pids |= {f"worker {i}": p.pid for i, p in enumerate(stack.consumers)}
                    cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
                    redis_before, memory_before = await redis_cpu(url), await used_memory(url)
                    offered_before, started = offered, time.time()
                    await ends.publish(burst)
                    await wait_closed(client, 1 + len(burst), follower, log)
                    cpu = {name: cpu_seconds(pid) - cpu_before[name] for name, pid in pids.items()}
                    redis_seconds, during = await redis_cpu(url) - redis_before, offered - offered_before
                    memory_after = await used_memory(url)
                    marked_bytes = int(await client.memory_usage(keys.marked_key(TORNELO_PREFIX)) or 0)
                    sent: dict[str, float] = {}  # the spaced ends: when each was published
                    acknowledged: list[float] = []  # and how long the broker took to acknowledge it
                    for i, tournament in enumerate(setup.spaced):
                        sent[tournament] = time.time()
                        await ends.publish([tournament])
                        acknowledged.append(time.time() - sent[tournament])
                        await wait_closed(client, 2 + len(burst) + i, follower, log)
                if load is not None:
                    stop = True
                    with contextlib.suppress(LoadStopped):
                        await load
                    async with Committed(stack.bootstrap) as committed:
                        await committed.wait_for(len(setup.lines) + offered, TIMEOUT)
            left = sum([int(await client.scard(keys.index_key(TORNELO_PREFIX, t))) for t in burst])
        finally:
            await client.aclose()
    found = follower_log(log)
    taken = sum(found.taken[t] for t in burst)
    closed = sum(found.closed[t] for t in burst)
    if left or taken != ratings or any(t not in found.finished for t in burst):
        raise SystemExit(f"the closes left {left} ratings in the indexes, took {taken} of {ratings}")
    end = max(found.finished[t] for t in burst)
    elapsed = end - started
    closes = [found.finished[t] - found.marked[t] for t in burst]
    between = [found.marked[t] - found.finished[p] for p, t in itertools.pairwise(burst)]
    drains = [s for at, s in found.drains if started <= at <= end]
    spaced_drains = [s for at, s in found.drains if at > end]
    result |= {
        "ratings in the closes": float(ratings),
        "ends to last close s": elapsed,
        "tournaments/s": len(burst) / elapsed,
        "ratings/s": ratings / elapsed,
        "events/s": taken / elapsed,  # one close event a rating, whoever closed it
        "closed by the workers": float(taken - closed),
        "drains": float(len(drains)),
        "drain s per end": sum(drains) / len(burst),
        "first mark after the ends s": found.marked[burst[0]] - started,
        "close ms a tournament": 1000 * statistics.median(closes),
        "between closes ms": 1000 * statistics.median(between) if between else float("nan"),
        "follower CPU s": cpu["follower"],
        "Redis CPU s": redis_seconds,
        "broker CPU s": cpu["broker"],
        "workers CPU s": sum(v for k, v in cpu.items() if k.startswith("worker")),
    }
    if not live_rate:  # under load, the live games' records grow Redis meanwhile
        result |= {
            "Redis B per mark": (memory_after[0] - memory_before[0]) / len(burst),
            "Redis keys per mark": (memory_after[1] - memory_before[1]) / len(burst),
            "marked hash B per mark": marked_bytes / (1 + len(burst)),
        }
    else:
        result["live games offered during the closes"] = float(during)
    if sent:  # from the follower's log lines, as the burst's
        result |= {
            "one at a time: end to close s": statistics.median(found.finished[t] - at for t, at in sent.items()),
            "one at a time: end to mark s": statistics.median(found.marked[t] - at for t, at in sent.items()),
            "one at a time: end acknowledged s": statistics.median(acknowledged),
            "one at a time: drain s": statistics.median(spaced_drains) if spaced_drains else float("nan"),
        }
    return result


async def tornelo_sizes(workdir: Path, counts: Sequence[int] = (1, 1000)) -> list[list[str]]:
    """Per count of games in a tournament: a player's state in Redis before and after its close,
    his last `period_game` event and his close event (bytes), on a small stack of as many pairs,
    each pair's games a tournament of its own, ended by the follower."""
    rng = random.Random(5)
    seed = workdir / "tornelo-sizes-seed.csv"
    pairs = [(f"w{n}", f"b{n}") for n in counts]
    seed.write_text(
        "\n".join([TORNELO_SEED_HEADER, *(f"{w},blitz,2000,40,\n{b},blitz,1900,40," for w, b in pairs)]) + "\n",
        encoding="utf-8",
    )
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(days=2)
    lines = [
        game_line(f"{w}-{i}", w, b, start + timedelta(minutes=i), rng, f"size{n}")
        for (w, b), n in zip(pairs, counts, strict=True)
        for i in range(n)
    ]
    log = workdir / f"sizes-follower-{time.monotonic_ns()}.log"
    with stack_in(workdir) as stack:
        await stack.start(None, TORNELO)
        await create_topics(stack.bootstrap, {ENDS_TOPIC: 1})
        tornelo_command(stack, "import", str(seed))
        await produce_backlog(stack.bootstrap, lines)
        stack.start_workers(1, system=TORNELO, **TANSU_SETTINGS, **TORNELO_SETTINGS)
        async with Committed(stack.bootstrap) as committed:
            await committed.wait_for(len(lines), TIMEOUT)
        client = Redis.from_url(stack.redis.url)
        try:
            before = [await client.strlen(keys.state_key(TORNELO_PREFIX, f"{w}/blitz")) for w, _ in pairs]
            with close_follower(stack, log) as follower:
                async with Ends(stack.bootstrap) as ends:
                    await ends.publish([f"size{n}" for n in counts])
                    await wait_closed(client, len(counts), follower, log)
            after = [await client.strlen(keys.state_key(TORNELO_PREFIX, f"{w}/blitz")) for w, _ in pairs]
        finally:
            await client.aclose()
        records = await output_records(stack.bootstrap, 2 * len(pairs) * 2 + 2 * len(lines))
    return size_rows("games in the tournament", records, pairs, counts, before, after)


async def tornelo_bench(args: argparse.Namespace) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="close-bench-tornelo-"))
    rng = random.Random(3)
    size = args.tournament_players
    tournaments = [tournament_id(i) for i in range(args.tournaments + args.spaced_ends)]
    burst, spaced = tournaments[: args.tournaments], tournaments[args.tournaments :]
    players = len(tournaments) * size
    seed = tornelo_seed_csv(workdir / "seed.csv", players, rng)
    now = datetime.now(UTC).replace(microsecond=0)
    lines = tournament_games(tournaments, size, now - timedelta(days=2), rng)
    games, closed = workdir / "games.jsonl", workdir / "games-closed.jsonl"
    games.write_bytes(b"\n".join(lines) + b"\n")
    closed.write_bytes(games.read_bytes() + b"".join(control_line(t) + b"\n" for t in burst))
    setup = TorneloSetup(seed, players, burst, spaced, lines, args.workers, now - timedelta(days=1))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    print(
        f"close benchmark (tornelo), commit {commit.stdout.strip()}, {time.ctime()}: {len(burst):,} tournaments "
        f"of {size} players ended at once, then {len(spaced)} one at a time ({players:,} players, "
        f"{len(lines):,} games), {args.workers} worker(s), live load {args.live_rate:g} games/s, {args.runs} runs"
    )
    runs: dict[str, list[Result]] = {"service": [], "service under load": [], "rate": []}
    for run in range(1, args.runs + 1):
        say(f"run {run}: the follower's closes")
        runs["service"].append(await tornelo_run(workdir, setup, 0.0))
        say(f"run {run}: the follower's closes, games of open tournaments recorded meanwhile")
        runs["service under load"].append(await tornelo_run(workdir, setup, args.live_rate))
        say(f"run {run}: rate's closes")
        baseline = rate_run(workdir, seed, burst, games, closed, TORNELO)
        baseline["rate tournaments/s"] = len(burst) / baseline["rate close s"]
        runs["rate"].append(baseline)
        for name in ("service", "service under load"):
            ratio = runs[name][-1]["tournaments/s"] / baseline["rate tournaments/s"]
            print(f"run {run}: {name} / rate {ratio:.3f}")
    for name, results in runs.items():
        report(name, results)

    def median(name: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[name])

    rate = median("rate", "rate tournaments/s")
    rows = [["closes of the tournaments", "ratings", "drains", "ends to last close s"]]
    rows[0] += ["tournaments/s", "ratings/s", "events/s", "/ rate"]
    for name in ("service", "service under load"):
        ratios = ", ".join(
            f"{s['tournaments/s'] / r['rate tournaments/s']:.3f}" for s, r in zip(runs[name], runs["rate"], strict=True)
        )
        rows.append(
            [
                f"`close-period --follow`, {name.removeprefix('service').strip() or 'idle workers'}",
                f"{median(name, 'ratings in the closes'):,.0f}",
                f"{median(name, 'drains'):.0f} ({median(name, 'drain s per end') * 1000:.2f} ms per end)",
                f"{median(name, 'ends to last close s'):.1f}",
                f"{median(name, 'tournaments/s'):,.1f}",
                f"{median(name, 'ratings/s'):,.0f}",
                f"{median(name, 'events/s'):,.0f}",
                f"{median(name, 'tournaments/s') / rate:.3f} (runs {ratios})",
            ]
        )
    rows.append(
        [
            "`rate` (its close lines)",
            f"{median('service', 'ratings in the closes'):,.0f}",
            "-",
            f"{median('rate', 'rate close s'):.2f}",
            f"{rate:,.1f}",
            f"{median('rate', 'rate ratings/s'):,.0f}",
            f"{median('rate', 'rate events/s'):,.0f}",
            "1.00",
        ]
    )
    print(f"\nmedians of {args.runs} runs (the ratio: of the medians):")
    print(table(rows))
    for name in ("service", "service under load"):
        print(
            f"{name}: a close {median(name, 'close ms a tournament'):.1f} ms from its mark to its finish, "
            f"{median(name, 'between closes ms'):.1f} ms from one finish to the next mark; the first mark "
            f"{median(name, 'first mark after the ends s'):.2f} s after the ends were published"
        )
        if spaced:
            print(
                f"{name}, one end at a time: {median(name, 'one at a time: end to close s'):.3f} s from an end "
                f"published to its close finished, {median(name, 'one at a time: end to mark s'):.3f} s to its mark "
                f"(its publication acknowledged in {median(name, 'one at a time: end acknowledged s'):.3f} s, the "
                f"follower's fetch, its drain {median(name, 'one at a time: drain s'):.3f} s)"
            )
    print(
        f"recording: {median('service', 'recording games/s'):,.0f} games/s; Redis memory "
        f"{median('service', 'Redis B per recorded game'):,.0f} B per recorded game "
        f"({median('service', 'Redis keys per recorded game'):.2f} keys more per game); over the closes "
        f"{median('service', 'Redis B per mark'):,.0f} B per mark ({median('service', 'Redis keys per mark'):.2f} "
        f"keys), of which the `marked` hash keeps {median('service', 'marked hash B per mark'):,.0f} B a tournament"
    )
    say("sizes: a player with 1 and with 1,000 games in a tournament")
    print("\na player's state and events (bytes), with his games of the tournament counted at its end:")
    print(table(await tornelo_sizes(workdir)))
    print(f"(machine: {os.cpu_count()} cores, Python {sys.version.split()[0]})")


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
        runs["rate"].append(rate_run(workdir, seed, [month], games, closed))
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
    parser.add_argument(
        "--system", choices=[FIDE, TORNELO], default=FIDE, help="fide's month, or tornelo's tournaments"
    )
    parser.add_argument("--players", type=int, default=100_000, help="fide: players in the month")
    parser.add_argument("--rounds", type=int, default=1, help="fide: games a player in the month")
    parser.add_argument("--tournaments", type=int, default=1000, help="tornelo: tournaments ended at once")
    parser.add_argument("--tournament-players", type=int, default=100, help="tornelo: players a tournament")
    parser.add_argument(
        "--spaced-ends", type=int, default=20, help="tornelo: tournaments then ended one at a time, each waited for"
    )
    parser.add_argument("--workers", type=int, default=1, help="rating-worker run processes")
    parser.add_argument(
        "--live-rate", type=float, default=1000.0, help="games/s of the next month (open tournaments) during the close"
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="fide: then one more close under py-spy, by part")
    parser.add_argument("--child", choices=["rate-close"], help=argparse.SUPPRESS)
    parser.add_argument("--games", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--periods", help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "rate-close":
        rate_close_child(args.games, args.seed, args.periods.split(","), args.result)
    elif args.system == TORNELO:
        if args.profile:
            parser.error("--profile profiles fide's close-period only")
        if args.tournaments < 1 or args.tournament_players < 2 or args.spaced_ends < 0:
            parser.error("--tournaments must be at least 1, --tournament-players at least 2, --spaced-ends at least 0")
        asyncio.run(tornelo_bench(args))
    else:
        asyncio.run(bench(args))


if __name__ == "__main__":
    main()
