"""`rating-worker restore`: rebuild the Redis state from the output topic, when Redis lost data.

Per rating, the event with the highest `seq` carries the whole state. Every game with an
event still in the topic gets an idempotency record without facts (`RESTORED`): redelivered
after the restore, it is a duplicate whatever its facts. Run it with the workers stopped.

- A rating whose stored state equals the restored one is left alone (so a re-run, or a run
  after a stop half way, does only what is left); one that differs is refused unless
  `force`. Game records that exist are kept (they have the facts).
- The topic is read up to its highwater marks as seen by the consumer's own fetches.
"""

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from redis.asyncio import Redis

from schemas.rating_changed import RatingChanged
from worker import keys
from worker.connections import make_redis
from worker.engine import RESTORED
from worker.events import rating_key
from worker.rules.categories import Category
from worker.rules.state import QualifyingGame, RatingState
from worker.settings import WorkerSettings
from worker.state_codec import encode_state
from worker.topic_scan import scan

log = logging.getLogger(__name__)
CHUNK = 1000  # keys per Redis round trip
PROGRESS_SECONDS = 2.0


@dataclass
class RestoreReport:
    records: int = 0
    ratings: int = 0
    games: int = 0
    written: int = 0
    unchanged: int = 0
    refused: list[str] = field(default_factory=list)
    games_recorded: int = 0


def _hundredths(value: object) -> int:
    return int(value * 100)  # type: ignore[operator]  # a Decimal with at most two decimals


def state_of(event: RatingChanged) -> RatingState:
    s = event.state
    qualifying = tuple(
        QualifyingGame(q.game_id, q.opponent_id, _hundredths(q.opponent_rating), _hundredths(q.score))
        for q in s.qualifying
    )
    return RatingState(None if s.rating is None else _hundredths(s.rating), s.rated_games, qualifying, s.seq)


async def read_changelog(
    settings: WorkerSettings, progress: Callable[[int], None]
) -> tuple[dict[str, RatingState], set[str], int]:
    """The latest state of every rating, the game ids seen, and the number of records read."""
    latest: dict[str, RatingState] = {}
    games: set[str] = set()
    records = 0
    async for batch in scan(settings, settings.topic_ratings):
        for record in batch:
            records += 1
            if record.value is None:
                continue
            event = RatingChanged.model_validate_json(record.value)
            key = rating_key(event.player_id, Category(event.category))
            if key not in latest or event.seq > latest[key].seq:
                latest[key] = state_of(event)
            if event.game_id is not None:
                games.add(event.game_id)
        progress(records)
    return latest, games, records


async def write_states(
    redis: "Redis", prefix: str, states: dict[str, RatingState], force: bool, report: RestoreReport
) -> None:
    items = sorted(states.items())
    for start in range(0, len(items), CHUNK):
        chunk = items[start : start + CHUNK]
        stored = await redis.mget([keys.state_key(prefix, k) for k, _ in chunk])
        async with redis.pipeline(transaction=False) as pipe:
            for (key, state), current in zip(chunk, stored, strict=True):
                value = encode_state(state)
                if current == value:
                    report.unchanged += 1
                elif current is not None and not force:
                    report.refused.append(key)
                else:
                    pipe.set(keys.state_key(prefix, key), value)
                    report.written += 1
            await pipe.execute()


async def record_games(redis: "Redis", prefix: str, games: set[str], retention_ms: int, report: RestoreReport) -> None:
    ids = sorted(games)
    for start in range(0, len(ids), CHUNK):
        async with redis.pipeline(transaction=False) as pipe:
            for game_id in ids[start : start + CHUNK]:
                pipe.set(keys.game_key(prefix, game_id), RESTORED.hex(), px=retention_ms, nx=True)
            report.games_recorded += sum(1 for ok in await pipe.execute() if ok)


async def restore(settings: WorkerSettings, force: bool, say: Callable[[str], None]) -> RestoreReport:
    report = RestoreReport()
    started = last = time.monotonic()

    def progress(records: int) -> None:
        nonlocal last
        if time.monotonic() - last >= PROGRESS_SECONDS:
            last = time.monotonic()
            say(f"restore: {records} records read ({records / (last - started):,.0f}/s)")

    states, games, report.records = await read_changelog(settings, progress)
    report.ratings, report.games = len(states), len(games)
    say(f"restore: read {report.records} records: {report.ratings} ratings, {report.games} games")

    redis = make_redis(settings)
    try:
        await write_states(redis, settings.redis_key_prefix, states, force, report)
        await record_games(
            redis, settings.redis_key_prefix, games, settings.idempotency_retention_seconds * 1000, report
        )
    finally:
        await redis.aclose()
    return report


def run(settings: WorkerSettings, force: bool, say: Callable[[str], None]) -> RestoreReport:
    return asyncio.run(restore(settings, force, say))
