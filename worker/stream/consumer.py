"""The consumer loop: fetch a batch, decode it, run it through the pipeline, dead-letter, commit.

Batches are processed one at a time: an offset is committed only when every record before it
in its partition is durable in Redis and its events (or its dead letter) are acknowledged by
Kafka. A batch whose pipeline parked some ratings (their events must wait: a hold after a send of
unknown outcome, another process's lease; `worker.stream.pipeline`) is done, but not committed,
until those are published: later batches go on meanwhile, and each partition's offsets are
committed in order, up to the last batch before the first one still waiting. A revocation waits
for the batch in flight and for the revoked partitions' waiting batches (bounded), so partitions
move with everything done committed; past the bound, the batch's effects are idempotent and the
next owner re-reads the uncommitted records as duplicates.

Watermarks (`worker.store.redis_store`): the batch's last apply records, per partition, the offset below
which everything is done. A record consumed below it is a redelivery after a rewind, and is
taken as a duplicate even if its idempotency record expired (`schedule.Replayed`). A
partition assigned with no committed offset (the group's offsets expired, or the group was
renamed) starts at its watermark instead of re-reading the whole topic.
"""

import asyncio
import contextlib
import logging
import time
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, ConsumerRecord, TopicPartition
from aiokafka.errors import CommitFailedError, KafkaError
from redis.exceptions import RedisError

from worker import metrics
from worker.engine.decoder import BadInput, ErrorKind, decode_input
from worker.engine.engine import GameOutcome, Verdict
from worker.store import keys
from worker.store.protocol import Watermark
from worker.store.redis_store import RedisStore
from worker.store.schedule import Item, Replayed, game_of
from worker.stream import unreadable
from worker.stream.dead_letters import DeadLetter, DeadLetters, Source
from worker.stream.health import Health
from worker.stream.pipeline import Pipeline
from worker.stream.retry import KAFKA_READ, REDIS_COMMAND, REDIS_READ, retrying

log = logging.getLogger(__name__)

# A batch takes well under a second; a revocation waiting longer than this means Redis or
# Kafka is down. Then we let the partitions go uncommitted (the next owner redoes them,
# idempotently) rather than stall the whole group's rebalance.
REVOKE_DRAIN_SECONDS = 10.0
LAG_INTERVAL = 1.0  # seconds between lag samples
FETCH_TIMEOUT_MS = 200  # how long an idle getmany waits: bounds how late a stop is noticed
# Reading the watermarks inside a rebalance callback holds up the whole group's rebalance:
# past this, the partitions start without them, and the first batch reads them (retrying).
ASSIGN_READ_SECONDS = 5.0
# A paused partition's instruction (`rating-worker dead-letter-unreadable`) is looked for this often, each
# look bounded so that Redis away never holds up the loop (nor a stop).
INSTRUCTION_INTERVAL = 1.0
INSTRUCTION_READ_SECONDS = 1.0
DIAGNOSE_SECONDS = 5.0  # the raw read that names an unreadable record in the log: skipped past this


class WatermarkAhead(Exception):
    """A partition ends below its watermark: the topic is not the one the watermark was kept for."""


class RatingConsumer:
    def __init__(
        self,
        consumer: AIOKafkaConsumer,
        pipeline: Pipeline[Any],
        dead_letters: DeadLetters,
        batch_size: int,
        max_message_bytes: int,
        health: Health | None = None,
        *,
        future_allowance_seconds: int,  # RATING_FUTURE_ALLOWANCE_SECONDS
        max_wait: float = float("inf"),  # see `waits_by_design`
    ) -> None:
        self.health = health or Health(stall_seconds=float("inf"))
        self.consumer = consumer
        self.pipeline = pipeline
        self.dead_letters = dead_letters
        self.batch_size = batch_size
        self.max_message_bytes = max_message_bytes
        self.future_allowance_seconds = future_allowance_seconds  # RATING_FUTURE_ALLOWANCE_SECONDS
        self.in_flight = asyncio.Lock()
        self.totals: Counter[str] = Counter()
        self.committed: dict[TopicPartition, int] = {}  # next offset, as committed by us (or found)
        self.oldest_pending: dict[TopicPartition, float] = {}  # timestamp (s) of the batch in flight
        self.last_done: dict[TopicPartition, float] = {}  # timestamp (s) of the last record committed
        self.watermarks: dict[TopicPartition, int] = {}  # every record below is done (read from Redis)
        # Partitions started at their watermark for want of a committed offset: the watermark is
        # committed by the loop (not inside the rebalance), so that the group's offsets, and the
        # lag every other tool computes from them, say what is done even if nothing more comes.
        self.to_commit: dict[TopicPartition, int] = {}
        # Records the Kafka client cannot hand over (`worker.stream.unreadable`): the offset each
        # partition was handed up to, the partitions paused at such a record, and those whose way past
        # an operator asked for, done and waiting for their commits.
        self.read_to: dict[TopicPartition, int] = {}
        self.paused: dict[TopicPartition, int] = {}
        self.passing: dict[TopicPartition, unreadable.Passage] = {}
        self.next_look = 0.0  # monotonic: when the paused partitions' instructions are next looked for
        # Per partition, the batches done but not committed, oldest first: (next offset, what their
        # parked ratings' publication waits for, first and last record timestamps in s).
        self.uncommitted: dict[TopicPartition, deque[_Done]] = {}
        self.processing_since: float | None = None  # time.monotonic() when the batch in flight began
        # The longest a batch may wait for its parked ratings by design (`waits_by_design`).
        self.max_wait = max_wait

    def listener(self) -> ConsumerRebalanceListener:
        return _Listener(self)

    async def run(self, stopping: asyncio.Event) -> None:
        """Consume until `stopping` is set; the batch in flight then finishes and is committed."""
        watching = asyncio.create_task(self._watch_lag())
        try:
            while not stopping.is_set():
                await self.tend_paused()
                batches = await self.fetch()
                self.check_ends()  # also while no record comes: a consumer past the end waits there
                if self.to_commit:
                    offsets, self.to_commit = self.to_commit, {}
                    async with self.in_flight:
                        await self.commit(offsets)
                if batches:
                    async with self.in_flight:
                        await self.process(batches)
                elif self.uncommitted:
                    async with self.in_flight:
                        await self.commit_ready()
        finally:
            watching.cancel()
        waiting = sum(len(queue) for queue in self.uncommitted.values())
        if waiting:
            log.info(
                "stopping with %d batches uncommitted: %d ratings' events wait to be published (held after a send of "
                "unknown outcome, or on another process's lease); they stay in Redis and are published by whoever "
                "consumes these records next",
                waiting,
                self.pipeline.parked,
            )

    async def fetch(self) -> dict[TopicPartition, list[ConsumerRecord]]:
        """The next batch. If the client cannot hand over a record it fetched, each partition is read
        alone (`worker.stream.unreadable.isolate`): one that stops at such a record is paused there,
        every record before it handed over, and the others go on."""
        try:
            batches: dict[TopicPartition, list[ConsumerRecord]] = await self.consumer.getmany(
                timeout_ms=FETCH_TIMEOUT_MS, max_records=self.batch_size
            )
        except Exception as e:
            if not unreadable.client_cannot_read(e):
                raise
            batches = await self.read_around(e)
        for tp, records in batches.items():
            self.read_to[tp] = records[-1].offset + 1
        return batches

    async def read_around(self, error: Exception) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Each partition read alone from what was handed over (the failed call may have consumed
        other partitions' records without returning them: they are read again)."""
        paused = self.consumer.paused()
        starts: dict[TopicPartition, int] = {}
        for tp in sorted(self.consumer.assignment()):
            if tp not in paused:
                position = await self.consumer.position(tp)
                handed = self.read_to[tp] if tp in self.read_to else await self.start_of(tp)
                starts[tp] = min(position, handed)
        found = await unreadable.isolate(self.consumer, starts, self.batch_size)
        for tp, stuck in found.stuck.items():
            await self.pause(tp, stuck)
        if not found.stuck:
            log.warning(
                "the Kafka client could not read a fetch (%s), but every partition read alone reads: going on",
                unreadable.one_line(error),
            )
        return found.records

    async def start_of(self, tp: TopicPartition) -> int:
        """Where this owner started reading `tp`: the offset its rebalance listener found, or, while
        the listener has not found it yet (the client fetches meanwhile), the group's committed
        offset, else the partition's first (the consumer starts at the earliest)."""
        if tp in self.committed:
            return self.committed[tp]
        offset: int | None = await retrying(KAFKA_READ, self.consumer.committed, tp)
        if offset is None:
            firsts = await retrying(KAFKA_READ, self.consumer.beginning_offsets, [tp])
            offset = int(firsts[tp])
        return offset

    async def pause(self, tp: TopicPartition, stuck: unreadable.Stuck) -> None:
        """Stop fetching `tp` at the record the client cannot read, with one error line saying what
        is there and how to go past it; the metric shows it (the alert RatingInputUnreadable)."""
        self.consumer.pause(tp)
        self.paused[tp] = stuck.offset
        metrics.PAUSED_AT.labels(str(tp.partition)).set(stuck.offset)
        what = f"the Kafka client cannot read the record there ({stuck.error})"
        try:
            async with asyncio.timeout(DIAGNOSE_SECONDS):
                way = await unreadable.read_passage(self.dead_letters.producer.client, tp, stuck.offset)
            if way is not None and way.unreadable:
                first = way.unreadable[0]
                what = f"the record at offset {first.offset} cannot be read: {first.message}"
        except (KafkaError, TimeoutError, OSError) as e:
            log.debug("the raw read of %s at %d failed (%s)", tp, stuck.offset, unreadable.one_line(e))
        log.error(
            "%s partition %d paused at offset %d: %s; the other partitions go on. To dead-letter what cannot be "
            "read there and go on: rating-worker dead-letter-unreadable --partition %d --offset %d",
            tp.topic,
            tp.partition,
            stuck.offset,
            what,
            tp.partition,
            stuck.offset,
            extra={"partition": tp.partition, "offset": stuck.offset},
        )

    async def tend_paused(self) -> None:
        """The paused partitions: forget those no longer paused here (revoked, or assigned afresh:
        whoever reads them pauses them again), keep them out of the stall (they have their own
        alert), carry out an operator's instruction, finish a way past once its records are committed."""
        if not self.paused:
            return
        held, paused = self.consumer.assignment(), self.consumer.paused()
        for tp in [tp for tp in self.paused if tp not in held or tp not in paused]:
            self.forget_paused(tp)
        now = time.monotonic()
        for tp in self.paused:
            self.health.progressed(tp.partition, now)
        for tp in list(self.passing):
            await self.finish_passing(tp)
        if not self.paused or now < self.next_look:
            return
        self.next_look = now + INSTRUCTION_INTERVAL
        store = self.pipeline.store
        if not isinstance(store, RedisStore):
            return
        waiting = {tp: offset for tp, offset in self.paused.items() if tp not in self.passing}
        try:
            async with asyncio.timeout(INSTRUCTION_READ_SECONDS):
                asked = await unreadable.instructed(store.redis, store.prefix, waiting) if waiting else []
        except (TimeoutError, OSError, RedisError) as e:
            log.debug("instructions not read (%s)", unreadable.one_line(e))
            return
        for tp in asked:
            await self.pass_unreadable(tp)

    def forget_paused(self, tp: TopicPartition) -> None:
        self.paused.pop(tp, None)
        self.passing.pop(tp, None)
        with contextlib.suppress(KeyError):
            metrics.PAUSED_AT.remove(str(tp.partition))

    async def pass_unreadable(self, tp: TopicPartition) -> None:
        """The way past a paused partition's unreadable record, on an operator's instruction, inside
        the group: its records from the pause through the batch that holds it, read from their bytes
        (`worker.stream.unreadable.passage`): those the client could have read processed as usual,
        in order, the others dead-lettered `invalid_encoding`; then, once they are committed, the
        offset past the batch is committed and the partition resumes there."""
        offset = self.paused[tp]
        way = await retrying(KAFKA_READ, unreadable.read_passage, self.dead_letters.producer.client, tp, offset)
        if way is None:
            way = unreadable.Passage(offset, offset)  # nothing stored there any more: read on from it
        first = way.unreadable[0].offset if way.unreadable else way.end
        letters = [
            DeadLetter(
                Source(tp.topic, tp.partition, u.offset, u.key, u.value, u.timestamp, u.headers),
                BadInput(ErrorKind.INVALID_ENCODING, u.message),
            )
            for u in way.unreadable
        ]
        before = [r for r in way.readable if r.offset < first]
        after = [r for r in way.readable if r.offset > first]
        async with self.in_flight:
            if before:
                await self.process({tp: before})
            await self.dead_letters.send(letters)
            if after:
                await self.process({tp: after})
        self.passing[tp] = way
        await self.finish_passing(tp)

    async def finish_passing(self, tp: TopicPartition) -> None:
        """Commit past the way once what it handed on is committed; then resume the partition there."""
        way = self.passing[tp]
        handed = way.readable[-1].offset + 1 if way.readable else way.start
        if self.committed.get(tp, 0) < handed:
            return  # its records' events wait to be published: committed later
        if self.committed.get(tp, 0) < way.end:
            async with self.in_flight:
                await self.commit({tp: way.end})
            if self.committed.get(tp, 0) < way.end:
                return  # the commit failed (logged): again at the next look
        self.consumer.seek(tp, way.end)
        self.consumer.resume(tp)
        self.read_to[tp] = way.end
        self.forget_paused(tp)
        log.warning(
            "%s partition %d resumed at offset %d: %s",
            tp.topic,
            tp.partition,
            way.end,
            way.describe(),
            extra={"partition": tp.partition, "offset": way.start},
        )
        store = self.pipeline.store
        if isinstance(store, RedisStore):
            await retrying(REDIS_COMMAND, unreadable.report, store.redis, store.prefix, tp, way.start, way.describe())

    async def _watch_lag(self) -> None:
        while True:
            self.observe_lag(time.time(), time.monotonic(), await self.ends())
            await asyncio.sleep(LAG_INTERVAL)

    async def ends(self) -> dict[TopicPartition, int]:
        """The broker's end offsets of the assigned partitions (one ListOffsets request), or
        none when it does not answer within the sampling interval."""
        partitions = list(self.consumer.assignment())
        if not partitions:
            return {}
        try:
            async with asyncio.timeout(LAG_INTERVAL):
                ends: dict[TopicPartition, int] = await self.consumer.end_offsets(partitions)
                return ends
        except (KafkaError, TimeoutError, OSError) as e:
            log.debug("end offsets not read (%s: %s); the lag uses the fetches' highwater", type(e).__name__, e)
            return {}

    def observe_lag(self, now: float, clock: float, ends: dict[TopicPartition, int]) -> None:
        """Lag per partition: the partition's end minus the committed offset.

        The end is the larger of the broker's end offset (`ends`) and the highwater of the
        client's own fetches: the highwater alone stops moving while the records of the last
        fetch wait to be consumed (a partition is fetched again only once they are), so a worker
        held up, or slower than its input, would see its lag shrink while the backlog grows; and
        some Kafka-compatible brokers answer end offsets short of the end, which a fetch corrects.
        Measured against what is committed, not fetched, so a batch stuck in flight shows as lag.
        Seconds: the age of the oldest record not yet committed (approximated by the last
        committed one while none is in flight). The stall is the health's (`clock` is
        monotonic), the one /livez judges.
        """
        for tp in self.consumer.assignment():
            highwater, done = self.consumer.highwater(tp), self.committed.get(tp)
            end = max(highwater or 0, ends.get(tp, 0))
            if (highwater is None and tp not in ends) or done is None or tp.partition not in self.health.partitions:
                continue
            lag = max(0, end - done)
            oldest = self.oldest_pending.get(tp, self.last_done.get(tp))
            label = str(tp.partition)
            metrics.LAG_RECORDS.labels(label).set(lag)
            metrics.LAG_SECONDS.labels(label).set(max(0.0, now - oldest) if lag and oldest else 0.0)
            self.health.lag(tp.partition, lag, clock)
            queue = self.uncommitted.get(tp)
            if queue and self.waits_by_design(queue[0], clock):
                self.health.waiting(tp.partition, clock)
            metrics.STALL_SECONDS.labels(label).set(self.health.stall(tp.partition, clock))

    def waits_by_design(self, done: "_Done", clock: float) -> bool:
        """Whether a partition's oldest uncommitted batch waits for its parked ratings as the
        design wants it to (not a stall): their publication is not done, and has waited less than
        the longest it may (`max_wait`: another process's round given up after a lease, then its
        lease run out), while no batch has been in flight for the stall time (a hung batch is one)."""
        if all(f.done() for f in done.waits) or clock - done.queued > self.max_wait:
            return False
        return self.processing_since is None or clock - self.processing_since < self.health.stall_seconds

    async def process(self, batches: dict[TopicPartition, list[ConsumerRecord]]) -> None:
        self.processing_since = time.monotonic()
        try:
            await self._timed(batches)
        finally:
            self.processing_since = None

    async def _timed(self, batches: dict[TopicPartition, list[ConsumerRecord]]) -> None:
        started = time.perf_counter()
        count = sum(len(records) for records in batches.values())
        metrics.IN_FLIGHT.set(count)
        for tp, records in batches.items():
            self.oldest_pending.setdefault(tp, records[0].timestamp / 1000)
        try:
            await self._process(batches)
        finally:
            metrics.IN_FLIGHT.set(0)
        metrics.PROCESSING_SECONDS.observe(time.perf_counter() - started)

    def check_ends(self) -> None:
        """A partition whose end (its highwater, from the fetches) is below its watermark is not
        the one the watermark was kept for (the topic was recreated or truncated): every record
        below the watermark would be taken as done, games never applied. Stop, with the reason."""
        for tp in self.consumer.assignment():
            highwater, below = self.consumer.highwater(tp), self.watermarks.get(tp, 0)
            if highwater is not None and highwater < below:
                raise WatermarkAhead(
                    f"{tp.topic} partition {tp.partition} ends at offset {highwater}, below its watermark {below}: "
                    "the topic was recreated or truncated since; if that is intended, delete its watermarks "
                    f"(the Redis key {keys.WATERMARK}{tp.topic} under RATING_REDIS_KEY_PREFIX) and the group's "
                    "offsets, and restart"
                )

    async def load_watermarks(self, partitions: Iterable[TopicPartition]) -> None:
        """Read the watermarks of `partitions` whose watermark this process does not know yet."""
        for topic in sorted({tp.topic for tp in partitions if tp not in self.watermarks}):
            stored = await retrying(REDIS_READ, self.pipeline.store.watermarks, topic)
            for tp in partitions:
                if tp.topic == topic:
                    self.watermarks[tp] = stored.get(tp.partition, 0)

    async def _process(self, batches: dict[TopicPartition, list[ConsumerRecord]]) -> None:
        items: list[Item] = []
        sources: list[Source] = []  # each item's record, should it become a dead letter
        letters: list[DeadLetter] = []
        metrics.GAMES_CONSUMED.inc(sum(len(records) for records in batches.values()))
        await self.load_watermarks(batches)
        self.check_ends()
        rules = self.pipeline.engine.rules
        allowance = self.future_allowance_seconds
        for tp, records in batches.items():
            below = self.watermarks.get(tp, 0)
            for record in records:
                source = Source(
                    tp.topic,
                    tp.partition,
                    record.offset,
                    record.key,
                    record.value,
                    record.timestamp,
                    tuple(record.headers or ()),
                )
                try:
                    value = record.value if record.value is not None else b""
                    # The record's timestamp as received (CreateTime, or LogAppendTime so configured).
                    game = decode_input(rules, value, self.max_message_bytes, record.timestamp, allowance)
                except BadInput as e:
                    letters.append(DeadLetter(source, e))
                    continue
                items.append(Replayed(game) if record.offset < below else game)
                sources.append(source)
        marks = [Watermark(tp.topic, tp.partition, records[-1].offset + 1) for tp, records in batches.items()]
        planned, stats = await self.pipeline.run(items, marks, wait=False)
        for mark in marks:
            tp = TopicPartition(mark.topic, mark.partition)
            self.watermarks[tp] = max(self.watermarks.get(tp, 0), mark.offset)
        published_at = time.time()
        metrics.CAS_CONFLICTS.inc(stats.conflicts)
        metrics.EVENTS_SENT.inc(stats.events_sent)
        tally = _Tally(stats.parked)
        forgotten = 0
        for p, source in zip(planned, sources, strict=True):
            if not isinstance(p.outcome, GameOutcome):
                continue
            self.totals[p.outcome.verdict] += 1
            forgotten += p.forgotten
            if tally.count(p.outcome, source.timestamp / 1000):
                metrics.END_TO_END_SECONDS.observe(max(0.0, published_at - source.timestamp / 1000))
            if p.outcome.verdict is Verdict.CONFLICT:
                conflicting = game_of(p.item)
                game_id = "" if conflicting is None else conflicting.game_id
                error = BadInput(
                    ErrorKind.CONFLICTING_DUPLICATE,
                    f"game {game_id} was already recorded with other facts ({rules.fact_names} differ)",
                )
                letters.append(DeadLetter(source, error))
        tally.add_to_metrics(stats.waiting)
        if forgotten:
            metrics.BELOW_WATERMARK.inc(forgotten)
            log.warning(
                "%d games consumed below their partition's watermark had no idempotency record left: taken as "
                "duplicates, not applied again (the consumer group was rewound: offsets lost or reset)",
                forgotten,
            )
        letters.sort(key=lambda d: (d.source.partition, d.source.offset))  # in the order they came
        await self.dead_letters.send(letters)
        queued = time.monotonic()
        for tp, records in batches.items():
            first, last = records[0].timestamp / 1000, records[-1].timestamp / 1000
            done = _Done(records[-1].offset + 1, tuple(stats.waiting), frozenset(stats.parked), first, last, queued)
            self.uncommitted.setdefault(tp, deque()).append(done)
        await self.commit_ready()

    async def commit_ready(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Commit, per partition (of `partitions`, or all), the batches done whose parked ratings
        are published, oldest first, up to the first one still waiting."""
        ready: dict[TopicPartition, _Done] = {}
        for tp in list(self.uncommitted if partitions is None else partitions):
            queue = self.uncommitted.get(tp)
            while queue and all(f.done() for f in queue[0].waits):
                done = queue.popleft()
                for future in done.waits:
                    future.result()  # what stopped the publication (a Kafka error for good) stops the worker
                ready[tp] = done
            if not queue:
                self.uncommitted.pop(tp, None)
        if not ready:
            return
        await self.commit({tp: done.offset for tp, done in ready.items()})
        for tp, done in ready.items():
            self.last_done[tp] = done.last
            queue = self.uncommitted.get(tp)
            if queue:
                self.oldest_pending[tp] = queue[0].first
            else:
                self.oldest_pending.pop(tp, None)

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        """Commit what is done for the partitions still ours; a failed commit is only redelivery."""
        owned = self.consumer.assignment()
        mine = {tp: offset for tp, offset in offsets.items() if tp in owned}
        if not mine:
            return
        try:
            await self.consumer.commit(mine)
            now, wall = time.monotonic(), time.time()
            self.committed.update(mine)
            for tp in mine:
                metrics.LAST_COMMIT.labels(str(tp.partition)).set(wall)
                self.health.progressed(tp.partition, now)
        except (CommitFailedError, KafkaError) as e:
            # The group moved on (rebalance) or the coordinator is away: the records will be
            # consumed again and found to be duplicates; nothing is lost or applied twice.
            log.warning("commit failed (%s: %s); those records will be redelivered", type(e).__name__, e)

    async def drain(self, partitions: Iterable[TopicPartition]) -> None:
        """Before `partitions` move: the batch in flight finishes, and their waiting batches are
        published and committed, within REVOKE_DRAIN_SECONDS; what is still waiting then is left
        uncommitted for the next owner (its events stay in Redis, under this process's leases)."""
        revoked = set(partitions)
        deadline = time.monotonic() + REVOKE_DRAIN_SECONDS
        try:
            async with asyncio.timeout_at(asyncio.get_running_loop().time() + REVOKE_DRAIN_SECONDS):
                async with self.in_flight:
                    batches = [done for tp in revoked for done in self.uncommitted.get(tp, ())]
                waits = {f for done in batches for f in done.waits}
                due = self.pipeline.due({r for done in batches for r in done.parked})
                # A wait that cannot end within the bound (a hold of a lease) is not waited for.
                if waits and (due is None or due < deadline):
                    await asyncio.wait(waits)
                async with self.in_flight:
                    await self.commit_ready(revoked)
        except TimeoutError:
            log.warning(
                "partitions %s revoked while a batch was still in flight or waiting to be published after %.0f s; "
                "leaving it uncommitted for the next owner",
                sorted(str(tp) for tp in revoked),
                REVOKE_DRAIN_SECONDS,
            )
        for tp in revoked:
            self.uncommitted.pop(tp, None)
            self.oldest_pending.pop(tp, None)


@dataclass(frozen=True, slots=True)
class _Done:
    """A batch's part in one partition, done but not committed until its parked ratings are published."""

    offset: int  # the next offset: what to commit
    waits: tuple["asyncio.Future[None]", ...]
    parked: frozenset[str]  # the ratings they are for
    first: float  # its first record's timestamp (s)
    last: float  # its last record's timestamp (s)
    queued: float  # time.monotonic() when it was done


@dataclass
class _Tally:
    """A batch's outcomes, counted here and added to the metrics once per batch: a labelled
    counter increment per game was a visible share of the worker's CPU. A rating change counts
    as published once Kafka acknowledged it: those of `parked` ratings (and the end-to-end time
    of their games) once the batch's parked ratings are all published, never if that fails."""

    parked: set[str]
    rated: int = 0
    published: Counter[tuple[str, str]] = field(default_factory=Counter)  # (kind, category)
    later: Counter[tuple[str, str]] = field(default_factory=Counter)  # published once the parked are
    later_games: list[float] = field(default_factory=list)  # their input records' timestamps (s)
    skipped: Counter[str] = field(default_factory=Counter)  # by reason
    late: int = 0  # a per-period system's games recorded late (their period closed)

    def count(self, outcome: GameOutcome[Any], timestamp: float) -> bool:
        """Count one game; whether its rating changes were all published (acknowledged) already."""
        if outcome.verdict is Verdict.APPLIED:
            self.rated += 1
            self.late += outcome.late
            waiting = False
            for u in outcome.updates:
                if u.key in self.parked:
                    self.later[(u.event.kind, u.event.category)] += 1
                    waiting = True
                else:
                    self.published[(u.event.kind, u.event.category)] += 1
            if waiting:
                self.later_games.append(timestamp)
                return False
            return bool(outcome.updates)
        if outcome.skip is not None:
            self.skipped[outcome.skip] += 1
        return False

    def add_to_metrics(self, waiting: Iterable["asyncio.Future[None]"]) -> None:
        metrics.GAMES_RATED.inc(self.rated)
        if self.late:
            metrics.PERIOD_LATE_GAMES.inc(self.late)
        _count_published(self.published)
        for reason, n in self.skipped.items():
            metrics.GAMES_SKIPPED.labels(reason).inc(n)
        if self.later:
            gathered = asyncio.gather(*waiting)
            gathered.add_done_callback(self._published_later)

    def _published_later(self, gathered: "asyncio.Future[list[None]]") -> None:
        if gathered.cancelled() or gathered.exception() is not None:
            return  # not published here: the batch stays uncommitted, its next owner counts them
        _count_published(self.later)
        now = time.time()
        for timestamp in self.later_games:
            metrics.END_TO_END_SECONDS.observe(max(0.0, now - timestamp))


def _count_published(published: Counter[tuple[str, str]]) -> None:
    for (kind, category), n in published.items():
        metrics.CHANGES_PUBLISHED.labels(kind, category).inc(n)


def forget_series(partitions: Iterable[TopicPartition]) -> None:
    """Remove the per-partition series of partitions this process no longer holds: their next
    owner reports them, and a frozen copy here would be counted twice and alert for nothing."""
    for tp in partitions:
        for gauge in metrics.PER_PARTITION:
            with contextlib.suppress(KeyError):  # a partition revoked before its first sample
                gauge.remove(str(tp.partition))


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]  # aiokafka is untyped
    def __init__(self, consumer: RatingConsumer) -> None:
        self.consumer = consumer

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        if revoked:
            await self.consumer.drain(revoked)
            self.consumer.health.revoked({tp.partition for tp in revoked})
            for tp in revoked:
                self.consumer.to_commit.pop(tp, None)
            forget_series(revoked)
            log.info("partitions revoked: %s", sorted(str(tp) for tp in revoked))

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        log.info("partitions assigned: %s", sorted(str(tp) for tp in assigned))
        metrics.REBALANCES.inc()
        metrics.PARTITIONS_ASSIGNED.set(len(assigned))
        worker = self.consumer
        worker.health.assigned({tp.partition for tp in assigned}, time.monotonic())
        # Another owner may have moved them on since we last held them: read them again (and
        # where this owner starts them and has read them to, `RatingConsumer.start_of`).
        worker.watermarks = {tp: w for tp, w in worker.watermarks.items() if tp not in assigned}
        for tp in assigned:
            worker.committed.pop(tp, None)
            worker.read_to.pop(tp, None)
        try:
            async with asyncio.timeout(ASSIGN_READ_SECONDS):
                await worker.load_watermarks(assigned)
        except TimeoutError:
            log.warning("watermarks not read at assignment (Redis slow or away); the first batch reads them")
        for tp in sorted(assigned):  # where this owner starts: the group's committed offset
            try:
                offset = await worker.consumer.committed(tp)
            except KafkaError:
                continue
            watermark = worker.watermarks.get(tp, 0)
            if offset is None and watermark > 0:
                worker.consumer.seek(tp, watermark)
                worker.to_commit[tp] = watermark
                metrics.OFFSETS_MISSING.inc()
                log.error(
                    "%s has no committed offset but Redis has applied it up to %d: starting there, not from the "
                    "beginning (the group's offsets expired or the group id changed)",
                    tp,
                    watermark,
                )
                offset = watermark
            worker.committed[tp] = offset or 0
