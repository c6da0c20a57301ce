"""Benchmark of the offline replay: `rating-worker rate` over a generated stream, against its JSON floor.

    .venv/bin/python bench/replay_bench.py [--games 1000000] [--players 20000] [--runs 3]

Each run times, one after the other on the same file and pinned to the last core (`taskset`, where
available), the JSON floor (`bench/json_floor.py`: stdlib `json.loads` of each line and two
event-shaped `json.dumps`, nothing else) and `rating-worker rate`, whole processes, start to
exit. It prints every run, the medians and `rate / floor` in games/s: the target is at least
0.5 (absolute speeds differ severalfold between machines and sessions; the ratio does not).
Then the peak RSS of `rate` and the memory the store keeps per rating, per player (three
categories) and per distinct game (tracemalloc). Nothing is asserted.
"""

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from schemas.game_finished import GameFinished
from worker.embedded.simulation import ArenaSimulation
from worker.engine.engine import Engine, SeedRow
from worker.engine.schedule import SeedItem, apply_in_order
from worker.replay.memory_store import MemoryBackend, MemoryStore
from worker.rules.arena import ArenaRules
from worker.rules.categories import Category
from worker.rules.hundredths import Hundredths, Points
from worker.rules.state import UNSEEN, RatingState


def generate(directory: Path, games: int, players: int) -> tuple[Path, Path]:
    games_path, seed_path = directory / f"games-{games}-{players}.jsonl", directory / f"seed-{players}.csv"
    if not games_path.exists():
        sim = ArenaSimulation(players, seed=42)
        seed_path.write_text(sim.seed_csv(), encoding="utf-8")
        with games_path.open("wb") as f:
            for line in sim.game_lines(games, bad_share=0.001, redelivery_share=0.01):
                f.write(line + b"\n")
    return games_path, seed_path


def timed(command: list[str]) -> tuple[float, str]:
    """Wall seconds of `command` pinned to the last core, and its stderr. (On these 2-core
    machines the first core also takes the interrupts: the same run varied 4.5-5.3 s there,
    4.0-4.1 s on the second.)"""
    if shutil.which("taskset"):
        command = ["taskset", "-c", str((os.cpu_count() or 1) - 1), *command]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, done.stderr


def run_rate(games_path: Path, seed_path: Path) -> tuple[float, str]:
    command = [sys.executable, "-m", "worker", "rate", str(games_path), "--seed", str(seed_path)]
    return timed([*command, "--out", "/dev/null", "--dlq", "/dev/null"])


def run_floor(games_path: Path) -> float:
    return timed([sys.executable, str(Path(__file__).with_name("json_floor.py")), str(games_path)])[0]


def memory_per_item(n: int) -> tuple[float, float]:
    """Bytes the store keeps per rated rating and per recorded game."""
    engine = Engine(ArenaRules(), Points(1200))
    backend: MemoryBackend[RatingState] = MemoryBackend(UNSEEN, keep_outboxes=False)
    store = MemoryStore(backend)
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    rows = [
        SeedItem(SeedRow(f"player{i:07d}", Category.BLITZ, Hundredths(150000 + i % 50000), 40), False) for i in range(n)
    ]
    asyncio.run(apply_in_order(engine, store, rows))
    del rows
    per_rating = _grown(before) / n
    before = tracemalloc.take_snapshot()
    base = {
        "event_id": "e",
        "finished_at": "2026-11-29T10:00:00Z",
        "rated": False,
        "time_control": {"base_seconds": 180, "increment_seconds": 0},
        "white_id": "a",
        "black_id": "b",
        "result": "1-0",
        "termination": "timeout",
    }
    for start in range(0, n, 1000):
        chunk = [GameFinished.model_validate({**base, "game_id": f"game{i:09d}"}) for i in range(start, start + 1000)]
        asyncio.run(apply_in_order(engine, store, chunk))
    del chunk
    per_game = _grown(before) / n
    tracemalloc.stop()
    return per_rating, per_game


def _grown(before: tracemalloc.Snapshot) -> int:
    after = tracemalloc.take_snapshot()
    return sum(stat.size_diff for stat in after.compare_to(before, "filename"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--players", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "rating-bench")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)

    t = time.perf_counter()
    games_path, seed_path = generate(args.workdir, args.games, args.players)
    size = games_path.stat().st_size
    print(f"input: {games_path} ({size / 1e6:.0f} MB, generated or reused in {time.perf_counter() - t:.1f} s)")
    lines = sum(1 for _ in games_path.open("rb"))
    floors, rates = [], []
    for run in range(1, args.runs + 1):
        floors.append(lines / run_floor(games_path))
        seconds, summary = run_rate(games_path, seed_path)
        rates.append(lines / seconds)
        print(
            f"run {run}: floor {floors[-1]:,.0f} games/s, rate {rates[-1]:,.0f} games/s, "
            f"rate / floor {rates[-1] / floors[-1]:.2f}"
        )
    print(summary.rstrip())
    floor, rate = statistics.median(floors), statistics.median(rates)
    print(f"{lines:,} lines, median of {args.runs}: floor {floor:,.0f} games/s, rate {rate:,.0f} games/s")
    print(f"rate / floor: {rate / floor:.2f} (target >= 0.5)")
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"peak RSS of a child (rate's): {peak_kib / 1024:.0f} MiB")
    per_rating, per_game = memory_per_item(200_000)
    print(
        f"memory: {per_rating:.0f} B per rating, {3 * per_rating:.0f} B per player rated in all 3 categories, "
        f"{per_game:.0f} B per distinct game"
    )


if __name__ == "__main__":
    main()
