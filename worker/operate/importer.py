"""`rating-worker import SEED.csv`: seeded ratings (the system's rows) through the worker's own path.

Rows go through the same pipeline as games (read, engine, check-and-set, outbox,
publication), in chunks. Re-running after a stop half way is safe: rows already imported
equal the current state and are skipped; the others are imported.
"""

import logging
from collections import Counter
from collections.abc import Sequence

from worker.engine.engine import SeedOutcome, SeedRow, SeedVerdict
from worker.operate.close_period import refuse_during_close
from worker.service.wiring import pipeline_for
from worker.settings import WorkerSettings
from worker.store.schedule import SeedItem

log = logging.getLogger(__name__)
CHUNK = 500  # rows per atomic step: big enough to be fast, small enough to show progress


async def import_ratings(
    settings: WorkerSettings, rows: Sequence[SeedRow], force: bool
) -> tuple[Counter[str], list[str]]:
    """Import `rows`; return counts by verdict and the ratings refused (they have state)."""
    counts: Counter[str] = Counter()
    refused: list[str] = []
    async with pipeline_for(settings) as (pipeline, _, store):
        await refuse_during_close(store.redis, settings, "import")
        for start in range(0, len(rows), CHUNK):
            planned, _stats = await pipeline.run([SeedItem(row, force) for row in rows[start : start + CHUNK]])
            for p in planned:
                assert isinstance(p.outcome, SeedOutcome) and isinstance(p.item, SeedItem)
                counts[p.outcome.verdict] += 1
                if p.outcome.verdict is SeedVerdict.REFUSED:
                    refused.append(p.item.row.key)
            done = min(start + CHUNK, len(rows))
            so_far = ", ".join(f"{verdict} {n}" for verdict, n in sorted(counts.items()))
            log.info("%d of %d rows done: %s", done, len(rows), so_far)
    return counts, refused
