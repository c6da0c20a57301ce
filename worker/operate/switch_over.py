"""`rating-worker switch-over`: publish the rebuilt ratings that differ, with the workers running.

`switch-over` brings the rebuild up to date and publishes each rating that differs, with the
workers running:
1. it waits (up to RATING_COMMAND_RETRY_SECONDS) until the workers' watermarks have reached
   the rebuild's offsets: every game the rebuild read is then applied live too;
2. it reads every live state and its seq (a snapshot);
3. it reads the input from the rebuild's offsets to its current end, and keeps the games the
   workers have applied (their idempotency record exists), of each the copy they applied
   (`worker.operate.applied_copy`, as the rebuild does); every game applied before the
   snapshot is among them, since the end is read after the snapshot;
4. it applies them to the rebuilt states, in memory, in the rebuild's order, with the
   rebuild's records (a redelivery of an earlier game stays a duplicate);
5. it compares: each rating whose brought-forward state differs from the snapshot's is
   imported with `seq` = live `seq` + 1, through the worker's own path, **only if its live seq
   is still the snapshot's** (a check-and-set); a rating a worker changed meanwhile is left
   alone (`moved`);
6. moved ratings are compared again in a new round (from 2), up to ROUNDS times; those still
   moving are listed, for a re-run.
A per-period system (fide) also sets the live calendar: the rebuild closed every period up to
the live one's latest closed period (or `--closed-through`); where the live calendar is behind
it (or has closed nothing), each period up to the rebuild's is first marked and closed in turn,
with the live states, as `close-period` does, before anything is compared: a game applied from
then on is late live as in the rebuild's view (which brings the games after the rebuild
forward with its calendar), and the imports then give every rating the rebuilt state. Where the
live calendar is ahead (a close ran after the rebuild, or during the switch-over), it is
refused: the rebuild is out of date. A rebuilt state is imported whole (its pending games and
pool too), over games not closed yet as well: those were counted with the rebuilt ratings; but
not one holding a period the live calendar closed since (listed, status 1).

**Bootstrap from history.** Onto a live prefix with no state, where no worker has applied a
game (no watermark) and the workers' group has committed no offset past the rebuild's (those
games would be in neither), the switch-over waits for no worker (there is none yet) and then
sets the workers' start point: the rebuild's idempotency records copied under the live prefix
(a late copy of a game of the history is a duplicate there too), the group's committed offsets
(by a consumer that never joins the group: a group with members refuses the commit) and the
watermarks raised to the rebuild's offsets. The workers then start each partition there, and
take any record below as done.

**Parameters.** For a system whose live prefix records its parameters (`SystemSpec.parameters`,
`worker.service.owner`), the rebuild's prefix must hold the command's values (the rebuild was
made with them), the live prefix may hold others: once every check above has passed, before its
first write there, the switch-over records the command's values on the live prefix. That is how
they change: the workers, stopped meanwhile, start again with the new values only.

Games a worker applies after a rating's import are applied on top of it, as usual. So with no
rule changed nothing is imported, and a corrected rule reaches every rating, including the
games applied after the rebuild. The arena's contract (v1) has its `imported` event always
carry a rating: a rating the rebuild leaves *unrated* while the live one differs is listed, not
switched, and so is a live rating the rebuild has no state for. Contract v2 imports both, with
`rating_after` null (`RatingSystem.row_of`): a live rating the rebuild never gave a state is
unrated by the corrected rules (so `rebuild` needs the seed file the deployment was seeded with).
"""

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from redis.asyncio import Redis
from redis.asyncio.client import Pipeline as RedisPipeline

from worker.engine.engine import Engine, SeedOutcome, SeedRow, SeedVerdict
from worker.operate.applied_copy import applied_games
from worker.operate.close_period import CloseReport, mark_through, refuse_during_close
from worker.operate.rebuild import (
    REBUILD_META,
    apply_all,
    calendar_under,
    check_prefix,
    history_order,
    latest_closed,
    read_history,
    same,
)
from worker.operate.redis_ops import (
    CHUNK,
    connected,
    matching_keys,
    pipelined,
    rating_keys,
    read_states,
    text,
    with_retry,
)
from worker.operate.topic_scan import group_reader
from worker.replay.memory_store import MemoryBackend
from worker.rules.hundredths import Points
from worker.service.owner import own_prefix, record_parameters
from worker.service.wiring import pipeline_for
from worker.settings import WorkerSettings
from worker.store import keys, records
from worker.store.schedule import SeedItem
from worker.stream.retry import KAFKA_READ, retrying

ROUNDS = 5  # rounds for ratings that moved while they were compared
WATERMARK_POLL_SECONDS = 0.5


class NotReady(Exception):
    """The switch-over cannot run yet (no rebuild, or workers behind it): one line, status 1."""


@dataclass
class SwitchReport:
    differing: int = 0
    switched: int = 0
    brought_forward: int = 0  # games applied after the rebuild, applied to the rebuilt states
    rounds: int = 0
    unrated: list[str] = field(default_factory=list)
    moving: list[str] = field(default_factory=list)  # changed by the workers in every round
    live_only: list[str] = field(default_factory=list)  # live ratings the rebuild has no state for
    marked: list[str] = field(default_factory=list)  # a per-period system's periods marked closed, in order
    refused: list[str] = field(default_factory=list)  # rebuilt states holding a period closed since the rebuild


async def switch_over(settings: WorkerSettings, prefix: str, say: Callable[[str], None]) -> SwitchReport:
    """The steps of the module's docstring."""
    check_prefix(prefix, settings.redis_key_prefix)
    report = SwitchReport()
    async with connected(settings) as redis:
        # Both prefixes this deployment's, before anything is read or imported; the rebuild made
        # with this command's parameters (the live prefix's may be the old ones: recorded below).
        parameters = settings.parameters()
        await own_prefix(redis, prefix, settings.spec().name, write=False, setting="--prefix", parameters=parameters)
        await own_prefix(redis, settings.redis_key_prefix, settings.spec().name, write=True)
        await refuse_during_close(redis, settings, "switch-over")
        ends = await _rebuild_ends(redis, prefix, settings.topic_games)
        live_through, rebuilt_through = await _calendars(redis, settings, prefix)
        bootstrap = not await rating_keys(redis, settings.redis_key_prefix)
        if bootstrap:
            committed = await _check_bootstrap(redis, settings, ends)
            say("switch-over: the live prefix has no state and no worker has applied a game: a bootstrap")
        else:
            await _wait_for_workers(redis, settings, ends, say)
        # Its checks passed; its writes to the live prefix start here: the rebuild's parameters (this
        # command's) are the live prefix's from now on, how a system's parameters change
        # (`worker.service.owner`): workers started with the old values are refused from here on.
        await record_parameters(redis, settings.redis_key_prefix, parameters)
        if rebuilt_through is not None and rebuilt_through != live_through:
            # The live months up to the rebuild's closed first (as close-period would, with the live
            # states), so that a game applied from now on is late there as in the rebuild's view.
            async with pipeline_for(settings) as (pipeline, _, store):
                closes = CloseReport()
                await mark_through(pipeline, store, rebuilt_through, closes, say)
            report.marked = closes.marked
            say(f"switch-over: the live calendar set to the rebuild's: {rebuilt_through} closed")
        rebuilt_keys = await rating_keys(redis, prefix)
        rules = settings.rules()
        moved: set[str] = set()
        while report.rounds == 0 or moved:
            report.rounds += 1
            if report.rounds > ROUNDS:
                report.moving = sorted(moved)
                break
            # Every rating is compared in every round: a game applied since the last round may
            # have changed a rating that matched then (its opponent's import had moved).
            snapshot = await _snapshot(redis, settings)
            forward = await _bring_forward(redis, settings, prefix, ends, rebuilt_keys, report)
            rows, expected, unrated, live_only = [], {}, [], []
            for key in sorted(set(forward) | set(snapshot)):
                player, _, category = key.partition("/")
                if key not in forward and rules.row_of(player, category, rules.unseen) is None:
                    live_only.append(key)  # live, no state in the rebuild, and v1 cannot unrate it
                    continue
                # A live rating the rebuild has no state for: the rebuild's is the never-seen one.
                state = forward.get(key, rules.unseen)
                live = snapshot.get(key, rules.unseen)
                if live.seq and same(rules, live, state):
                    continue
                row = rules.row_of(player, category, state)
                if row is None:  # not importable by the system's contract (v1: an unrated state)
                    if live.seq:
                        unrated.append(key)
                    continue
                if not live.seq and row.rating is None and same(rules, rules.unseen, state):
                    continue  # never seen, in the rebuild as live: nothing to announce
                rows.append(row)
                expected[key] = live.seq
            report.live_only = live_only
            report.unrated = unrated
            if report.rounds == 1:
                report.differing = len(rows) + len(unrated)
            say(f"switch-over: round {report.rounds}: {len(rows)} ratings differ; importing them")
            moved = await _import(settings, rows, expected, report) if rows else set()
        if rebuilt_through is not None:
            await _calendars(redis, settings, prefix)  # a close ran meanwhile: the rebuild is out of date
        if bootstrap:
            copied = await _copy_records(redis, prefix, settings.redis_key_prefix)
            await _start_point(redis, settings, ends, committed)
            say(
                f"switch-over: the workers start from the rebuild's offsets ({_offsets(ends)}); "
                f"{copied} keys of the rebuild's idempotency records copied"
            )
    return report


async def _check_bootstrap(redis: "Redis", settings: WorkerSettings, ends: dict[int, int]) -> dict[int, int | None]:
    """A bootstrap only before any worker has applied a game (no watermark) and with the group's
    committed offsets not past the rebuild's (the games between would be in neither)."""
    marks = await with_retry(redis.hgetall, keys.watermark_key(settings.redis_key_prefix, settings.topic_games))
    if marks:
        raise NotReady(
            "the live prefix has no state but workers have applied games to it: stop them, delete its keys, "
            "then switch over (a bootstrap starts the workers from the rebuild's offsets)"
        )
    committed = await _committed(settings, ends)
    past = {p: (c, ends[p]) for p, c in committed.items() if c is not None and c > ends[p]}
    if past:
        listed = ", ".join(f"partition {p} at {c}, the rebuild read up to {e}" for p, (c, e) in sorted(past.items()))
        raise NotReady(
            f"the workers' group {settings.kafka_group_id} has committed offsets past the rebuild's ({listed}): "
            "their games would be in neither; run `rating-worker rebuild --force` again, then switch over"
        )
    return committed  # the group's offsets, for `_start_point`


async def _calendars(redis: "Redis", settings: WorkerSettings, prefix: str) -> tuple[str | None, str | None]:
    """A per-period system's latest closed period, live and rebuilt; a live one later than the
    rebuild's (a close after the rebuild) refuses the switch-over."""
    periods = settings.spec().periods
    if periods is None:
        return None, None
    live = await latest_closed(redis, settings.spec(), settings.redis_key_prefix)
    rebuilt = await latest_closed(redis, settings.spec(), prefix)
    if live is not None and (rebuilt is None or live not in periods.to_mark(periods.opening, rebuilt, (live,))):
        raise NotReady(
            f"the live deployment closed {live} after the rebuild (which closed through {rebuilt or 'none'}): "
            "run `rating-worker rebuild --force` again, then switch over"
        )
    return live, rebuilt


async def _start_point(
    redis: "Redis", settings: WorkerSettings, ends: dict[int, int], committed: dict[int, int | None]
) -> None:
    """The workers' start at the rebuild's offsets: their group's committed offsets first, then
    their watermarks (a record below is taken as done, `worker.stream.consumer`), each raised to
    them where lower. The group is not joined: a commit of partitions assigned by hand, which a
    group with members refuses."""
    commits = {p: end for p, end in ends.items() if (committed[p] or 0) < end}
    if commits:
        await _in_group(settings, ends, lambda group, tps: group.commit({tps[p]: o for p, o in commits.items()}))
    key = keys.watermark_key(settings.redis_key_prefix, settings.topic_games)
    raised: dict[Any, Any] = dict(ends)  # no watermark yet (`_check_bootstrap`)
    if raised:
        await with_retry(lambda: redis.hset(key, mapping=raised))


async def _committed(settings: WorkerSettings, ends: dict[int, int]) -> dict[int, int | None]:
    """The workers' group's committed offset of each partition (None: none), read without joining."""
    found: dict[int, int | None] = {}

    async def read(group: AIOKafkaConsumer, tps: dict[int, TopicPartition]) -> None:
        for p, tp in tps.items():
            found[p] = await retrying(KAFKA_READ, group.committed, tp)

    await _in_group(settings, ends, read)
    return found


async def _in_group(
    settings: WorkerSettings,
    ends: dict[int, int],
    act: Callable[[AIOKafkaConsumer, dict[int, TopicPartition]], Awaitable[object]],
) -> None:
    """`act` with a consumer of the workers' group that never joins it, the partitions of `ends` assigned."""
    async with group_reader(settings) as group:
        tps = {p: TopicPartition(settings.topic_games, p) for p in ends}
        group.assign(list(tps.values()))
        await act(group, tps)


async def _copy_records(redis: "Redis", source: str, target: str) -> int:
    """The rebuild's idempotency records (of the games whose input record arrived within the
    retention) copied under the live prefix, with their layout, so that a late copy of a game of
    the history is a duplicate there too: each bucket's fields, and each key of the earlier layout
    with its expiry, CHUNK keys a round trip each way. Returns the keys copied."""
    layout = await with_retry(redis.hmget, keys.store_key(source), ["records", "record_bits"])
    for name, value in zip(("records", "record_bits"), layout, strict=True):
        if value is not None:
            await with_retry(redis.hsetnx, keys.store_key(target), name, value)

    def renamed(key: bytes) -> str:
        return target + text(key)[len(source) :]

    def read_buckets(chunk: list[bytes], pipe: RedisPipeline) -> None:
        for key in chunk:
            pipe.hgetall(key)

    def write_buckets(found: list[tuple[str, dict[Any, Any]]], pipe: RedisPipeline) -> None:
        for key, fields in found:
            pipe.hset(key, mapping=fields)

    def read_legacy(chunk: list[bytes], pipe: RedisPipeline) -> None:
        for key in chunk:
            pipe.get(key)
            pipe.pttl(key)

    def write_legacy(found: list[tuple[str, bytes, int]], pipe: RedisPipeline) -> None:
        for key, value, ttl in found:
            pipe.set(key, value, px=ttl if ttl > 0 else None)

    copied = 0
    buckets = await matching_keys(redis, f"{source}{keys.RECORDS}*")
    for start in range(0, len(buckets), CHUNK):
        chunk = buckets[start : start + CHUNK]
        fields = await pipelined(redis, partial(read_buckets, chunk))
        full = [(renamed(k), f) for k, f in zip(chunk, fields, strict=True) if f]
        await pipelined(redis, partial(write_buckets, full))
        copied += len(full)
    legacy = await matching_keys(redis, f"{source}{keys.GAME}*")
    for start in range(0, len(legacy), CHUNK):
        chunk = legacy[start : start + CHUNK]
        replies = await pipelined(redis, partial(read_legacy, chunk))
        kept = [(renamed(k), v, t) for k, v, t in zip(chunk, replies[::2], replies[1::2], strict=True) if v]
        await pipelined(redis, partial(write_legacy, kept))
        copied += len(kept)
    return copied


def _offsets(ends: dict[int, int]) -> str:
    return ", ".join(f"partition {p} at {o}" for p, o in sorted(ends.items())) or "no partition"


async def _rebuild_ends(redis: "Redis", prefix: str, topic: str) -> dict[int, int]:
    meta: dict[Any, Any] = await with_retry(redis.hgetall, f"{prefix}{REBUILD_META}")
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
        marks = {int(p): int(o) for p, o in (await with_retry(redis.hgetall, key)).items()}
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


async def _snapshot(redis: "Redis", settings: WorkerSettings) -> dict[str, Any]:
    """Step 2: every live state, read before the input's end is."""
    live = settings.redis_key_prefix
    return await read_states(redis, live, await rating_keys(redis, live), settings.spec().codec)


async def _bring_forward(
    redis: "Redis",
    settings: WorkerSettings,
    prefix: str,
    ends: dict[int, int],
    rebuilt_keys: Sequence[str],
    report: SwitchReport,
) -> dict[str, Any]:
    """Steps 3 and 4: the rebuilt states with the games applied live since the rebuild."""
    history = await read_history(settings, ends)
    ids = sorted({p.game.game_id for p in history.games})
    applied: dict[str, bytes] = {}  # game id -> its live record's digest
    rebuilt_records: dict[str, bytes] = {}
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start : start + CHUNK]
        applied.update(await with_retry(records.lookup, redis, settings.redis_key_prefix, chunk))
        rebuilt_records.update(await with_retry(records.lookup, redis, prefix, chunk))
    # Of a game's copies, the one the workers applied (`worker.operate.applied_copy`).
    games = await applied_games(redis, settings, [p for p in history.games if p.game.game_id in applied], applied)
    rules = settings.rules()
    engine = Engine(settings.spec(), Points(settings.training_rating))
    touched = {k for g in games for k in engine.ratings_read(g) or ()}
    periods = settings.spec().periods
    backend = MemoryBackend(  # a per-period system's games recorded with the rebuild's calendar
        rules.unseen,
        keep_outboxes=False,
        calendar=await calendar_under(redis, settings.spec(), prefix),
        pending=None if periods is None else periods.pending,
    )
    codec = settings.spec().codec
    backend.states = await read_states(redis, prefix, sorted(set(rebuilt_keys) | touched), codec)
    for game_id, digest in rebuilt_records.items():
        backend.remember(game_id, digest)
    await apply_all(engine, backend, sorted(games, key=history_order))
    report.brought_forward = len(games)
    return backend.states


async def _import(
    settings: WorkerSettings, rows: list[SeedRow], expected: dict[str, int], report: SwitchReport
) -> set[str]:
    """Step 5: each row imported over the live seq it was compared with; the ratings that moved."""
    moved: set[str] = set()
    async with pipeline_for(settings) as (pipeline, _, _):
        for start in range(0, len(rows), CHUNK):
            items = [SeedItem(row, True, expected[row.key], whole=True) for row in rows[start : start + CHUNK]]
            planned, _stats = await pipeline.run(items)
            for p in planned:
                assert isinstance(p.item, SeedItem) and isinstance(p.outcome, SeedOutcome)
                if p.outcome.verdict is SeedVerdict.IMPORTED:
                    report.switched += 1
                elif p.outcome.verdict is SeedVerdict.MOVED:
                    moved.add(p.item.row.key)
                elif p.outcome.verdict is SeedVerdict.REFUSED:  # holds a period closed since the rebuild
                    report.refused.append(p.item.row.key)
    return moved
