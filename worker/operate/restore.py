"""`rating-worker restore`: rebuild the Redis state from the output topic, when Redis lost data.

Run it with the workers stopped. Per rating, the event with the highest `seq` carries the
whole state (the topic's state, T); it is compared with what Redis holds (R, and R's outbox
of events written but not yet acknowledged by Kafka):

1. outbox events whose seq the topic already has (seq <= T's) are removed: they were published;
2. R equal to T: left alone;
3. R missing, or behind T (a lower seq): Redis lost those writes; T is written;
4. R ahead of T by exactly the events left in its outbox (seqs T+1..R, the last one carrying
   R): a crash between the Redis write and the publication; left alone **even with
   `force`** (the next worker publishes the outbox): writing T over it would compute the next
   game without the one already recorded and give two different events one seq;
5. anything else (the same seq with another state, ahead with another outbox) is refused
   with its reason, unless `force`, which writes T and empties the outbox.

A tombstone (a null value, from `rating-worker erase`) forgets its key's events before it. After
it, only a chain that starts again at seq 1 is taken: a seq 1, then copies (seq <= the chain's
latest) and each next seq. Any other event of that key (a late copy of an event of the erased
rating: seq 3 with no seq 1 since the tombstone, or seq 3 after the new seq 1) is set aside,
counted with its reason and its key in the report: restoring it would bring the erased player
back. A key without a tombstone keeps its highest seq whatever the order, as before. Compaction
drops a record only once a later record of its key exists (a tombstone with everything before
it, a last tombstone on its own after `delete.retention.ms`), so it leaves of each key a suffix
of its records: a suffix without a tombstone is read as a key that never had one, and after a
tombstone that compaction kept, everything that followed it is still there, its chain from seq 1
complete. The limit: seq alone cannot tell a copy of the erased rating's events that happens to
be seq 1, or to continue the new chain, from the new chain's own event; the events carry only
the rating before the change, not the whole state before (every unrated state has none), so no
exact check of their predecessor exists. Such a copy is taken; it can only have outlived the
publication lease, which the contract allows.

Then every game with an event on the topic gets an idempotency record without facts
(`RESTORED`: a redelivery is a duplicate whatever its facts; existing records are kept), the
publication leases are cleared, and, when nothing was refused, the store is trusted again:
its epoch is raised and the untrusted mark removed (see `worker.store.redis_store`). A game rated between
two players of whom only one has its event on the topic, recently enough that compaction
cannot have removed the other's, is listed: the other player's change was lost with Redis,
and only `rebuild` and `switch-over` can give it back.
"""

import json
import logging
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from aiokafka import TopicPartition
from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from schemas.tournament_finished import TournamentFinished
from worker.engine.engine import RESTORED
from worker.engine.spec import Contract, StateCodec
from worker.operate.close_period import close_group, refuse_during_close, up_to
from worker.operate.redis_ops import (
    CHUNK,
    connected,
    matching_keys,
    pipelined,
    rating_keys,
    read_states,
    unlink_all,
    with_retry,
)
from worker.operate.topic_scan import group_reader, scan
from worker.operate.topics import COMPACTION_LAG_MS
from worker.rules.interface import Kind, S
from worker.rules.period_interface import PeriodSystem
from worker.service.owner import own_prefix
from worker.settings import WorkerSettings
from worker.store import keys, records
from worker.stream.retry import KAFKA_READ, retrying
from worker.stream.tournament_ends import decode_end

log = logging.getLogger(__name__)
T = TypeVar("T")
PROGRESS_SECONDS = 2.0


# Why an event after its key's tombstone is set aside (each follows "N events ...").
BEFORE_SEQ_1 = "after their key's tombstone, before any seq 1"
OFF_CHAIN = "after their key's tombstone, off the chain restarted at seq 1"
KEYS_SHOWN = 10  # ratings named per reason: enough to act on, a line that stays readable


@dataclass
class SetAside:
    """The events set aside for one reason: how many, and the first ratings they belong to."""

    events: int = 0
    keys: list[str] = field(default_factory=list)  # at most KEYS_SHOWN, in the topic's order
    more: bool = False  # other ratings had such events too


@dataclass
class RestoreReport:
    records: int = 0
    ratings: int = 0
    games: int = 0
    written: int = 0
    unchanged: int = 0
    ahead: int = 0  # left alone: ahead of the topic by exactly their outbox
    trimmed: int = 0  # outbox events removed because the topic has them
    refused: list[str] = field(default_factory=list)  # "rating: reason"
    forced: int = 0
    games_recorded: int = 0
    partial: list[str] = field(default_factory=list)  # "game: player/category has no event"
    leases_cleared: int = 0
    trusted: bool = False
    set_aside: dict[str, SetAside] = field(default_factory=dict)  # events after a tombstone, by reason


@dataclass
class Changelog(Generic[S]):
    """What the output topic says: each rating's latest state, and each game's events. A game
    whose event is of a kind its system always pairs (`RatingSystem.paired_kinds`: the game
    changed both players) must have both players' events."""

    paired: frozenset[Kind]
    latest: dict[str, S] = field(default_factory=dict)
    games: set[str] = field(default_factory=set)
    # game -> (ratings it must change, ratings whose event was seen, newest event's timestamp ms)
    pairs: dict[str, tuple[tuple[str, ...], set[str], int]] = field(default_factory=dict)
    records: int = 0
    # rating -> the seq its chain since its latest tombstone has reached (0: no seq 1 yet)
    restarted: dict[str, int] = field(default_factory=dict)
    set_aside: dict[str, SetAside] = field(default_factory=dict)  # by reason
    closed: set[str] = field(default_factory=set)  # the periods with a close event (`Published.period`)

    def add(self, key: str, state: S, game_id: str | None, opponent: str | None, kind: Kind, timestamp_ms: int) -> None:
        restarted = self.restarted.get(key)
        if restarted is None:  # no tombstone yet: the highest seq wins, whatever the order
            if key not in self.latest or state.seq > self.latest[key].seq:
                self.latest[key] = state
        elif state.seq == restarted + 1:
            self.latest[key] = state  # the chain from seq 1 starts, or goes on
            self.restarted[key] = state.seq
        elif restarted == 0:
            self._set_aside(BEFORE_SEQ_1, key)
        elif state.seq > restarted:
            self._set_aside(OFF_CHAIN, key)
        # else a copy of an event of the new chain (seq <= its latest): nothing to change
        if game_id is None:
            return
        self.games.add(game_id)
        if kind in self.paired and opponent is not None:
            wanted, seen, newest = self.pairs.get(game_id, (tuple(sorted((key, opponent))), set(), 0))
            seen.add(key)
            self.pairs[game_id] = (wanted, seen, max(newest, timestamp_ms))

    def erase(self, key: str) -> None:
        """A tombstone on `key`: forget what came before it in its partition (a later game of
        that player starts him afresh, at seq 1)."""
        self.latest.pop(key, None)
        self.restarted[key] = 0

    def _set_aside(self, reason: str, key: str) -> None:
        aside = self.set_aside.setdefault(reason, SetAside())
        aside.events += 1
        if key not in aside.keys:
            if len(aside.keys) < KEYS_SHOWN:
                aside.keys.append(key)
            else:
                aside.more = True

    def partial_games(self, now_ms: int) -> list[str]:
        """Games that changed two ratings but have one event on the topic, too recent for
        compaction to have removed the other: the other was lost before publication."""
        out = []
        for game_id, (wanted, seen, newest) in sorted(self.pairs.items()):
            if len(seen) < len(wanted) and now_ms - newest < COMPACTION_LAG_MS:
                missing = ", ".join(r for r in wanted if r not in seen)
                out.append(f"{game_id}: {missing} has no event on the topic")
        return out


async def read_changelog(
    settings: WorkerSettings, contract: Contract[S], paired: frozenset[Kind], progress: Callable[[int], None]
) -> Changelog[S]:
    log_: Changelog[S] = Changelog(paired)
    read = contract.read
    async for batch in scan(settings, settings.topic_ratings):
        for record in batch:
            log_.records += 1
            if record.value is not None:
                event = read(record.value)
                log_.add(event.key, event.state, event.game_id, event.opponent_key, event.kind, record.timestamp)
                if event.period is not None:
                    log_.closed.add(event.period)
            elif record.key is not None:  # a tombstone: the rating was erased, its events before it too
                log_.erase(record.key.decode())
        progress(log_.records)
    return log_


def outbox_seqs(events: list[bytes]) -> list[int]:
    return [int(json.loads(e)["seq"]) for e in events]


def decide(
    topic: S | None, stored: bytes | None, pending: list[bytes], codec: StateCodec[S], contract: Contract[S]
) -> tuple[str, int, str]:
    """What to do with one rating: ("keep" | "write" | "ahead" | "refuse", outbox events the
    topic already has, the reason of a refusal). Pure: the states and outbox are passed in."""
    topic_seq = 0 if topic is None else topic.seq
    seqs = outbox_seqs(pending)
    published = sum(1 for s in seqs if s <= topic_seq)
    rest = seqs[published:]
    if stored is None:
        if rest:
            return "refuse", published, f"no state in Redis but its outbox holds seq {rest[0]}..{rest[-1]}"
        return ("keep" if topic is None else "write"), published, ""
    stored_seq = int(stored.split(b"|", 1)[0])
    if topic is not None and stored == codec.encode(topic):
        if rest:
            return "refuse", published, f"equal to the topic (seq {topic_seq}) but its outbox holds seq {rest[0]}.."
        return "keep", published, ""
    if stored_seq < topic_seq:
        return "write", published, ""  # Redis lost the writes the topic has
    if stored_seq == topic_seq:
        return "refuse", published, f"the same seq {topic_seq} as the topic but another state"
    if rest == list(range(topic_seq + 1, stored_seq + 1)) and codec.encode(contract.read(pending[-1]).state) == stored:
        return "ahead", published, ""
    held = f"seq {rest[0]}..{rest[-1]}" if rest else "nothing"
    return "refuse", published, f"ahead of the topic (seq {stored_seq} > {topic_seq}) but its outbox holds {held}"


async def reconcile(
    redis: "Redis",
    prefix: str,
    changelog: Changelog[S],
    force: bool,
    report: RestoreReport,
    codec: StateCodec[S],
    contract: Contract[S],
) -> None:
    """Steps 1-5 of the module's docstring, a chunk of ratings at a time."""
    # Outboxes are normally empty, and then absent: only the few that exist are read one by one.
    outbox_prefix = f"{prefix}{keys.OUTBOX}"
    outboxes = {key.decode().removeprefix(outbox_prefix) for key in await matching_keys(redis, f"{outbox_prefix}*")}
    ordered = sorted(set(changelog.latest) | outboxes)
    for start in range(0, len(ordered), CHUNK):
        chunk = ordered[start : start + CHUNK]
        states = await with_retry(redis.mget, [keys.state_key(prefix, r) for r in chunk])
        listed = [r for r in chunk if r in outboxes]

        def read(pipe: Pipeline, listed: list[str] = listed) -> None:
            for r in listed:
                pipe.lrange(keys.outbox_key(prefix, r), 0, -1)

        events: dict[str, list[bytes]] = dict(zip(listed, await pipelined(redis, read), strict=True)) if listed else {}
        written: dict[str, bytes] = {}  # states, by one MSET
        writes: list[tuple[str, tuple[Any, ...]]] = []  # the outboxes' commands: pipeline method, arguments
        for n, r in enumerate(chunk):
            topic = changelog.latest.get(r)
            state = states[n]
            assert not isinstance(state, str)  # the client does not decode responses
            action, published, reason = decide(topic, state, events.get(r, []), codec, contract)
            outbox = keys.outbox_key(prefix, r)
            if published:
                writes.append(("ltrim", (outbox, published, -1)))
                report.trimmed += published
            if action == "refuse" and force and topic is not None:
                action = "force"
            if action == "keep":
                report.unchanged += 1
            elif action == "ahead":
                report.ahead += 1
            elif action == "refuse":
                report.refused.append(f"{r}: {reason}")
            else:
                assert topic is not None
                written[keys.state_key(prefix, r)] = codec.encode(topic)
                report.written += 1
                if action == "force":
                    writes.append(("delete", (outbox,)))
                    report.forced += 1
        if written:
            await with_retry(redis.mset, written)
        if writes:
            await pipelined(redis, _queue(writes))


def _queue(commands: list[tuple[str, tuple[Any, ...]]]) -> Callable[[Pipeline], None]:
    def build(pipe: Pipeline) -> None:
        for name, args in commands:
            getattr(pipe, name)(*args)

    return build


async def record_games(redis: "Redis", prefix: str, games: set[str], retention_ms: int, report: RestoreReport) -> None:
    ids = sorted(games)
    for start in range(0, len(ids), CHUNK):
        chunk = [(game_id, RESTORED) for game_id in ids[start : start + CHUNK]]
        report.games_recorded += await with_retry(records.remember, redis, prefix, chunk, retention_ms, True)


async def clear_leases(redis: "Redis", prefix: str, report: RestoreReport) -> None:
    """Every publication lease (the workers are stopped, or refused by the untrusted mark) and
    every process's `seen` key (the epoch starts again: no process may compare with old ones)."""
    report.leases_cleared = await unlink_all(redis, await matching_keys(redis, f"{prefix}{keys.LEASE}*"))
    await unlink_all(redis, await matching_keys(redis, f"{prefix}{keys.SEEN}*"))


async def trust(redis: "Redis", prefix: str) -> None:
    """Mark the store trusted again: a new epoch (with writes from 0), and no untrusted mark.
    A worker that saw the old store then finds a higher epoch, not a lower one. In one
    MULTI/EXEC: no apply may see the new epoch with the old writes."""
    store = keys.store_key(prefix)

    def build(pipe: Pipeline) -> None:
        pipe.hincrby(store, "epoch", 1)
        pipe.hset(store, "writes", 0)
        pipe.delete(keys.untrusted_key(prefix))

    await pipelined(redis, build, atomic=True)


async def distrust(redis: "Redis", prefix: str, reason: str) -> None:
    """Mark the store untrusted: every script of every process refuses work until `trust`."""
    await with_retry(redis.set, keys.untrusted_key(prefix), reason)


async def restore_calendar(
    redis: "Redis",
    settings: WorkerSettings,
    closed_through: str | None,
    say: Callable[[str], None],
    closed: Collection[str] = (),
) -> None:
    """A per-period system's calendar and indexes, from the restored states: the latest closed
    period the later of `closed_through` (`--closed-through`: a period closed with no games
    leaves no trace in the topic) and the latest any state was closed for; each period's index
    of the ratings with games of it, from their `pending`. A state that still holds games of a
    closed period shows an interrupted close: it is set in progress, for `close-period` to finish."""
    spec = settings.spec()
    periods, codec = spec.periods, spec.calendar_codec
    if periods is None or codec is None:
        return
    prefix = settings.redis_key_prefix
    states = await read_states(redis, prefix, await rating_keys(redis, prefix), spec.codec)
    if codec.partial:
        await restore_marks(redis, settings, states, closed, say)
        return
    found = [p for p in map(periods.closed_through, states.values()) if p is not None]
    latest = max(found, default=None)
    later = closed_through is not None and (latest is None or not up_to(periods, closed_through, latest))
    taken = closed_through if later else latest
    source = "--closed-through" if taken is not None and taken == closed_through and taken != latest else "the states"
    calendar = periods.opening if taken is None else periods.marked(periods.opening, taken)
    indexes = _indexes(periods, states)
    interrupted = any(periods.closing(state, calendar) for state in states.values())
    fields: dict[Any, Any] = {"calendar": codec.encode(calendar), "marks": 1 if taken else 0}
    if interrupted and taken is not None:
        fields["closing"] = taken
    await _write_calendar(redis, prefix, indexes, fields, {})
    say(f"restore: latest closed period {taken or 'none'} (from {source}); {len(indexes)} periods with recorded games")
    if interrupted:
        say(f"restore: the close of {taken} was interrupted: run `rating-worker close-period --due` to finish it")


async def restore_marks(
    redis: "Redis",
    settings: WorkerSettings,
    states: Mapping[str, Any],
    closed: Collection[str],
    say: Callable[[str], None],
) -> None:
    """A calendar kept by its marks (tornelo), with its indexes: a period is ended if the close
    follower committed its end record or a close event of it is on the output topic (`closed`),
    marked in the order of their (first) end records on the topic; each period with entries in
    the states' `pending` gets its index back, open ones and ended ones whose close did not
    finish (said; the first of those in the order of the marks is set in progress, for the
    follower to finish; any other is finished by its ratings' next games)."""
    spec = settings.spec()
    periods, codec = spec.periods, spec.calendar_codec
    assert periods is not None and codec is not None
    prefix = settings.redis_key_prefix
    order, committed = await end_records(settings)
    ended = [p for p, offset in order.items() if offset < committed or p in closed]
    ended += sorted(set(closed).difference(order))  # a close event whose end record is gone: last
    places: dict[str, int | None] = {p: n for n, p in enumerate(ended)}
    calendar = codec.from_marks(len(ended), places)
    indexes = _indexes(periods, states)
    interrupted = [p for p in ended if p in indexes]
    fields: dict[Any, Any] = {"calendar": codec.encode(calendar), "marks": len(ended)}
    if interrupted:
        fields["closing"] = interrupted[0]
    await _write_calendar(redis, prefix, indexes, fields, places)
    say(
        f"restore: {len(ended)} periods ended (end records committed by the close follower up to offset {committed}, "
        f"or closed on the output topic); {len(indexes) - len(interrupted)} open with recorded games"
    )
    for n, period in enumerate(interrupted):
        left = len(indexes[period])
        who = "the close follower finishes it" if n == 0 else "its ratings' next games finish it"
        say(f"restore: the close of {period} was interrupted ({left} ratings left): {who}")


def _indexes(periods: PeriodSystem[Any], states: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each period's index, from the states' `pending`: the ratings with entries of it."""
    indexes: dict[str, list[str]] = {}
    for key, state in states.items():
        for period in periods.pending(state):
            indexes.setdefault(period, []).append(key)
    return indexes


async def _write_calendar(
    redis: "Redis",
    prefix: str,
    indexes: dict[str, list[str]],
    fields: dict[Any, Any],
    places: Mapping[str, int | None],
) -> None:
    """The calendar's keys replaced in one MULTI/EXEC: the `periods` hash's `fields`, the indexes,
    the periods that have one and when each began (now: when their first game was recorded is not
    on the topic), and a calendar kept by its marks' `marked` (`places`; none for fide)."""
    now = int(time.time())

    def build(pipe: Pipeline) -> None:
        pipe.delete(
            keys.periods_key(prefix), keys.indexed_key(prefix), keys.opened_key(prefix), keys.marked_key(prefix)
        )
        for period, ratings in indexes.items():
            pipe.sadd(keys.index_key(prefix, period), *ratings)
        if indexes:
            pipe.sadd(keys.indexed_key(prefix), *indexes)
            pipe.hset(keys.opened_key(prefix), mapping=dict.fromkeys(indexes, now))
        marked: dict[Any, Any] = {p: n for p, n in places.items() if n is not None}
        if marked:
            pipe.hset(keys.marked_key(prefix), mapping=marked)
        pipe.hset(keys.periods_key(prefix), mapping=fields)

    await unlink_all(redis, await matching_keys(redis, f"{keys.index_key(prefix, '')}*"))
    await pipelined(redis, build, atomic=True)


async def end_records(settings: WorkerSettings) -> tuple[dict[str, int], int]:
    """The tournament topic's valid end records: each period at its first record's offset, in the
    order of the topic; and the close follower's committed offset (0: none)."""
    order: dict[str, int] = {}
    topic = settings.topic_tournaments
    async for batch in scan(settings, topic):
        for record in batch:
            end = decode_end(record, settings.max_message_bytes)
            if isinstance(end, TournamentFinished):  # else dead-lettered by the follower: no end
                order.setdefault(end.tournament_id, record.offset)
    async with group_reader(settings, close_group(settings)) as group:
        committed = await retrying(KAFKA_READ, group.committed, TopicPartition(topic, 0))
    return order, committed or 0


async def restore(
    settings: WorkerSettings, force: bool, say: Callable[[str], None], closed_through: str | None = None
) -> RestoreReport:
    report = RestoreReport()
    started = last = time.monotonic()

    def progress(records: int) -> None:
        nonlocal last
        if time.monotonic() - last >= PROGRESS_SECONDS:
            last = time.monotonic()
            say(f"restore: {records} records read ({records / (last - started):,.0f}/s)")

    prefix = settings.redis_key_prefix
    async with connected(settings) as redis:
        await own_prefix(redis, prefix, settings.spec().name, write=True, parameters=settings.parameters())
        await refuse_during_close(redis, settings, "restore")
        # Workers still running wait meanwhile (their scripts refuse): a restore's plain writes
        # and its clearing of the leases must not meet their applies and publications.
        await distrust(redis, prefix, "a restore is under way (or stopped before it ended): run it again")
        rules = settings.rules()
        contract, codec = settings.spec().contract, settings.spec().codec
        changelog = await read_changelog(settings, contract, rules.paired_kinds, progress)
        report.records, report.ratings, report.games = changelog.records, len(changelog.latest), len(changelog.games)
        report.set_aside = changelog.set_aside
        say(f"restore: read {report.records} records: {report.ratings} ratings, {report.games} games")
        await reconcile(redis, prefix, changelog, force, report, codec, contract)
        await record_games(redis, prefix, changelog.games, settings.idempotency_retention_seconds * 1000, report)
        await clear_leases(redis, prefix, report)
        await restore_calendar(redis, settings, closed_through, say, changelog.closed)
        report.partial = changelog.partial_games(int(time.time() * 1000))
        if report.refused:
            await distrust(redis, prefix, f"restore refused {len(report.refused)} ratings: run it with --force")
        else:
            await trust(redis, prefix)
            report.trusted = True
    return report
