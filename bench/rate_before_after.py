"""Before and after a change: the same bytes out of `rate`, and no slower.

    .venv/bin/python bench/rate_before_after.py --before REF [--games 100000] [--players 2000]
                                                [--runs 5] [--systems arena,fide]

For a change that must not change any output (a refactoring), against the commit `REF` before it.
The code of `REF` is taken with `git archive` into a temporary folder and run by this same Python
(its folder first on the path, so it is imported instead of the checkout's; the dependencies are
the checkout's). For each system of `--systems` (default: every one):

- `sample` writes the same games and seeding file with either code (random seed 7, 1 % bad lines,
  1 % redeliveries), which must be the same bytes;
- `rate` of those files, with either code, writes the same events and dead letters (compared
  byte for byte), and for the arena the bundled sample (`samples/`) too;
- `--runs` alternated timed runs of each `rate` (a whole process, start to exit, pinned to the
  last core where `taskset` exists): the baseline is the code before, measured in the same run,
  and the figure is the ratio of the medians, before / after (1.0: as fast; the target of a
  refactoring is at least 0.97).

Exit status 1 if any output differs; speed is printed, never asserted.
"""

import argparse
import filecmp
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SYSTEMS = ["arena", "uscf-cc", "glicko2", "fide", "tornelo"]


def run(code: Path, system: str, args: list[str | Path], pin: bool = False) -> float:
    """Run `rating-worker ARGS` of `code` for `system`; the seconds it took."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RATING_")} | {"RATING_SYSTEM": system}
    env["PYTHONPATH"] = str(code)
    command = [sys.executable, "-m", "worker", *map(str, args)]
    if pin and shutil.which("taskset"):
        command = ["taskset", "-c", str((os.cpu_count() or 1) - 1), *command]
    started = time.perf_counter()
    subprocess.run(command, env=env, cwd=code, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def same(*pairs: tuple[Path, Path]) -> bool:
    return all(filecmp.cmp(a, b, shallow=False) for a, b in pairs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the commit before the change (any git ref)")
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--players", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    args = parser.parse_args()
    systems = args.systems.split(",")
    unknown = set(systems) - set(SYSTEMS)
    if unknown or args.runs < 1 or args.games < 1:
        parser.error(f"--systems takes {', '.join(SYSTEMS)}; --runs and --games at least 1")

    differs = False
    with tempfile.TemporaryDirectory(prefix="rate-before-after-") as tmp:
        work = Path(tmp)
        before, after = work / "before", REPO
        before.mkdir()
        archive = subprocess.run(["git", "archive", args.before], cwd=REPO, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", before], input=archive, check=True)
        described = ["git", "describe", "--always", "--dirty"]
        head = subprocess.run(described, cwd=REPO, capture_output=True, text=True, check=False).stdout.strip()
        print(f"before: {args.before}; after: the checkout ({head}); {args.games} games, {args.runs} runs")
        for system in systems:
            files: dict[str, tuple[Path, Path]] = {}
            for side, code in (("before", before), ("after", after)):
                games, seed = work / f"{system}.{side}.jsonl", work / f"{system}.{side}.csv"
                sample: list[str | Path] = ["sample", games, "--seed-out", seed, "--random-seed", "7"]
                sizes = ["--games", str(args.games), "--players", str(args.players)]
                run(code, system, [*sample, *sizes, "--bad-share", "0.01", "--redelivery-share", "0.01"])
                files[side] = (games, seed)
            inputs_same = same((files["before"][0], files["after"][0]), (files["before"][1], files["after"][1]))
            games, seed = files["before"]
            cases = [("generated", games, seed)]
            if system == "arena":
                cases.append(("bundled", REPO / "samples" / "games.jsonl", REPO / "samples" / "seed.csv"))
            outputs_same = True
            for case, games_file, seed_file in cases:
                out: dict[str, tuple[Path, Path]] = {}
                for side, code in (("before", before), ("after", after)):
                    events, letters = work / f"{system}.{case}.{side}.out", work / f"{system}.{case}.{side}.dlq"
                    run(code, system, ["rate", games_file, "--seed", seed_file, "--out", events, "--dlq", letters])
                    out[side] = (events, letters)
                outputs_same &= same((out["before"][0], out["after"][0]), (out["before"][1], out["after"][1]))
            times: dict[str, list[float]] = {"before": [], "after": []}
            for _ in range(args.runs):
                for side, code in (("before", before), ("after", after)):
                    rate: list[str | Path] = ["rate", games, "--seed", seed, "--out", os.devnull, "--dlq", os.devnull]
                    times[side].append(run(code, system, rate, pin=True))
            median_before, median_after = statistics.median(times["before"]), statistics.median(times["after"])
            differs |= not (inputs_same and outputs_same)
            print(
                f"{system:8} sample {'same' if inputs_same else 'DIFFERS'}, rate output "
                f"{'identical' if outputs_same else 'DIFFERS'} ({', '.join(c for c, _, _ in cases)}); "
                f"median {median_before:.2f} s before, {median_after:.2f} s after: "
                f"speed after / before {median_before / median_after:.3f}"
            )
            rounded = {side: [round(t, 2) for t in runs] for side, runs in times.items()}
            print(f"         runs before {rounded['before']}, after {rounded['after']}")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
