"""`rating-worker rebuild`: recompute every rating from history, aside from the live state.

For when a rule was corrected, or Redis lost writes whose events were never published.

`rebuild` reads the input topic from its beginning up to its current end, remembering the
offset it read up to in each partition; keeps of each game the copy the workers applied
(`worker.operate.applied_copy`: the copy the output's events name, else the one the live
idempotency record's facts match, else the lowest offset in its partition, then the earliest
record timestamp, then the lowest partition); merges the kept games in `(finished_at, game_id)`
order (finished_at as an instant, `worker.rules.instants`); applies the seed file first and
computes every rating with the engine in memory, exactly as `rate` does. A per-period system
(fide) closes in it every period up to the live deployment's latest closed one, or up to
`--closed-through` (a new deployment's bootstrap from history), each right after its own games:
so a game that was late in the service is rated in its own month here. Its calendar is kept
with the rebuild (`{prefix}periods`), for `switch-over` to set the live one from. It writes under a
fresh key prefix, never touching the live state: the states, the idempotency records of the
games whose input record arrived within the last retention, and the offsets it read up to
(`{prefix}rebuild`). `--force` first clears the prefix.

**Memory does not grow with the history.** The partitions hold games in arrival order, so the
history is sorted outside memory (`worker.operate.external_sort`, runs spilled to a temporary
directory, `TMPDIR`, under `--memory-mb`), twice, in four passes:
1. the input topic is read into the sort by `(game_id, partition, offset)`;
2. that sort is merged: a game's copies come together, in each partition's order. A game with
   one copy, or copies that rate the same (equal but for `event_id`), goes to the sort by
   `(finished_at, game_id)` as its first copy; a game whose copies differ (*contested*: rare,
   a conflicting duplicate or another `finished_at`) goes there with every copy, and its
   copies' places, timestamps, event ids and digests stay in memory (about 200 bytes a copy);
3. only if there are contested games: the output topic is read to its end, keeping the
   `source_event_id`s of the contested games' events, and their live idempotency records are
   read; each contested game's kept copy is decided, and only its place (partition, offset)
   stays in memory;
4. the sort by time is merged and the games applied in chunks, a contested game's other
   copies skipped.
What stays in memory is the ratings' states and what passes 2 and 3 keep of the contested games.

The switch-over that publishes what differs is `worker.operate.switch_over`.
"""

import gc
import logging
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Any, cast

from redis.asyncio import Redis

from schemas.game_finished import GameFinished
from worker.engine.decoder import BadInput, decode_as, decode_input
from worker.engine.engine import Engine, SeedRow
from worker.engine.spec import SystemSpec
from worker.operate.applied_copy import Copy, Decided, Placed, decide, digest_of, rated_facts
from worker.operate.close_period import fields, marked_periods
from worker.operate.external_sort import ExternalSort
from worker.operate.redis_ops import CHUNK, connected, matching_keys, read_states, unlink_all, with_retry, write_states
from worker.operate.topic_scan import scan
from worker.replay.closes import close_period
from worker.replay.memory_store import MemoryBackend, MemoryStore
from worker.rules.hundredths import Points
from worker.rules.instants import instant
from worker.rules.interface import RatingSystem, S
from worker.rules.period_interface import Calendar
from worker.service.owner import own_prefix
from worker.settings import KEY_PATTERN_CHARS, WorkerSettings
from worker.store import keys, records
from worker.store.schedule import SeedItem, apply_in_order
from worker.systems import registry

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
    spilled_runs: int = 0  # sorted runs written to the temporary directory (0: the history fit the budget)
    spilled_bytes: int = 0  # their size: at most that much disk, at the peak
    closed_through: str | None = None  # a per-period system's: the latest period the rebuild closed
    # A calendar kept by its marks (tornelo): the sort key (instant, game_id) of each period's last
    # game, over every valid copy (a contested game's copies may name other periods: the latest).
    last_games: dict[str, tuple[int, str, str]] = field(default_factory=dict)


@dataclass
class History:
    games: list[Placed] = field(default_factory=list)
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
    rules = settings.rules()
    async for batch in scan(settings, settings.topic_games, start):
        for record in batch:
            history.records += 1
            history.ends[record.partition] = max(history.ends.get(record.partition, 0), record.offset + 1)
            try:  # with each record's timestamp, as `run` read it: it keeps exactly the games `run` kept
                game = decode_input(
                    rules,
                    record.value or b"",
                    settings.max_message_bytes,
                    record.timestamp,
                    settings.future_allowance_seconds,
                )
            except BadInput:
                history.bad += 1
                continue
            history.games.append(Placed(game, record.partition, record.offset, record.timestamp))
            if record.timestamp >= since_ms:
                history.recent.add(game.game_id)
    return history


def history_order(game: GameFinished) -> tuple[tuple[int, str], str]:
    """When a game ended, as an instant (offsets applied), then its id for equal instants."""
    return instant(game.finished_at), game.game_id


async def apply_all(engine: Engine[S], backend: MemoryBackend[S], games: Sequence[GameFinished]) -> None:
    store = MemoryStore(backend)
    lookup = None if backend.pending is None else backend.state  # a per-period system's closes read others
    for start in range(0, len(games), CHUNK):
        await apply_in_order(engine, store, games[start : start + CHUNK], lookup)


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
    for spec in registry.BUILT_IN:  # `--force` would clear another deployment's store
        theirs = spec.names.redis_key_prefix
        if prefix.startswith(theirs) or theirs.startswith(prefix):
            raise ValueError(
                f"the rebuild prefix {prefix!r} overlaps the key prefix {theirs!r} of the rating system {spec.name}"
            )


async def rebuild(
    settings: WorkerSettings,
    seeds: Sequence[SeedRow],
    prefix: str,
    force: bool,
    say: Callable[[str], None],
    memory_bytes: int,  # what the sorts of the history may hold (`--memory-mb`); the states come on top
    closed_through: str | None = None,  # a per-period system's: close up to it (default: the live calendar's)
) -> RebuildReport:
    check_prefix(prefix, settings.redis_key_prefix)
    report = RebuildReport()
    async with connected(settings) as redis:
        live_prefix = settings.redis_key_prefix
        through = closed_through
        if through is None:
            through = await latest_closed(redis, settings.spec(), live_prefix)
        report.closed_through = through
        marks = settings.spec().calendar_codec
        # A calendar kept by its marks (tornelo): the live deployment's ends, in the order they were marked.
        ended = await marked_periods(redis, live_prefix) if marks is not None and marks.partial else None
        found = await matching_keys(redis, f"{prefix}*")
        # Whose prefix it is, and no other deployment's keys among those found (the owner key of
        # a longer prefix), before anything under it is cleared; not the parameters recorded there
        # (a rebuild with new values clears those of an earlier one, and records its own below).
        await own_prefix(redis, prefix, settings.spec().name, write=False, listed=found, setting="--prefix")
        if found and not force:
            report.refused = True
            say(f"rebuild: prefix {prefix!r} already holds keys (use --force to clear and overwrite them)")
            return report
        if found:
            report.cleared = await unlink_all(redis, found)
            say(f"rebuild: cleared {report.cleared} keys under {prefix!r}")
        await own_prefix(  # nothing left
            redis,
            prefix,
            settings.spec().name,
            write=True,
            listed=[],
            setting="--prefix",
            parameters=settings.parameters(),
        )
        with tempfile.TemporaryDirectory(prefix="rating-rebuild-") as spill:
            # Each of the two sorts holds at most half the budget.
            by_id = ExternalSort(Path(spill) / "by-id", memory_bytes // 2)
            ends = await _read_by_id(settings, by_id, report)
            say(f"rebuild: read {report.records} records ({report.bad} bad), {report.games} games; recomputing")
            by_time = ExternalSort(Path(spill) / "by-time", memory_bytes // 2)
            decided = await _kept_copies(redis, prefix, settings, by_id, by_time)
            if decided.kept:
                say(
                    f"rebuild: {len(decided.kept)} games have copies that differ; kept the one the workers applied, "
                    f"as the output's events name it ({decided.by_output}), as the live idempotency record's facts "
                    f"match it ({decided.by_record}), or the first arrived ({decided.by_arrival})"
                )
            report.spilled_runs = by_id.spilled_runs + by_time.spilled_runs
            report.spilled_bytes = by_id.spilled_bytes + by_time.spilled_bytes
            kept = {game_id: copy.place for game_id, copy in decided.kept.items()}
            del decided
            ends_at = None if ended is None else (ended, report.last_games)
            store = await _recompute_sorted(by_time, seeds, settings, kept, through, ends_at)
        report.ratings = len(store.states)
        codec = settings.spec().codec
        await write_states(redis, prefix, store.states, codec)
        calendar_codec = settings.spec().calendar_codec
        if calendar_codec is not None:
            calendar: dict[Any, Any] = {
                "calendar": calendar_codec.encode(store.calendar),
                "marks": store.calendar_version,
            }
            await with_retry(lambda: redis.hset(keys.periods_key(prefix), mapping=calendar))
            if calendar_codec.partial and store.calendar_version:
                places: dict[Any, Any] = {p: n for n, p in enumerate(cast(Iterable[str], store.calendar))}
                await with_retry(lambda: redis.hset(keys.marked_key(prefix), mapping=places))
        meta: dict[Any, Any] = {"topic": settings.topic_games}  # redis-py types keys invariantly
        meta.update({f"p:{p}": end for p, end in ends.items()})
        await with_retry(lambda: redis.hset(f"{prefix}{REBUILD_META}", mapping=meta))
        live = await read_states(redis, settings.redis_key_prefix, sorted(store.states), codec)
        rules = settings.rules()
        report.differing = sum(1 for k, s in store.states.items() if k not in live or not same(rules, live[k], s))
        closes = f"; periods closed through {through or 'none'}" if calendar_codec is not None else ""
        spilled = f"{report.spilled_runs} runs ({report.spilled_bytes / 1e6:.1f} MB)"
        say(
            f"rebuild: {report.ratings} ratings written under {prefix!r}, {report.differing} differ from the live "
            f"ones{closes}; the history's sorts spilled {spilled}"
        )
        return report


async def calendar_under(redis: "Redis", spec: SystemSpec[Any], prefix: str) -> Calendar:
    """The calendar kept under `prefix` (None for a system without periods)."""
    codec = spec.calendar_codec
    if spec.periods is None or codec is None:
        return None
    if codec.partial:
        ended = await marked_periods(redis, prefix)
        return codec.from_marks(len(ended), {p: n for n, p in enumerate(ended)})
    (encoded,) = await fields(redis, prefix, "calendar")
    return codec.decode((encoded or "").encode())


async def latest_closed(redis: "Redis", spec: SystemSpec[Any], prefix: str) -> str | None:
    """The period the calendar under `prefix` closed last (None: none, or a system without periods)."""
    if spec.periods is None:
        return None
    return spec.periods.latest_closed(await calendar_under(redis, spec, prefix))


async def _read_by_id(settings: WorkerSettings, by_id: ExternalSort, report: RebuildReport) -> dict[int, int]:
    """Pass 1: every valid game of the input topic into `by_id`, as (game_id, partition, offset,
    record timestamp, instant, facts digest if the record arrived within the retention or b"",
    record value); returns the offsets read up to."""
    ends: dict[int, int] = {}
    since_ms = (int(time.time()) - settings.idempotency_retention_seconds) * 1000
    rules = settings.rules()
    codec = settings.spec().calendar_codec
    periods = settings.spec().periods if codec is not None and codec.partial else None
    async for batch in scan(settings, settings.topic_games):
        for record in batch:
            report.records += 1
            ends[record.partition] = max(ends.get(record.partition, 0), record.offset + 1)
            value = record.value or b""
            try:  # with each record's timestamp, as `run` read it: it keeps exactly the games `run` kept
                game = decode_input(
                    rules, value, settings.max_message_bytes, record.timestamp, settings.future_allowance_seconds
                )
            except BadInput:
                report.bad += 1
                continue
            seconds, fraction = instant(game.finished_at)
            if periods is not None:
                for period in periods.periods_of(game):
                    key = (seconds, fraction, game.game_id)
                    if period not in report.last_games or key > report.last_games[period]:
                        report.last_games[period] = key
            recent = digest_of(rules, game) if record.timestamp >= since_ms else b""
            entry = (game.game_id, record.partition, record.offset, record.timestamp, seconds, fraction, recent, value)
            by_id.add(entry, len(value) + len(game.game_id) + len(recent))
            report.games += 1
    return ends


async def _kept_copies(
    redis: "Redis", prefix: str, settings: WorkerSettings, by_id: ExternalSort, by_time: ExternalSort
) -> Decided:
    """Passes 2 and 3: each game into `by_time` as (instant, game_id, partition, offset, value),
    with every copy if its copies differ (contested), and the idempotency record of each game
    with a copy that arrived within the retention (as the workers' records expire a retention
    after they applied them), with the kept copy's digest: a copy of one of them that the
    switch-over reads is then a duplicate or a conflict, as it is for the workers. Returns the
    kept copy of each contested game."""
    pending: list[tuple[str, bytes]] = []
    retention_ms = settings.idempotency_retention_seconds * 1000
    rules = settings.rules()

    def read(value: bytes) -> GameFinished:  # a value that decoded once as a valid game
        return decode_as(rules.game_model, value, settings.max_message_bytes)

    async def record(game_id: str, digest: bytes) -> None:
        nonlocal pending
        pending.append((game_id, digest))
        if len(pending) == CHUNK:
            await with_retry(records.remember, redis, prefix, pending, retention_ms, False)
            pending = []

    contested: dict[str, list[Copy]] = {}
    recent_contested: set[str] = set()
    for game_id, group in groupby(by_id.merged(), key=itemgetter(0)):
        copies = list(group)  # a game's copies, by (partition, offset): one, or a few
        # Copies of other bytes are decoded (exact copies, the common redelivery, need not be).
        games = [read(c[7]) for c in copies] if len({c[7] for c in copies}) > 1 else []
        if len({rated_facts(g) for g in games}) > 1:
            contested[game_id] = [
                Copy(c[1], c[2], c[3], g.event_id, digest_of(rules, g)) for c, g in zip(copies, games, strict=True)
            ]
            for _, partition, offset, _, seconds, fraction, _, value in copies:
                by_time.add((seconds, fraction, game_id, partition, offset, value), len(value) + len(game_id))
            if any(c[6] for c in copies):
                recent_contested.add(game_id)
            continue
        # One copy, or copies that rate the same: the first will do.
        _, partition, offset, _, seconds, fraction, recent, value = copies[0]
        by_time.add((seconds, fraction, game_id, partition, offset, value), len(value) + len(game_id))
        if any(c[6] for c in copies):  # a copy arrived within the retention: the kept one's record
            await record(game_id, recent or digest_of(rules, read(value)))
    decided = await decide(redis, settings, contested)
    for game_id in sorted(recent_contested):
        await record(game_id, decided.kept[game_id].digest)
    if pending:
        await with_retry(records.remember, redis, prefix, pending, retention_ms, False)
    return decided


async def _recompute_sorted(
    by_time: ExternalSort,
    seeds: Sequence[SeedRow],
    settings: WorkerSettings,
    kept: dict[str, tuple[int, int]],
    through: str | None = None,
    ends_at: tuple[list[str], dict[str, tuple[int, str, str]]] | None = None,
) -> MemoryBackend[Any]:
    """Pass 4: the seeds, then the games in history order, in chunks (of a contested game, only
    its kept copy, at `kept[game_id]`); no game records are kept (each game comes once). A
    per-period system's periods up to `through` are closed, each once the games after its own
    begin, and the last at the end; or, a calendar kept by its marks (`ends_at`: the periods
    ended, in the order of their marks, and each one's last game), each right after its last
    game, in that order (after the one before it: one with no game right after that one)."""
    # No event is published: the engine encodes none.
    rules = settings.rules()
    periods = settings.spec().periods
    engine = Engine(settings.spec(), Points(settings.training_rating), encode_events=False)
    backend = MemoryBackend(
        rules.unseen,
        keep_outboxes=False,
        calendar=None if periods is None else periods.opening,
        pending=None if periods is None else periods.pending,
    )
    store = MemoryStore(backend)
    lookup = None if periods is None else backend.state
    current: str | None = None  # the period of the games in `chunk`
    chunk: list[GameFinished] = []

    async def apply_chunk() -> None:
        nonlocal chunk
        await apply_in_order(engine, store, chunk, lookup)
        backend.games.clear()  # each game comes once: its record is not needed again
        chunk = []

    def ignore(_: object) -> None:
        pass

    # What is alive now (the clients, the merge's buffers) stays: the collector need not walk it
    # again at each of the many collections the games' short-lived objects trigger (13 % faster).
    gc.collect()
    gc.freeze()
    ended, last_games = ([], {}) if ends_at is None else ends_at
    next_end = 0  # ended[next_end] is the next to close

    async def close_ended(now: tuple[int, str, str] | None) -> None:
        """Close, in order, the ended periods whose last game is at or before `now` (None: all)."""
        nonlocal next_end
        while next_end < len(ended):
            last = last_games.get(ended[next_end])
            if now is not None and last is not None and last > now:
                return
            await apply_chunk()
            await close_period(engine, store, ended[next_end], ignore)
            next_end += 1

    await apply_in_order(engine, store, [SeedItem(row, force=False) for row in seeds])
    await close_ended((-(2**63), "", ""))  # those with no game at all, at the head of the order
    for seconds, fraction, game_id, partition, offset, value in by_time.merged():
        if kept and kept.get(game_id, (partition, offset)) != (partition, offset):
            continue  # a contested game's copy the workers did not apply
        game = decode_as(rules.game_model, value, settings.max_message_bytes)
        if ends_at is not None:
            chunk.append(game)
            await close_ended((seconds, fraction, game_id))
            if len(chunk) >= CHUNK:
                await apply_chunk()
            continue
        if periods is not None and through is not None:
            period = periods.recorded_in(game, periods.opening)  # its own period, as if none were closed
            if period != current:
                if current is not None and current in periods.to_mark(backend.calendar, through, (current,)):
                    await apply_chunk()
                    await close_period(engine, store, current, ignore)
                current = period
        chunk.append(game)
        if len(chunk) == CHUNK:
            await apply_chunk()
    await apply_chunk()
    if ends_at is not None:
        await close_ended(None)
    elif periods is not None and through is not None:
        await close_period(engine, store, through, ignore)
    return backend


def same(rules: RatingSystem[S], live: S, rebuilt: S) -> bool:
    """Equal but for seq (the rebuilt history may number its changes differently)."""
    return rules.numbered(live, 0) == rules.numbered(rebuilt, 0)
