"""`rating-worker rebuild` and `rating-worker switch-over`: recompute every rating from history.

For when a rule was corrected. `rebuild` reads the input topic from its beginning (every
partition, up to the highwater marks its own fetches report), merges the games in
`(finished_at, game_id)` order (finished_at as an instant; ties by game id), applies the
seed file first, and computes every rating with the engine in memory, exactly as `rate`
does; it writes the states under a fresh key prefix, never touching the live ones.

`switch-over` then publishes each rebuilt rating that differs from the live one as an
`imported` event with `seq` = live `seq` + 1, through the worker's own path (check-and-set,
outbox, publication), so consumers keeping the highest `seq` take it. The contract's
`imported` event always carries a rating: a rating the rebuild leaves *unrated* while the
live one differs cannot be expressed as one, and is listed instead of switched.
"""

import asyncio
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from schemas.game_finished import GameFinished
from worker import keys
from worker.connections import make_redis
from worker.decode import BadInput, decode_game
from worker.engine import Engine, SeedRow
from worker.importer import import_ratings
from worker.memory_store import MemoryStore
from worker.rules.arena import ArenaRules
from worker.rules.categories import Category
from worker.rules.state import RatingState
from worker.settings import WorkerSettings
from worker.state_codec import decode_state, encode_state
from worker.topic_scan import scan

log = logging.getLogger(__name__)
_STAMP = re.compile(r"(.{19})(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})")
CHUNK = 1000


@dataclass
class RebuildReport:
    records: int = 0
    bad: int = 0
    games: int = 0
    ratings: int = 0
    differing: int = 0
    refused: bool = False


@dataclass
class SwitchReport:
    differing: int = 0
    switched: int = 0
    unrated: list[str] = field(default_factory=list)


async def read_history(settings: WorkerSettings) -> tuple[list[GameFinished], int, int]:
    """Every valid game of the input topic, and the counts of records and of bad ones."""
    games: list[GameFinished] = []
    records = bad = 0
    async for batch in scan(settings, settings.topic_games):
        for record in batch:
            records += 1
            try:
                games.append(decode_game(record.value or b"", settings.max_message_bytes))
            except BadInput:
                bad += 1
    return games, records, bad


def history_order(game: GameFinished) -> tuple[datetime, str]:
    """When a game ended, as an instant (offsets applied), then its id for equal instants."""
    m = _STAMP.fullmatch(game.finished_at.upper())
    assert m is not None  # validated by the schema
    whole, fraction, offset = m.groups()
    second = min(int(whole[17:19]), 59)  # a leap second (:60) sorts as :59 of its minute
    micros = (fraction or "")[1:7].ljust(6, "0")
    offset = "+00:00" if offset == "Z" else offset
    return datetime.fromisoformat(f"{whole[:17]}{second:02d}.{micros}{offset}"), game.game_id


def recompute(games: Sequence[GameFinished], seeds: Sequence[SeedRow], training_rating: int) -> MemoryStore:
    store = MemoryStore(Engine(ArenaRules(), training_rating))
    for row in seeds:
        store.seed(row)
    for game in sorted(games, key=history_order):
        store.apply(game)
    return store


async def rebuild(
    settings: WorkerSettings, seeds: Sequence[SeedRow], prefix: str, force: bool, say: Callable[[str], None]
) -> RebuildReport:
    if prefix == settings.redis_key_prefix:
        raise ValueError("the rebuild prefix must differ from RATING_REDIS_KEY_PREFIX (the live state)")

    report = RebuildReport()
    redis = make_redis(settings)
    try:
        if not force:
            async for _ in redis.scan_iter(match=f"{prefix}*", count=1000):
                report.refused = True
                say(f"rebuild: prefix {prefix!r} already holds keys (use --force to overwrite them)")
                return report
        games, report.records, report.bad = await read_history(settings)
        report.games = len(games)
        say(f"rebuild: read {report.records} records ({report.bad} bad), {report.games} games; recomputing")
        store = recompute(games, seeds, settings.training_rating)
        report.ratings = len(store.states)
        items = sorted(store.states.items())
        for start in range(0, len(items), CHUNK):
            chunk = items[start : start + CHUNK]
            live = await redis.mget([keys.state_key(settings.redis_key_prefix, k) for k, _ in chunk])
            async with redis.pipeline(transaction=False) as pipe:
                for (key, state), current in zip(chunk, live, strict=True):
                    pipe.set(keys.state_key(prefix, key), encode_state(state))
                    if current is None or not same_rating(decode_state(current), state):
                        report.differing += 1
                await pipe.execute()
        say(f"rebuild: {report.ratings} ratings written under {prefix!r}, {report.differing} differ from the live ones")
        return report
    finally:
        await redis.aclose()


def same_rating(live: RatingState, rebuilt: RatingState) -> bool:
    """Equal but for seq (the rebuilt history may number its changes differently)."""
    return (live.rating, live.rated_games, live.qualifying) == (rebuilt.rating, rebuilt.rated_games, rebuilt.qualifying)


async def switch_over(settings: WorkerSettings, prefix: str, say: Callable[[str], None]) -> SwitchReport:

    report = SwitchReport()
    redis = make_redis(settings)
    rows: list[SeedRow] = []
    try:
        rebuilt_keys = sorted([k.decode() async for k in redis.scan_iter(match=f"{prefix}{keys.STATE}*", count=1000)])
        for start in range(0, len(rebuilt_keys), CHUNK):
            chunk = [k.removeprefix(f"{prefix}{keys.STATE}") for k in rebuilt_keys[start : start + CHUNK]]
            rebuilt = await redis.mget([keys.state_key(prefix, k) for k in chunk])
            live = await redis.mget([keys.state_key(settings.redis_key_prefix, k) for k in chunk])
            for key, new, old in zip(chunk, rebuilt, live, strict=True):
                if new is None:
                    continue
                state = decode_state(new)
                if old is not None and same_rating(decode_state(old), state):
                    continue
                report.differing += 1
                player, _, category = key.partition("/")
                if state.rating is None:
                    report.unrated.append(key)
                else:
                    rows.append(SeedRow(player, Category(category), state.rating, state.rated_games))
    finally:
        await redis.aclose()
    say(f"switch-over: {report.differing} ratings differ; publishing {len(rows)} as imported events")
    if rows:
        counts, _ = await import_ratings(settings, rows, force=True)
        report.switched = counts["imported"]
    return report


def run_rebuild(
    settings: WorkerSettings, seeds: Sequence[SeedRow], prefix: str, force: bool, say: Callable[[str], None]
) -> RebuildReport:
    return asyncio.run(rebuild(settings, seeds, prefix, force, say))


def run_switch_over(settings: WorkerSettings, prefix: str, say: Callable[[str], None]) -> SwitchReport:
    return asyncio.run(switch_over(settings, prefix, say))
