"""`rating-worker rebuild`: recompute every rating from history, aside from the live state.

For when a rule was corrected, or Redis lost writes whose events were never published.

`rebuild` reads the input topic from its beginning up to its current end, remembering the
offset it read up to in each partition; merges the valid games in `(finished_at, game_id)`
order (finished_at as an instant, `worker.engine.instants`); applies the seed file first and
computes every rating with the engine in memory, exactly as `rate` does. It writes under a
fresh key prefix, never touching the live state: the states, the idempotency records of the
games of the last retention period (by `finished_at`), and the offsets it read up to
(`{prefix}rebuild`). `--force` first clears the prefix.

The switch-over that publishes what differs is `worker.operate.switch_over`.
"""

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis

from schemas.game_finished import GameFinished
from worker.engine.decoder import BadInput, decode_game
from worker.engine.engine import Engine, SeedRow
from worker.engine.instants import instant
from worker.engine.schedule import SeedItem, apply_in_order
from worker.operate.redis_ops import CHUNK, matching_keys, read_states, unlink_all, with_retry
from worker.operate.topic_scan import scan
from worker.replay.memory_store import MemoryBackend, MemoryStore
from worker.rules.arena import ArenaRules
from worker.rules.hundredths import Points
from worker.rules.state import UNSEEN, RatingState
from worker.service.connections import close_quietly, make_redis
from worker.settings import KEY_PATTERN_CHARS, WorkerSettings
from worker.store import keys, records
from worker.store.state_codec import encode_state
from worker.stream.retry import REDIS_CONNECT, retrying

log = logging.getLogger(__name__)
REBUILD_META = "rebuild"  # {prefix}rebuild -> hash: "topic", and "p:{partition}" -> offset read up to


@dataclass
class RebuildReport:
    records: int = 0
    bad: int = 0
    games: int = 0
    ratings: int = 0
    differing: int = 0
    cleared: int = 0
    refused: bool = False


@dataclass
class History:
    games: list[GameFinished] = field(default_factory=list)
    records: int = 0
    bad: int = 0
    ends: dict[int, int] = field(default_factory=dict)  # partition -> the offset read up to
    # Games whose input record arrived within this many seconds: their idempotency records
    # may still live in Redis (they expire a retention after a worker applied them).
    recent_seconds: int = 0
    recent: set[str] = field(default_factory=set)


async def read_history(settings: WorkerSettings, start: dict[int, int] | None = None) -> History:
    """Every valid game of the input topic from `start` (default: the beginning) to its end."""
    history = History(ends=dict(start or {}), recent_seconds=settings.idempotency_retention_seconds)
    since_ms = (int(time.time()) - history.recent_seconds) * 1000
    async for batch in scan(settings, settings.topic_games, start):
        for record in batch:
            history.records += 1
            history.ends[record.partition] = max(history.ends.get(record.partition, 0), record.offset + 1)
            try:
                game = decode_game(record.value or b"", settings.max_message_bytes)
            except BadInput:
                history.bad += 1
                continue
            history.games.append(game)
            if record.timestamp >= since_ms:
                history.recent.add(game.game_id)
    return history


def history_order(game: GameFinished) -> tuple[tuple[int, str], str]:
    """When a game ended, as an instant (offsets applied), then its id for equal instants."""
    return instant(game.finished_at), game.game_id


async def recompute(
    games: Sequence[GameFinished], seeds: Sequence[SeedRow], training_rating: int
) -> MemoryBackend[RatingState]:
    """The seeds, then every game in history order, through the store's protocol in memory."""
    engine = Engine(ArenaRules(), Points(training_rating))
    backend = MemoryBackend(UNSEEN, keep_outboxes=False)
    await apply_in_order(engine, MemoryStore(backend), [SeedItem(row, force=False) for row in seeds])
    await apply_all(engine, backend, sorted(games, key=history_order))
    return backend


async def apply_all(engine: Engine, backend: MemoryBackend[RatingState], games: Sequence[GameFinished]) -> None:
    store = MemoryStore(backend)
    for start in range(0, len(games), CHUNK):
        await apply_in_order(engine, store, games[start : start + CHUNK])


def check_prefix(prefix: str, live: str) -> None:
    """A rebuild prefix whose keys could be the live ones (or contain them) is refused, and one
    with a character of Redis's SCAN patterns (`rebuild --force` clears `{prefix}*`)."""
    if not prefix:
        raise ValueError("the rebuild prefix must not be empty")
    if any(c in prefix for c in KEY_PATTERN_CHARS):
        raise ValueError(
            f"the rebuild prefix {prefix!r} holds one of {KEY_PATTERN_CHARS}, which Redis reads as a key pattern"
        )
    if prefix.startswith(live) or live.startswith(prefix):
        raise ValueError(
            f"the rebuild prefix {prefix!r} overlaps RATING_REDIS_KEY_PREFIX {live!r}: one is the start of the other, "
            "so the rebuild's keys and the live ones could mix"
        )


async def rebuild(
    settings: WorkerSettings, seeds: Sequence[SeedRow], prefix: str, force: bool, say: Callable[[str], None]
) -> RebuildReport:
    check_prefix(prefix, settings.redis_key_prefix)
    report = RebuildReport()
    redis = make_redis(settings)
    try:
        await retrying(REDIS_CONNECT, redis.ping)
        found = await matching_keys(redis, f"{prefix}*")
        if found and not force:
            report.refused = True
            say(f"rebuild: prefix {prefix!r} already holds keys (use --force to clear and overwrite them)")
            return report
        if found:
            report.cleared = await unlink_all(redis, found)
            say(f"rebuild: cleared {report.cleared} keys under {prefix!r}")
        history = await read_history(settings)
        report.records, report.bad, report.games = history.records, history.bad, len(history.games)
        say(f"rebuild: read {report.records} records ({report.bad} bad), {report.games} games; recomputing")
        store = await recompute(history.games, seeds, settings.training_rating)
        report.ratings = len(store.states)
        await _write_states(redis, prefix, store.states)
        await _write_records(redis, prefix, store, history)
        meta: dict[Any, Any] = {"topic": settings.topic_games}  # redis-py types keys invariantly
        meta.update({f"p:{p}": end for p, end in history.ends.items()})
        await with_retry(lambda: redis.hset(f"{prefix}{REBUILD_META}", mapping=meta))
        live = await read_states(redis, settings.redis_key_prefix, sorted(store.states))
        report.differing = sum(1 for k, s in store.states.items() if k not in live or not same_rating(live[k], s))
        say(f"rebuild: {report.ratings} ratings written under {prefix!r}, {report.differing} differ from the live ones")
        return report
    finally:
        await close_quietly(redis.aclose())


async def _write_states(redis: "Redis", prefix: str, states: dict[str, RatingState]) -> None:
    items = sorted(states.items())
    for start in range(0, len(items), CHUNK):
        mapping = {keys.state_key(prefix, k): encode_state(s) for k, s in items[start : start + CHUNK]}
        await with_retry(redis.mset, mapping)


async def _write_records(redis: "Redis", prefix: str, store: MemoryBackend[RatingState], history: History) -> None:
    """The records of the games that arrived within the last retention (by their input record's
    timestamp, as the workers' records expire a retention after they applied them): a copy of
    one of them that the switch-over reads is then a duplicate, as it is for the workers."""
    retention_ms = history.recent_seconds * 1000
    recent = sorted(history.recent)
    for start in range(0, len(recent), CHUNK):
        chunk = [(g, d) for g in recent[start : start + CHUNK] if (d := store.record(g)) is not None]
        await with_retry(records.remember, redis, prefix, chunk, retention_ms, False)


def same_rating(live: RatingState, rebuilt: RatingState) -> bool:
    """Equal but for seq (the rebuilt history may number its changes differently)."""
    return (live.rating, live.rated_games, live.qualifying) == (rebuilt.rating, rebuilt.rated_games, rebuilt.qualifying)
