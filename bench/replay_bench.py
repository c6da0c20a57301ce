"""Benchmark of the offline replay: `rating-worker rate` of each rating system, against its JSON floor.

    .venv/bin/python bench/replay_bench.py [--games 1000000] [--players 20000] [--runs 3]
                                           [--systems arena,uscf-cc,glicko2]

For each system of `--systems` (default: every one) it generates, once, as many games among as
many players with that system's generator (`worker.embedded.traffic_by_name.BY_NAME`: the arena's
games, the correspondence games of `uscf-cc`, the arena's games over months for `glicko2`) and
its seeding file, cached in the workdir under
names that include the system. Each run then times, one after the other and interleaved, for each
system in turn, the JSON floor on that system's file (`bench/json_floor.py`: stdlib `json.loads`
of each line and two event-shaped `json.dumps`, nothing else) and `rating-worker rate` with
`RATING_SYSTEM` set to the system (every other `RATING_*` variable dropped), each a whole process,
start to exit, pinned to the last core (`taskset`, where available).

It prints every run (per system: the floor's and `rate`'s games/s and `rate / floor`; then each
other system's `rate` over the arena's, `SYSTEM / arena`), the last run's summary of each `rate`,
then the medians: per system the floor, `rate` and `rate / floor`, whose target is at least 0.5,
and `SYSTEM / arena` (the ratio of the two systems' median games/s), whose target is at least 0.6
(absolute speeds differ severalfold between machines and sessions; the ratios measured in one
run do not). Then the peak RSS of each system's `rate` (the highest of its runs), and, for the
arena only, the memory the store keeps per rating, per player (three categories) and per
distinct game (tracemalloc). For each per-period system (`fide`, `tornelo`), the sizes of a
player's state (as Redis keeps it) and of his latest event with 1 and with 1,000 games recorded
in one period (counted at once: fide's month before is closed first): they must not grow with
the games, only by the digits of the totals. Nothing is asserted.
"""

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path

from schemas.game_finished import GameFinished
from worker.embedded.traffic import traffic
from worker.engine.engine import Engine, SeedRow
from worker.replay.memory_store import MemoryBackend, MemoryStore
from worker.rules.categories import Category
from worker.rules.hundredths import Hundredths, Points
from worker.store.schedule import SeedItem, apply_in_order
from worker.systems.arena.state import UNSEEN, RatingState
from worker.systems.registry import ARENA, BY_NAME

# Runs a command and prints its peak RSS: the wrapper is small when it forks, so the child's
# `ru_maxrss` is its own (Linux carries the forking process's high-water mark across exec: taken
# from this benchmark, it would be at least this benchmark's). As in bench/recovery_bench.py.
_PEAK_RSS = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
sys.stderr.buffer.write(done.stderr)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def generate(directory: Path, system: str, games: int, players: int) -> tuple[Path, Path]:
    """The system's games and seeding file, generated once and cached (written whole, then renamed)."""
    games_path = directory / f"games-{system}-{games}-{players}.jsonl"
    seed_path = directory / f"seed-{system}-{players}.csv"
    if not (games_path.exists() and seed_path.exists()):
        sim = traffic(BY_NAME[system])(players, seed=42)
        partial_seed, partial_games = seed_path.with_suffix(".partial"), games_path.with_suffix(".partial")
        partial_seed.write_text(sim.seed_csv(), encoding="utf-8")
        with partial_games.open("wb") as f:
            for line in sim.game_lines(games, bad_share=0.001, redelivery_share=0.01):
                f.write(line + b"\n")
        partial_seed.replace(seed_path)
        partial_games.replace(games_path)
    return games_path, seed_path


def system_env(system: str) -> dict[str, str]:
    """This process's environment with `RATING_SYSTEM=system` and no other `RATING_*` variable."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("RATING_")}
    env["RATING_SYSTEM"] = system
    return env


def timed(command: list[str], env: dict[str, str]) -> tuple[float, str, float]:
    """Wall seconds of `command` pinned to the last core, its stderr and its peak RSS in MiB. (On
    these 2-core machines the first core also takes the interrupts: the same run varied 4.5-5.3 s
    there, 4.0-4.1 s on the second.)"""
    wrapped = [sys.executable, "-c", _PEAK_RSS, *command]
    if shutil.which("taskset"):
        wrapped = ["taskset", "-c", str((os.cpu_count() or 1) - 1), *wrapped]
    started = time.perf_counter()
    done = subprocess.run(wrapped, env=env, capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - started
    status, peak_kib = (int(x) for x in done.stdout.split())
    if status != 0:
        raise SystemExit(f"{' '.join(command)} failed ({status}): {done.stderr[-2000:]}")
    return seconds, done.stderr, peak_kib / 1024


def run_rate(system: str, games_path: Path, seed_path: Path) -> tuple[float, str, float]:
    command = [sys.executable, "-m", "worker", "rate", str(games_path), "--seed", str(seed_path)]
    return timed([*command, "--out", "/dev/null", "--dlq", "/dev/null"], system_env(system))


def run_floor(system: str, games_path: Path) -> float:
    floor = Path(__file__).with_name("json_floor.py")
    return timed([sys.executable, str(floor), str(games_path)], system_env(system))[0]


def memory_per_item(n: int) -> tuple[float, float]:
    """Bytes the store keeps per rated rating and per recorded game."""
    engine = Engine(ARENA, Points(1200))
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


# One period's games of two seeded players, per per-period system: the seeding rows, a close made
# first (fide: the month before, so that the games are counted at once), and a game's extra fields.
_PERIOD_SETUPS: dict[str, tuple[tuple[str, str], str | None, dict[str, object]]] = {
    "fide": (("p,blitz,2000,40,,", "q,blitz,1900,40,,"), "2026-10", {}),
    "tornelo": (("p,blitz,2000,40,", "q,blitz,1900,40,"), None, {"tournament_id": "t1"}),
}


def period_sizes(system: str, counts: tuple[int, ...] = (1, 1000), held: bool = False) -> list[tuple[int, int, int]]:
    """(games, bytes of p's state in Redis, bytes of p's latest event) after each count of games of
    p against q in one period (results in turn: win, draw, loss); `held`: fide's games recorded
    before the month before them is closed (kept one by one until their close)."""
    rules = BY_NAME[system].rules
    engine = Engine(BY_NAME[system], Points(1200))
    assert engine.periods is not None
    rows, close_first, extra = _PERIOD_SETUPS[system]
    if held:
        close_first = None
    states = {}
    for text in rows:
        update = engine.seed(rules.parse_seed_row(text.split(",")), rules.unseen).update
        assert update is not None
        states[update.key] = update.state
    calendar = engine.periods.opening
    if close_first is not None:
        calendar = engine.marked(calendar, close_first)
    codec, model = BY_NAME[system].codec, rules.game_model
    sizes, played, payload = [], 0, b""
    for count in counts:
        while played < count:
            played += 1
            game = model.model_validate(
                {
                    "event_id": f"e{played}",
                    "game_id": f"g{played}",
                    "finished_at": "2026-11-10T12:00:00Z",
                    "rated": True,
                    "time_control": {"base_seconds": 180, "increment_seconds": 0},
                    "white_id": "p",
                    "black_id": "q",
                    "result": ("1-0", "1/2-1/2", "0-1")[played % 3],
                    "termination": "checkmate",
                    **extra,
                }
            )
            for update in engine.apply(game, states, None, calendar=calendar).updates:
                states[update.key] = update.state
                if update.key == "p/blitz":
                    payload = update.payload
        sizes.append((count, len(codec.encode(states["p/blitz"])), len(payload)))
    return sizes


def _grown(before: tracemalloc.Snapshot) -> int:
    after = tracemalloc.take_snapshot()
    return sum(stat.size_diff for stat in after.compare_to(before, "filename"))


@dataclass
class Measured:
    """One system's file and what its runs measured."""

    games_path: Path
    seed_path: Path
    lines: int
    floors: list[float] = field(default_factory=list)  # games/s
    rates: list[float] = field(default_factory=list)  # games/s
    peak_mib: float = 0.0
    summary: str = ""


def parse_systems(value: str) -> list[str]:
    systems = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in systems if name not in BY_NAME]
    if unknown or not systems or len(set(systems)) != len(systems):
        raise argparse.ArgumentTypeError(f"a comma-separated list of distinct systems among {', '.join(BY_NAME)}")
    return systems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--players", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--systems", type=parse_systems, default=list(BY_NAME), help="default: every system")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "rating-bench")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    systems: list[str] = args.systems

    measured: dict[str, Measured] = {}
    for system in systems:
        t = time.perf_counter()
        games_path, seed_path = generate(args.workdir, system, args.games, args.players)
        size = games_path.stat().st_size
        print(
            f"input ({system}): {games_path} ({size / 1e6:.0f} MB, generated or reused in "
            f"{time.perf_counter() - t:.1f} s), seed {seed_path}"
        )
        with games_path.open("rb") as f:
            lines = sum(1 for _ in f)
        measured[system] = Measured(games_path, seed_path, lines)
    others = [system for system in measured if system != "arena"] if "arena" in measured else []
    for run in range(1, args.runs + 1):
        for system, m in measured.items():
            m.floors.append(m.lines / run_floor(system, m.games_path))
            seconds, m.summary, peak_mib = run_rate(system, m.games_path, m.seed_path)
            m.rates.append(m.lines / seconds)
            m.peak_mib = max(m.peak_mib, peak_mib)
            print(
                f"run {run} ({system}): floor {m.floors[-1]:,.0f} games/s, rate {m.rates[-1]:,.0f} games/s, "
                f"rate / floor {m.rates[-1] / m.floors[-1]:.2f}"
            )
        for system in others:
            print(f"run {run}: {system} / arena {measured[system].rates[-1] / measured['arena'].rates[-1]:.2f}")
    for system, m in measured.items():
        print(f"last run's rate ({system}):")
        print(m.summary.rstrip())
    medians: dict[str, float] = {}
    for system, m in measured.items():
        floor, rate = statistics.median(m.floors), statistics.median(m.rates)
        medians[system] = rate
        print(
            f"{system}: {m.lines:,} lines, median of {args.runs}: floor {floor:,.0f} games/s, rate {rate:,.0f} games/s"
        )
        print(f"{system}: rate / floor: {rate / floor:.2f} (target >= 0.5)")
    for system in others:
        ratio = medians[system] / medians["arena"]
        verdict = "met" if ratio >= 0.6 else "missed"
        print(f"{system} / arena: {ratio:.3f} (median games/s; target >= 0.6: {verdict})")
    for system, m in measured.items():
        print(f"peak RSS of a child (rate's, {system}): {m.peak_mib:.0f} MiB")
    for system in measured:
        if BY_NAME[system].periodic:
            shown = "; ".join(
                f"{games:,} game{'s' if games > 1 else ''}: state {state} B, event {event} B"
                for games, state, event in period_sizes(system)
            )
            print(f"{system}: a player with, in one period, {shown}")
            if _PERIOD_SETUPS[system][1] is not None:  # fide: games held before their list exists
                shown = "; ".join(
                    f"{games:,} game{'s' if games > 1 else ''}: state {state:,} B, event {event:,} B"
                    for games, state, event in period_sizes(system, held=True)
                )
                print(f"{system}: the same, with every game held (no month closed before them): {shown}")
    if "arena" in measured:
        per_rating, per_game = memory_per_item(200_000)
        print(
            f"memory (the arena's store only): {per_rating:.0f} B per rating, "
            f"{3 * per_rating:.0f} B per player rated in all 3 categories, {per_game:.0f} B per distinct game"
        )


if __name__ == "__main__":
    main()
