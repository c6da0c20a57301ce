"""Recovery times: import, restore, rebuild and catch-up, measured on the embedded stack.

    .venv/bin/python bench/recovery_bench.py [--scale 1.0] [--runs 3] [--only import|restore|rebuild|catch-up]

Each measurement starts a fresh tansu broker and redis-server (bench/stream_bench.py's stack)
and runs the real commands as processes; every run is printed, then the median of `--runs`.
At `--scale 1` (the sizes of issue 13):

- `import` of 1,000,000 seed rows (one per player): rows/s. Target >= 50,000.
- `restore` from an output topic of 3,000,000 events over 1,000,000 ratings (the seed imported,
  then imported again twice with `--force` and other ratings), after the Redis database was
  emptied: events/s, and whether every state equals the one before. Target >= 50,000.
- `rebuild` from 1,000,000 and from 3,000,000 games (the stream benchmark's simulation; the
  topic produced in advance): games/s, its peak RSS, and in the same run the offline
  replay (`rating-worker rate`) of the same games: target rebuild >= 0.8 x the replay's games/s,
  and a peak RSS that does not grow with the history (`--memory-mb`, 256 x the scale, bounds
  the sorts: both sizes spill at every scale).
- catch-up: a 600,000-game backlog produced in advance, a live load of 1,000 games/s offered
  from the start, and 1 then 2 workers: the seconds until the group's lag (games produced but
  not committed) is below one batch (RATING_BATCH_SIZE).

`--scale` multiplies every count (not the live rate), for a shorter run. Numbers are printed,
not asserted; docs/capacity.md holds the figures with their date and commit.
"""

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from redis.asyncio import Redis
from stream_bench import (
    DEFAULTS,
    PLAYERS,
    TANSU_SETTINGS,
    Committed,
    produce_backlog,
    stack_in,
    steady,
    workload,
)

from worker.store import keys
from worker.systems.arena.traffic import ArenaSimulation

Result = dict[str, float]


# Runs a command and prints its peak RSS: the wrapper is small when it forks, so the child's
# `ru_maxrss` is its own (Linux carries the forking process's high-water mark across exec: taken
# from this benchmark, which holds the games, it would be this benchmark's).
_PEAK_RSS = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
sys.stderr.buffer.write(done.stderr)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Run a command to its end: (wall seconds, its peak RSS in MiB)."""
    took, rss, _ = timed_with_output(command, env)
    return took, rss


def timed_with_output(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run a command to its end: (wall seconds, its peak RSS in MiB, what it wrote to stderr)."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", _PEAK_RSS, *command], env=env, capture_output=True, check=False)
    took = time.monotonic() - started
    status, peak_kib = (int(x) for x in done.stdout.split())
    if status != 0:
        raise SystemExit(f"{' '.join(command)} failed ({status}): {done.stderr.decode()[-2000:]}")
    return took, peak_kib / 1024, done.stderr.decode(errors="replace")


def worker(*args: str) -> list[str]:
    return [sys.executable, "-m", "worker", *args]


def seed_file(path: Path, rows: int, shift: int) -> Path:
    """`rows` established blitz ratings, one per player; `shift` moves every rating (another import)."""
    with path.open("w", encoding="utf-8") as out:
        out.write("player_id,category,rating,rated_games\n")
        for i in range(rows):
            out.write(f"p{i:07d},blitz,{1200 + (i * 7 + shift) % 1400}.{shift % 100:02d},40\n")
    return path


async def states(url: str) -> dict[bytes, object]:
    redis = Redis.from_url(url)
    try:
        found: dict[bytes, object] = {}
        batch = []
        async for key in redis.scan_iter(f"rating:{keys.STATE}*", count=10_000):
            batch.append(key)
            if len(batch) == 10_000:
                found.update(zip(batch, await redis.mget(batch), strict=True))
                batch = []
        if batch:
            found.update(zip(batch, await redis.mget(batch), strict=True))
        return found
    finally:
        await redis.aclose()


async def flush(url: str) -> None:
    redis = Redis.from_url(url)
    try:
        await redis.flushall()
    finally:
        await redis.aclose()


async def import_run(workdir: Path, rows: int) -> Result:
    seed = seed_file(workdir / "import.csv", rows, 0)
    with stack_in(workdir) as stack:
        await stack.start(None)
        took, rss = timed(worker("import", str(seed)), stack.env())
    return {"rows/s": rows / took, "seconds": took, "peak RSS MiB": rss}


async def restore_run(workdir: Path, ratings: int, events: int) -> Result:
    imports = max(1, round(events / ratings))
    with stack_in(workdir) as stack:
        await stack.start(None)
        for n in range(imports):
            seed = seed_file(workdir / f"restore-{n}.csv", ratings, n * 37)
            timed(worker("import", str(seed), *(["--force"] if n else [])), stack.env())
        before = await states(stack.redis.url)
        await flush(stack.redis.url)
        took, rss = timed(worker("restore"), stack.env())
        after = await states(stack.redis.url)
    published = ratings * imports
    return {
        "events/s": published / took,
        "seconds": took,
        "peak RSS MiB": rss,
        "states equal": float(after == before and len(before) == ratings),
    }


def games_file(workdir: Path, games: int) -> tuple[Path, list[bytes]]:
    lines = list(workload(PLAYERS, games))
    path = workdir / f"games-{games}.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path, lines


async def rebuild_run(workdir: Path, games: int, seed_csv: Path, memory_mb: float) -> Result:
    path, lines = games_file(workdir, games)
    replay_took, replay_rss = timed(
        worker("rate", str(path), "--seed", str(seed_csv), "--out", "/dev/null", "--dlq", "/dev/null"),
        os.environ.copy(),
    )
    with stack_in(workdir) as stack:
        await stack.start(None)
        await produce_backlog(stack.bootstrap, lines)
        del lines
        rebuild = worker("rebuild", "--seed", str(seed_csv), "--memory-mb", str(memory_mb))
        took, rss, said = timed_with_output(rebuild, stack.env())
    spilled = re.search(r"spilled \d+ runs \(([\d.]+) MB\)", said)
    rebuild_rate, replay_rate = games / took, games / replay_took
    return {
        "rebuild games/s": rebuild_rate,
        "replay games/s": replay_rate,
        "rebuild / replay": rebuild_rate / replay_rate,
        "rebuild peak RSS MiB": rss,
        "replay peak RSS MiB": replay_rss,
        "spilled B per game": float("nan") if spilled is None else float(spilled[1]) * 1e6 / games,
    }


async def catch_up_run(workdir: Path, backlog: int, rate: float, workers: int, seed_csv: Path) -> Result:
    lines = workload(PLAYERS, 10**9)
    first = [next(lines) for _ in range(backlog)]
    with stack_in(workdir) as stack:
        await stack.start(seed_csv)
        await produce_backlog(stack.bootstrap, first)
        stack.start_workers(workers, **TANSU_SETTINGS)
        started = time.monotonic()
        offered = 0

        def tick(elapsed: float) -> None:
            nonlocal offered
            offered = int(rate * elapsed)

        load = asyncio.create_task(steady(stack.bootstrap, lines, rate, 3600, tick))
        caught = None
        async with Committed(stack.bootstrap) as committed:
            while time.monotonic() - started < 3000:
                lag = backlog + offered - await committed.total()
                if offered > 0 and lag < DEFAULTS.batch_size:
                    caught = time.monotonic() - started
                    break
                await asyncio.sleep(0.5)
        load.cancel()
        await asyncio.gather(load, return_exceptions=True)
    return {"seconds to lag < one batch": float("nan") if caught is None else caught}


def report(name: str, runs: list[Result]) -> None:
    print(f"\n{name}:")
    for n, run in enumerate(runs, 1):
        print(f"  run {n}: " + ", ".join(f"{k} {v:,.2f}" for k, v in run.items()))
    medians = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print("  median: " + ", ".join(f"{k} {v:,.2f}" for k, v in medians.items()))


async def repeat(name: str, runs: int, measure: Callable[[], Awaitable[Result]]) -> None:
    results = []
    for n in range(runs):
        print(f"{name}: run {n + 1} of {runs}", file=sys.stderr, flush=True)
        results.append(await measure())
    report(name, results)


async def bench(args: argparse.Namespace) -> None:
    scale = args.scale
    workdir = Path(tempfile.mkdtemp(prefix="recovery-bench-"))
    seed_csv = workdir / "seed.csv"
    seed_csv.write_text(ArenaSimulation(PLAYERS, seed=6).seed_csv(), encoding="utf-8")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    print(f"recovery benchmark, commit {commit.stdout.strip()}, scale {scale:g}, {args.runs} runs, {time.ctime()}")
    only = args.only
    if only in (None, "import"):
        rows = int(1_000_000 * scale)
        await repeat(f"import of {rows:,} seed rows", args.runs, lambda: import_run(workdir, rows))
    if only in (None, "restore"):
        ratings, events = int(1_000_000 * scale), int(3_000_000 * scale)
        name = f"restore of {events:,} events over {ratings:,} ratings"
        await repeat(name, args.runs, lambda: restore_run(workdir, ratings, events))
    if only in (None, "rebuild"):
        memory_mb = 256 * scale  # the command's default, scaled with the history
        for games in (int(1_000_000 * scale), int(3_000_000 * scale)):

            def rebuild_of(g: int = games) -> Awaitable[Result]:
                return rebuild_run(workdir, g, seed_csv, memory_mb)

            await repeat(f"rebuild of {games:,} games, --memory-mb {memory_mb:g}", args.runs, rebuild_of)
    if only in (None, "catch-up"):
        backlog = int(600_000 * scale)
        for workers in (1, 2):
            name = f"catch-up of {backlog:,} games with {args.live_rate:g} games/s live, {workers} worker(s)"

            def catch_up_with(w: int = workers) -> Awaitable[Result]:
                return catch_up_run(workdir, backlog, args.live_rate, w, seed_csv)

            await repeat(name, args.runs, catch_up_with)
    print(f"(machine: {os.cpu_count()} cores, Python {sys.version.split()[0]})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every count (not the live rate)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--live-rate", type=float, default=1000.0, help="games/s offered during the catch-up")
    parser.add_argument("--only", choices=["import", "restore", "rebuild", "catch-up"])
    args = parser.parse_args()
    asyncio.run(bench(args))


if __name__ == "__main__":
    main()
