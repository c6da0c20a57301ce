"""Offline replay: `rating-worker rate` — games from a JSON-lines file, rating changes out.

Streams its input: memory grows with the ratings and the distinct games seen (see
`MemoryStore`), never with the file size.
"""

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import BinaryIO, TextIO

from worker.engine.decoder import BadInput, ErrorKind, decode_game
from worker.engine.engine import Engine, SeedRow, SeedVerdict, Verdict
from worker.replay.memory_store import MemoryStore
from worker.replay.progress import Progress


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

    def summary(self, store: MemoryStore, seconds: float) -> str:
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


def replay(
    engine: Engine,
    seeds: Iterable[SeedRow],
    games: BinaryIO,
    out: BinaryIO,
    dlq: TextIO,
    max_message_bytes: int,
    progress: Progress | None = None,
) -> tuple[ReplayCounts, MemoryStore]:
    """Seed, then apply every line of `games` in order, writing events to `out` and bad lines to `dlq`."""
    store = MemoryStore(engine)
    counts = ReplayCounts()
    for row in seeds:
        seeded = store.seed(row)
        if seeded.verdict is SeedVerdict.IMPORTED and seeded.update is not None:
            out.write(seeded.update.payload + b"\n")
            counts.seeded += 1
            counts.events += 1
    for number, line in enumerate(games, start=1):
        counts.lines = number
        raw = line.removesuffix(b"\n").removesuffix(b"\r")
        if not raw.strip():
            counts.blank += 1
            continue
        try:
            game = decode_game(raw, max_message_bytes)
        except BadInput as e:
            counts.dead_letters[e.kind] += 1
            dlq.write(dead_letter(number, e, raw[:max_message_bytes]))
            continue
        counts.games += 1
        outcome = store.apply(game)
        counts.verdicts[outcome.verdict] += 1
        if outcome.verdict is Verdict.CONFLICT:
            error = BadInput(ErrorKind.CONFLICTING_DUPLICATE, f"game {game.game_id} was recorded with other facts")
            counts.dead_letters[error.kind] += 1
            dlq.write(dead_letter(number, error, raw))
        elif outcome.skip is not None and outcome.verdict is Verdict.SKIPPED:
            counts.skipped[outcome.skip] += 1
        for update in outcome.updates:
            out.write(update.payload + b"\n")
        counts.events += len(outcome.updates)
        if progress is not None and number % 4096 == 0:
            progress.update(games.tell() if games.seekable() else None, counts.games)
    return counts, store
