"""`rating-worker rebuild` and `rating-worker switch-over`: recompute every rating from history.

For when a rule was corrected, or Redis lost writes whose events were never published.

`rebuild` reads the input topic from its beginning up to its current end, remembering the
offset it read up to in each partition; merges the valid games in `(finished_at, game_id)`
order (finished_at as an instant, `worker.instants`); applies the seed file first and
computes every rating with the engine in memory, exactly as `rate` does. It writes under a
fresh key prefix, never touching the live state: the states, the idempotency records of the
games of the last retention period (by `finished_at`), and the offsets it read up to
(`{prefix}rebuild`). `--force` first clears the prefix.

`switch-over` brings the rebuild up to date and publishes each rating that differs, with the
workers running:
1. it waits (up to RATING_COMMAND_RETRY_SECONDS) until the workers' watermarks have reached
   the rebuild's offsets: every game the rebuild read is then applied live too;
2. it reads every live state and its seq (a snapshot);
3. it reads the input from the rebuild's offsets to its current end, and keeps the games the
   workers have applied (their idempotency record exists); every game applied before the
   snapshot is among them, since the end is read after the snapshot;
4. it applies them to the rebuilt states, in memory, in the rebuild's order, with the
   rebuild's records (a redelivery of an earlier game stays a duplicate);
5. it compares: each rating whose brought-forward state differs from the snapshot's is
   imported with `seq` = live `seq` + 1, through the worker's own path, **only if its live seq
   is still the snapshot's** (a check-and-set); a rating a worker changed meanwhile is left
   alone (`moved`);
6. moved ratings are compared again in a new round (from 2), up to ROUNDS times; those still
   moving are listed, for a re-run.
Games a worker applies after a rating's import are applied on top of it, as usual. So with no
rule changed nothing is imported, and a corrected rule reaches every rating, including the
games applied after the rebuild. The contract's `imported` event always carries a rating: a
rating the rebuild leaves *unrated* while the live one differs is listed, not switched.
"""

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis

from schemas.game_finished import GameFinished
from worker import keys
from worker.connections import close_quietly, make_redis
from worker.decode import BadInput, decode_game
from worker.engine import Engine, SeedRow, SeedVerdict
from worker.instants import instant
from worker.memory_store import MemoryStore
from worker.retry import REDIS_COMMAND, REDIS_CONNECT, retrying
from worker.rules.arena import ArenaRules
from worker.rules.categories import Category
from worker.rules.state import UNSEEN, RatingState
from worker.schedule import SeedItem
from worker.service import pipeline_for
from worker.settings import WorkerSettings
from worker.state_codec import decode_state, encode_state
from worker.topic_scan import scan

log = logging.getLogger(__name__)
CHUNK = 1000
ROUNDS = 5  # switch-over rounds for ratings that moved while it compared them
WATERMARK_POLL_SECONDS = 0.5
REBUILD_META = "rebuild"  # {prefix}rebuild -> hash: "topic", and "p:{partition}" -> offset read up to


class NotReady(Exception):
    """The switch-over cannot run yet (no rebuild, or workers behind it): one line, status 1."""


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
class SwitchReport:
    differing: int = 0
    switched: int = 0
    brought_forward: int = 0  # games applied after the rebuild, applied to the rebuilt states
    rounds: int = 0
    unrated: list[str] = field(default_factory=list)
    moving: list[str] = field(default_factory=list)  # changed by the workers in every round


@dataclass
class History:
    games: list[GameFinished] = field(default_factory=list)
    records: int = 0
    bad: int = 0
    ends: dict[int, int] = field(default_factory=dict)  # partition -> the offset read up to


async def read_history(settings: WorkerSettings, start: dict[int, int] | None = None) -> History:
    """Every valid game of the input topic from `start` (default: the beginning) to its end."""
    history = History(ends=dict(start or {}))
    async for batch in scan(settings, settings.topic_games, start):
        for record in batch:
            history.records += 1
            history.ends[record.partition] = max(history.ends.get(record.partition, 0), record.offset + 1)
            try:
                history.games.append(decode_game(record.value or b"", settings.max_message_bytes))
            except BadInput:
                history.bad += 1
    return history


def history_order(game: GameFinished) -> tuple[tuple[int, str], str]:
    """When a game ended, as an instant (offsets applied), then its id for equal instants."""
    return instant(game.finished_at), game.game_id


def recompute(games: Sequence[GameFinished], seeds: Sequence[SeedRow], training_rating: int) -> MemoryStore:
    store = MemoryStore(Engine(ArenaRules(), training_rating))
    for row in seeds:
        store.seed(row)
    for game in sorted(games, key=history_order):
        store.apply(game)
    return store


def check_prefix(prefix: str, live: str) -> None:
    """A rebuild prefix whose keys could be the live ones (or contain them) is refused."""
    if not prefix:
        raise ValueError("the rebuild prefix must not be empty")
    if prefix.startswith(live) or live.startswith(prefix):
        raise ValueError(
            f"the rebuild prefix {prefix!r} overlaps RATING_REDIS_KEY_PREFIX {live!r}: one is the start of the other, "
            "so the rebuild's keys and the live ones could mix"
        )


async def _redis(call: Callable[..., Any], *args: Any) -> Any:
    return await retrying(REDIS_COMMAND, call, *args)


async def _scan_keys(redis: "Redis", match: str) -> AsyncIterator[list[bytes]]:
    """Keys matching `match`, a chunk at a time (the SCAN is retried from the start on failure)."""

    async def all_keys() -> list[bytes]:
        return [k async for k in redis.scan_iter(match=match, count=CHUNK)]

    found: list[bytes] = await _redis(all_keys)
    for start in range(0, len(found), CHUNK):
        yield found[start : start + CHUNK]


async def clear_prefix(redis: "Redis", prefix: str) -> int:
    cleared = 0
    async for chunk in _scan_keys(redis, f"{prefix}*"):
        cleared += await _redis(redis.unlink, *chunk)
    return cleared


async def rebuild(
    settings: WorkerSettings, seeds: Sequence[SeedRow], prefix: str, force: bool, say: Callable[[str], None]
) -> RebuildReport:
    check_prefix(prefix, settings.redis_key_prefix)
    report = RebuildReport()
    redis = make_redis(settings)
    try:
        await retrying(REDIS_CONNECT, redis.ping)
        async for _ in _scan_keys(redis, f"{prefix}*"):
            if not force:
                report.refused = True
                say(f"rebuild: prefix {prefix!r} already holds keys (use --force to clear and overwrite them)")
                return report
            report.cleared = await clear_prefix(redis, prefix)
            say(f"rebuild: cleared {report.cleared} keys under {prefix!r}")
            break
        history = await read_history(settings)
        report.records, report.bad, report.games = history.records, history.bad, len(history.games)
        say(f"rebuild: read {report.records} records ({report.bad} bad), {report.games} games; recomputing")
        store = recompute(history.games, seeds, settings.training_rating)
        report.ratings = len(store.states)
        await _write_states(redis, prefix, store.states)
        await _write_records(redis, prefix, store, history.games, settings.idempotency_retention_seconds)
        meta: dict[Any, Any] = {"topic": settings.topic_games}  # redis-py types keys invariantly
        meta.update({f"p:{p}": end for p, end in history.ends.items()})
        await _redis(lambda: redis.hset(f"{prefix}{REBUILD_META}", mapping=meta))
        live = await _states(redis, settings.redis_key_prefix, sorted(store.states))
        report.differing = sum(1 for k, s in store.states.items() if k not in live or not same_rating(live[k], s))
        say(f"rebuild: {report.ratings} ratings written under {prefix!r}, {report.differing} differ from the live ones")
        return report
    finally:
        await close_quietly(redis.aclose())


async def _write_states(redis: "Redis", prefix: str, states: dict[str, RatingState]) -> None:
    items = sorted(states.items())
    for start in range(0, len(items), CHUNK):
        mapping = {keys.state_key(prefix, k): encode_state(s) for k, s in items[start : start + CHUNK]}
        await _redis(redis.mset, mapping)


async def _write_records(
    redis: "Redis", prefix: str, store: MemoryStore, games: Sequence[GameFinished], retention_seconds: int
) -> None:
    """The records of the games of the last retention (by finished_at): a copy of one of them
    read by the switch-over is then a duplicate, as it is for the workers."""
    since = int(time.time()) - retention_seconds
    recent = sorted({g.game_id for g in games if instant(g.finished_at)[0] >= since})
    for start in range(0, len(recent), CHUNK):
        chunk = recent[start : start + CHUNK]

        async def write(chunk: list[str] = chunk) -> None:
            async with redis.pipeline(transaction=False) as pipe:
                for game_id in chunk:
                    digest = store.record(game_id)
                    if digest is not None:
                        pipe.set(keys.game_key(prefix, game_id), digest.hex(), ex=retention_seconds)
                await pipe.execute()

        await _redis(write)


async def _states(redis: "Redis", prefix: str, ratings: Sequence[str]) -> dict[str, RatingState]:
    out: dict[str, RatingState] = {}
    for start in range(0, len(ratings), CHUNK):
        chunk = ratings[start : start + CHUNK]
        values = await _redis(redis.mget, [keys.state_key(prefix, k) for k in chunk])
        out.update({k: decode_state(v) for k, v in zip(chunk, values, strict=True) if v is not None})
    return out


def same_rating(live: RatingState, rebuilt: RatingState) -> bool:
    """Equal but for seq (the rebuilt history may number its changes differently)."""
    return (live.rating, live.rated_games, live.qualifying) == (rebuilt.rating, rebuilt.rated_games, rebuilt.qualifying)


async def switch_over(settings: WorkerSettings, prefix: str, say: Callable[[str], None]) -> SwitchReport:
    """The steps of the module's docstring."""
    check_prefix(prefix, settings.redis_key_prefix)
    report = SwitchReport()
    redis = make_redis(settings)
    try:
        await retrying(REDIS_CONNECT, redis.ping)
        ends = await _rebuild_ends(redis, prefix, settings.topic_games)
        await _wait_for_workers(redis, settings, ends, say)
        rebuilt_keys = [k.decode().removeprefix(f"{prefix}{keys.STATE}") async for k in _keys(redis, prefix)]
        pending: set[str] | None = None  # None: every rating; then the moved ones
        while pending is None or pending:
            report.rounds += 1
            if report.rounds > ROUNDS:
                report.moving = sorted(pending or ())
                break
            snapshot = await _snapshot(redis, settings.redis_key_prefix)
            forward = await _bring_forward(redis, settings, prefix, ends, rebuilt_keys, report)
            rows, expected = [], {}
            for key in sorted(forward if pending is None else pending & set(forward)):
                state = forward[key]
                live = snapshot.get(key, UNSEEN)
                if live.seq and same_rating(live, state):
                    continue
                if state.rating is None:
                    if live.seq and key not in report.unrated:
                        report.unrated.append(key)
                    continue
                player, _, category = key.partition("/")
                rows.append(SeedRow(player, Category(category), state.rating, state.rated_games))
                expected[key] = live.seq
            if report.rounds == 1:
                report.differing = len(rows) + len(report.unrated)
            say(f"switch-over: round {report.rounds}: {len(rows)} ratings differ; importing them")
            pending = await _import(settings, rows, expected, report) if rows else set()
    finally:
        await close_quietly(redis.aclose())
    return report


async def _rebuild_ends(redis: "Redis", prefix: str, topic: str) -> dict[int, int]:
    meta = await _redis(redis.hgetall, f"{prefix}{REBUILD_META}")
    if not meta:
        raise NotReady(f"no rebuild under {prefix!r}: run `rating-worker rebuild --prefix {prefix}` first")
    if meta.get(b"topic", b"").decode() != topic:
        raise NotReady(f"the rebuild under {prefix!r} read another input topic than RATING_TOPIC_GAMES={topic}")
    return {int(k.decode()[2:]): int(v) for k, v in meta.items() if k.startswith(b"p:")}


async def _wait_for_workers(
    redis: "Redis", settings: WorkerSettings, ends: dict[int, int], say: Callable[[str], None]
) -> None:
    """Step 1: every game the rebuild read is applied live (the watermarks passed its offsets)."""
    deadline = time.monotonic() + settings.command_retry_seconds
    key = keys.watermark_key(settings.redis_key_prefix, settings.topic_games)
    while True:
        marks = {int(p): int(o) for p, o in (await _redis(redis.hgetall, key)).items()}
        behind = {p: (marks.get(p, 0), end) for p, end in ends.items() if marks.get(p, 0) < end}
        if not behind:
            return
        if time.monotonic() > deadline:
            listed = ", ".join(f"partition {p} at {w} of {e}" for p, (w, e) in sorted(behind.items()))
            raise NotReady(
                f"the workers have not yet applied every game the rebuild read ({listed}): run them, then switch over"
            )
        say(f"switch-over: waiting for the workers to apply what the rebuild read ({len(behind)} partitions behind)")
        await asyncio.sleep(WATERMARK_POLL_SECONDS)


async def _keys(redis: "Redis", prefix: str) -> AsyncIterator[bytes]:
    async for chunk in _scan_keys(redis, f"{prefix}{keys.STATE}*"):
        for key in chunk:
            yield key


async def _snapshot(redis: "Redis", live: str) -> dict[str, RatingState]:
    """Step 2: every live state, read before the input's end is."""
    ratings = sorted([k.decode().removeprefix(f"{live}{keys.STATE}") async for k in _keys(redis, live)])
    return await _states(redis, live, ratings)


async def _bring_forward(
    redis: "Redis",
    settings: WorkerSettings,
    prefix: str,
    ends: dict[int, int],
    rebuilt_keys: Sequence[str],
    report: SwitchReport,
) -> dict[str, RatingState]:
    """Steps 3 and 4: the rebuilt states with the games applied live since the rebuild."""
    history = await read_history(settings, ends)
    ids = sorted({g.game_id for g in history.games})
    applied: set[str] = set()
    rebuilt_records: dict[str, bytes] = {}
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start : start + CHUNK]
        live = await _redis(redis.mget, [keys.game_key(settings.redis_key_prefix, g) for g in chunk])
        applied.update(g for g, v in zip(chunk, live, strict=True) if v is not None)
        ours = await _redis(redis.mget, [keys.game_key(prefix, g) for g in chunk])
        rebuilt_records.update({g: bytes.fromhex(v.decode()) for g, v in zip(chunk, ours, strict=True) if v})
    games = [g for g in history.games if g.game_id in applied]
    engine = Engine(ArenaRules(), settings.training_rating)
    touched = {k for g in games for k in engine.ratings_read(g) or ()}
    store = MemoryStore(engine)
    store.states = await _states(redis, prefix, sorted(set(rebuilt_keys) | touched))
    for game_id, digest in rebuilt_records.items():
        store.remember(game_id, digest)
    for game in sorted(games, key=history_order):
        store.apply(game)
    report.brought_forward = len(games)
    return store.states


async def _import(
    settings: WorkerSettings, rows: list[SeedRow], expected: dict[str, int], report: SwitchReport
) -> set[str]:
    """Step 5: each row imported over the live seq it was compared with; the ratings that moved."""
    moved: set[str] = set()
    async with pipeline_for(settings) as (pipeline, _):
        for start in range(0, len(rows), CHUNK):
            items = [SeedItem(row, True, expected[row.key]) for row in rows[start : start + CHUNK]]
            planned, _stats = await pipeline.run(items)
            for p in planned:
                assert isinstance(p.item, SeedItem)
                if p.outcome.verdict is SeedVerdict.IMPORTED:
                    report.switched += 1
                elif p.outcome.verdict is SeedVerdict.MOVED:
                    moved.add(p.item.row.key)
    return moved
