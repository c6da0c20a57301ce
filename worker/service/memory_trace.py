"""An opt-in trace of the worker's Python allocations, for proving that memory does not grow
with the games processed (`RATING_TRACEMALLOC_FRAMES` > 0; off by default: tracing slows
every allocation).

With it on, the worker starts `tracemalloc` before anything else and, on each SIGUSR2, writes a
snapshot to `RATING_TRACEMALLOC_DIR` as `tracemalloc-{pid}-{n}-{games}.snap`: `n` counts the
snapshots, `games` is `rating_games_consumed_total` when it was taken, so that a comparison can
tell growth per game (a leak) from growth of the working set (batches that grew). Taking a
snapshot holds the event loop for as long as it takes (a second or more with many blocks).
`bench/stream_bench.py --only soak --tracemalloc` compares them.
"""

import asyncio
import logging
import os
import signal
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import REGISTRY

log = logging.getLogger(__name__)


def snapshot_name(pid: int, n: int, games: int) -> str:
    return f"tracemalloc-{pid}-{n:03d}-{games}.snap"


def parse_name(name: str) -> tuple[int, int, int]:
    """(pid, n, games) of a snapshot's file name."""
    _, pid, n, games = name.removesuffix(".snap").split("-")
    return int(pid), int(n), int(games)


def start(frames: int, directory: Path) -> None:
    """Trace allocations with `frames` frames each; a snapshot on each SIGUSR2 (call in the loop)."""
    tracemalloc.start(frames)
    taken = 0

    def take() -> None:
        nonlocal taken
        games = int(REGISTRY.get_sample_value("rating_games_consumed_total") or 0)
        path = directory / snapshot_name(os.getpid(), taken, games)
        tracemalloc.take_snapshot().dump(str(path))
        taken += 1
        log.info("tracemalloc: snapshot written to %s after %d games", path, games)

    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR2, take)
    log.info("tracemalloc: tracing %d frames per allocation; SIGUSR2 writes a snapshot to %s", frames, directory)


@dataclass(frozen=True)
class SiteGrowth:
    """One allocation site (file:line) across three or more snapshots."""

    site: str
    sizes: tuple[int, ...]  # bytes held at each snapshot
    per_thousand: tuple[float, ...]  # bytes of growth per 1,000 games consumed, between each two

    @property
    def grows_with_games(self) -> bool:
        """Grew in every interval, by at least a byte per game: what a leak does. A working set that
        grew (larger batches) grows once, or by less than that, and may shrink again."""
        return all(g >= LEAK_BYTES_PER_THOUSAND for g in self.per_thousand)


# A site that holds something of every game grows by tens of bytes per game at least.
LEAK_BYTES_PER_THOUSAND = 1000.0


def compare(paths: list[Path], top: int = 15) -> tuple[list[int], list[int], list[SiteGrowth]]:
    """The games and the total traced bytes at each snapshot (in order of `n`), and the sites
    that grew most from the first to the last, each with its growth per 1,000 games."""
    ordered = sorted(paths, key=lambda p: parse_name(p.name)[1])
    games = [parse_name(p.name)[2] for p in ordered]
    stats = []
    for path in ordered:
        snapshot = tracemalloc.Snapshot.load(str(path)).filter_traces(
            [
                tracemalloc.Filter(False, tracemalloc.__file__),
                tracemalloc.Filter(False, "<frozen importlib._bootstrap*"),
            ]
        )
        stats.append({str(s.traceback[0]): s.size for s in snapshot.statistics("lineno")})
    totals = [sum(s.values()) for s in stats]
    sites = set().union(*stats)
    grown = []
    for site in sites:
        sizes = tuple(s.get(site, 0) for s in stats)
        rates = tuple(1000 * (sizes[i + 1] - sizes[i]) / max(games[i + 1] - games[i], 1) for i in range(len(sizes) - 1))
        grown.append(SiteGrowth(site, sizes, rates))
    grown.sort(key=lambda g: g.sizes[-1] - g.sizes[0], reverse=True)
    return games, totals, grown[:top]
