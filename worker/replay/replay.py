"""Offline replay: `rating-worker rate` — games from a JSON-lines file, rating changes out.

The lines are read in chunks; each chunk's games go through the same steps as the streaming
worker's batches (`worker.store.schedule.apply_in_order`: read a snapshot, plan with the
engine in order, apply by check-and-set) over the store in memory, and the chunk's events
and dead letters are written in the order of its lines. Streams its input: memory grows with
the ratings and the distinct games seen (see `MemoryBackend`), never with the file size.

A per-period system's file also holds close lines (`{"control": "close", "period": P}`): the
games before one are applied first; then the close is made whole (`worker.replay.closes`: each
period it marks, in turn, marked in the store's calendar and every rating with recorded games
of it closed, in the byte order of their keys), before the lines after it.
"""

import gc
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, BinaryIO, TextIO

from schemas.game_finished import GameFinished
from worker.engine.decoder import BadInput, ErrorKind, decode_line
from worker.engine.engine import Engine, GameOutcome, SeedOutcome, SeedRow, SeedVerdict, Update, Verdict
from worker.replay.closes import close_period
from worker.replay.memory_store import MemoryBackend, MemoryStore
from worker.replay.progress import Progress
from worker.rules.interface import S
from worker.store.schedule import SeedItem, apply_in_order

# Lines (and seeding rows) per chunk: enough that a chunk's fixed costs (a snapshot, one apply)
# vanish per game, few enough that its games, plans and events stay in the processor's caches
# (measured on 100,000 games: 1024 lines per chunk took 20 % longer than 64).
CHUNK_LINES = 64
# A chunk's objects (decoded games, plans, events: ~20 per game that the cyclic collector
# tracks) all live until the chunk is written, and the store's states and records only grow.
# With the default threshold (700 net allocations) the collector runs every few dozen games
# and finds nothing: reference counting frees all of it. The replay raises the threshold while
# it runs and restores it after (measured on 100,000 games: 25 % longer without).
COLLECT_AFTER = 50_000


@dataclass
class ReplayCounts:
    lines: int = 0
    blank: int = 0
    seeded: int = 0
    games: int = 0  # valid games, duplicates included
    verdicts: Counter[Verdict] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    dead_letters: Counter[ErrorKind] = field(default_factory=Counter)
    events: int = 0
    close_lines: int = 0  # a per-period system's
    periods_closed: int = 0
    close_events: int = 0

    def summary(self, store: MemoryBackend[Any], seconds: float) -> str:
        def listing(counter: Counter[str] | Counter[ErrorKind]) -> str:
            return ", ".join(f"{k} {n}" for k, n in sorted(counter.items())) or "none"

        players = len({key.partition("/")[0] for key in store.states})
        rate = self.games / seconds if seconds > 0 else 0.0
        return "\n".join(
            [
                f"rate: {self.lines} lines ({self.blank} blank), {self.seeded} ratings seeded",
                f"rate: {self.games} valid games: {self.verdicts[Verdict.APPLIED]} applied, "
                f"{self.verdicts[Verdict.SKIPPED]} changed nothing ({listing(self.skipped)}), "
                f"{self.verdicts[Verdict.DUPLICATE]} duplicates, "
                f"{self.verdicts[Verdict.CONFLICT]} conflicting duplicates (dead-lettered)",
                f"rate: {sum(self.dead_letters.values())} dead-lettered ({listing(self.dead_letters)})",
                *(
                    [
                        f"rate: {self.close_lines} close lines: {self.periods_closed} periods closed, "
                        f"{self.close_events} close events"
                    ]
                    if store.pending is not None  # a per-period system's
                    else []
                ),
                f"rate: {self.events} events written; {len(store.states)} ratings of {players} players",
                f"rate: {seconds:.2f} s, {rate:,.0f} games/s",
            ]
        )


def dead_letter(line: int, error: BadInput, raw: bytes) -> str:
    """One dead-letter line: `{"line", "error_kind", "error_message", "raw"}`, invalid UTF-8 as U+FFFD."""
    record = {
        "line": line,
        "error_kind": str(error.kind),
        "error_message": error.message,
        "raw": raw.decode("utf-8", errors="replace"),
    }
    return json.dumps(record, ensure_ascii=False) + "\n"


@contextmanager
def _collecting_after(allocations: int) -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(allocations, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


async def replay(
    engine: Engine[S],
    seeds: Iterable[SeedRow],
    games: BinaryIO,
    out: BinaryIO,
    dlq: TextIO,
    max_message_bytes: int,
    progress: Progress | None = None,
) -> tuple[ReplayCounts, MemoryBackend[S]]:
    """Seed, then apply every line of `games` in order, writing events to `out` and bad lines to `dlq`.
    The lines are the games of the engine's system (`RatingSystem.game_model`)."""
    periods = engine.periods
    backend: MemoryBackend[S] = MemoryBackend(
        engine.rules.unseen,
        keep_outboxes=False,
        calendar=None if periods is None else periods.opening,
        pending=None if periods is None else periods.pending,
    )
    store = MemoryStore(backend)
    counts = ReplayCounts()
    with _collecting_after(COLLECT_AFTER):
        rows = [SeedItem(row, force=False) for row in seeds]
        for start in range(0, len(rows), CHUNK_LINES):
            for p in await apply_in_order(engine, store, rows[start : start + CHUNK_LINES]):
                assert isinstance(p.outcome, SeedOutcome)
                if p.outcome.verdict is SeedVerdict.IMPORTED and p.outcome.update is not None:
                    out.write(p.outcome.update.payload + b"\n")
                    counts.seeded += 1
                    counts.events += 1
        chunk: list[tuple[int, bytes, GameFinished | BadInput]] = []  # (line number, raw, game or why bad)
        for number, line in enumerate(games, start=1):
            counts.lines = number
            raw = line.removesuffix(b"\n").removesuffix(b"\r")
            if not raw.strip():
                counts.blank += 1
                continue
            try:
                decoded = decode_line(engine.spec, raw, max_message_bytes)  # a line has no record timestamp
            except BadInput as e:
                chunk.append((number, raw, e))
            else:
                if isinstance(decoded, GameFinished):
                    chunk.append((number, raw, decoded))
                else:  # a close line: the games before it first
                    await _apply_chunk(engine, store, chunk, out, dlq, max_message_bytes, counts)
                    chunk = []
                    marked = await close_period(engine, store, decoded.period, partial(_write_close, out, counts))
                    counts.close_lines += 1
                    counts.periods_closed += len(marked)
            if len(chunk) >= CHUNK_LINES:
                await _apply_chunk(engine, store, chunk, out, dlq, max_message_bytes, counts)
                chunk = []
                if progress is not None:
                    progress.update(games.tell() if games.seekable() else None, counts.games)
        await _apply_chunk(engine, store, chunk, out, dlq, max_message_bytes, counts)
    return counts, backend


def _write_close(out: BinaryIO, counts: ReplayCounts, update: Update[Any]) -> None:
    out.write(update.payload + b"\n")
    counts.close_events += 1
    counts.events += 1


async def _apply_chunk(
    engine: Engine[S],
    store: MemoryStore[S],
    chunk: list[tuple[int, bytes, GameFinished | BadInput]],
    out: BinaryIO,
    dlq: TextIO,
    max_message_bytes: int,
    counts: ReplayCounts,
) -> None:
    games = [g for _, _, g in chunk if isinstance(g, GameFinished)]
    # A per-period system's game may close a player first, reading other ratings (fide's held
    # games' opponents): through the store's lookup. (`rate` closes whole: none is left to close.)
    planned = iter(await apply_in_order(engine, store, games, store.backend.state))
    for number, raw, decoded in chunk:
        if isinstance(decoded, BadInput):
            counts.dead_letters[decoded.kind] += 1
            dlq.write(dead_letter(number, decoded, raw[:max_message_bytes]))
            continue
        outcome = next(planned).outcome
        assert isinstance(outcome, GameOutcome)
        counts.games += 1
        counts.verdicts[outcome.verdict] += 1
        if outcome.verdict is Verdict.CONFLICT:
            error = BadInput(ErrorKind.CONFLICTING_DUPLICATE, f"game {decoded.game_id} was recorded with other facts")
            counts.dead_letters[error.kind] += 1
            dlq.write(dead_letter(number, error, raw))
        elif outcome.skip is not None and outcome.verdict is Verdict.SKIPPED:
            counts.skipped[outcome.skip] += 1
        for update in outcome.updates:
            out.write(update.payload + b"\n")
        counts.events += len(outcome.updates)
