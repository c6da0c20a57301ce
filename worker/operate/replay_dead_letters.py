"""`rating-worker replay-dead-letters`: parked records back to their input topic, once their cause is fixed.

The dead letters are read from the dead-letter topic (no consumer group: nothing committed),
selected by error kind and by partition and offset range, and counted by kind. Without
`--apply` that is all (a dry run). With it, each selected record is produced again to the
topic it came from (its `source.topic` header; `RATING_TOPIC_GAMES` for a letter without one),
which must be an input topic of the deployment (`input_topics`: the games', and tornelo's
tournament topic, whose bad end records are dead-lettered as bad games are; else the letter is
counted as unrecoverable), acknowledged by every in-sync replica, as the original:

- its key and value, and its original headers (the dead letter's own headers before its error
  headers, an `original.<name>` renamed back to `<name>`), plus `replayed.from`
  (`<dead-letter topic>/<partition>/<offset>`), so a record dead-lettered again says where it
  came from. A dead letter cannot tell a header it renamed `original.<name>` from one the
  record already bore under that name (contract v1, "Bad input"): every such header is taken
  as renamed, and the command counts and says so (see `split_headers`);
- a dead letter that holds less than the original (a `too_large` value cut to
  `RATING_MAX_MESSAGE_BYTES`, or a letter cut to fit the broker: `error.truncated`) is replayed
  from the original record instead, read again from the input topic at `source.partition` and
  `source.offset` (the input topic is kept for good). If that record is gone, it is counted
  as unrecoverable and not replayed.

A replayed game goes through the worker's normal path: a game already applied is a duplicate
and changes nothing, a game still bad is dead-lettered again, and a game now good is applied
once, after the games that reached the input topic before it. A replayed tournament end is read
after the ends before it on its topic, and ends a tournament that has not ended yet (an end
read again does nothing). A replay cut short (an outage,
SIGTERM) can be run again: what it replayed already is a duplicate the second time. A record
dead-lettered again after a replay (its headers hold `replayed.from`) is left out of the next
replays unless asked for (`--include-replayed`): its first dead letter is still selected, so
replaying both would put it on the input topic twice each time.
"""

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition

from worker.operate.topic_scan import FETCH_TIMEOUT_MS, scan
from worker.service.connections import close_quietly, kafka_options
from worker.service.wiring import compression, start_producer
from worker.settings import WorkerSettings
from worker.stream.dead_letters import ERROR_HEADERS, TRUNCATED_HEADER
from worker.stream.retry import KAFKA_CONNECT, KAFKA_PUBLISH, KAFKA_READ, retrying

REPLAYED_FROM = "replayed.from"
CHUNK = 500  # records produced per round trip
CUT_KIND = "too_large"  # its value is cut to RATING_MAX_MESSAGE_BYTES in the dead letter

Headers = list[tuple[str, bytes]]


@dataclass(frozen=True)
class Selection:
    """Which dead letters: by error kind (any if empty), partition (any if None), offsets (inclusive)."""

    kinds: frozenset[str] = frozenset()
    partition: int | None = None
    from_offset: int = 0
    to_offset: int | None = None
    include_replayed: bool = False  # also the letters of records parked again after a replay

    def selects(self, partition: int, offset: int, kind: str) -> bool:
        return (
            (not self.kinds or kind in self.kinds)
            and self.partition in (None, partition)
            and offset >= self.from_offset
            and (self.to_offset is None or offset <= self.to_offset)
        )


@dataclass(frozen=True)
class Replay:
    """One record to produce again, and the dead letter it comes from."""

    letter: str  # `<topic>/<partition>/<offset>` of the dead letter
    topic: str  # where it goes back to: the input topic it came from
    kind: str
    key: bytes | None
    value: bytes | None
    headers: Headers


@dataclass
class Report:
    read: int = 0
    selected: Counter[str] = field(default_factory=Counter)  # by error kind
    from_source: int = 0  # replayed from the input topic's original record
    unrecoverable: list[str] = field(default_factory=list)  # cut dead letters whose original is gone
    replayed: int = 0  # produced (with --apply)
    renamed_back: int = 0  # `original.<error header>` headers replayed as `<error header>` (see split_headers)
    renamed_letters: int = 0  # the replayed dead letters that held them
    replayed_before: int = 0  # left out: parked again after an earlier replay (see Selection)
    # What is replayed (with --apply) or would be, by the topic it goes back to, in the order of input_topics.
    to: Counter[str] = field(default_factory=Counter)


def input_topics(settings: WorkerSettings) -> tuple[str, ...]:
    """The topics a dead letter of the deployment may go back to: its input topic, and tornelo's
    topic of tournament ends (RATING_TOPIC_TOURNAMENTS)."""
    tournaments = settings.tournament_topic()
    return (settings.topic_games,) if tournaments is None else (settings.topic_games, tournaments)


def destinations(report: Report, default: str) -> str:
    """Where the replays go, for the summary: the one topic (`default` if none), or each with its count."""
    if len(report.to) <= 1:
        return next(iter(report.to), default)
    return ", ".join(f"{topic} ({n})" for topic, n in report.to.items())


def split_headers(headers: Sequence[tuple[str, bytes]]) -> tuple[Headers, dict[str, bytes], int]:
    """A dead letter's original headers (renamed back), its error headers, and how many were renamed back.

    The error headers come last, from the last `error.kind` on; before them are the original
    record's headers, where one named like an error header was renamed `original.<name>`.

    An input header already named `original.error.kind` (or `original.` and another error
    header's name) is copied unchanged, so it reads exactly like a renamed `error.kind`. Each is
    taken as renamed: the replay is then the exact inverse of the rename the contract states,
    for the producers the rename exists for (`error.kind` is a common header name), and is
    wrong only for a producer that itself names a header `original.<error header>`. The worker
    reads no input header, and such a record parked again gets the same headers either way."""
    names = [name for name, _ in headers]
    start = len(names) - 1 - names[::-1].index("error.kind") if "error.kind" in names else len(names)
    renamed = {f"original.{name}": name for name in (*ERROR_HEADERS, TRUNCATED_HEADER)}
    original = [(renamed.get(name, name), value) for name, value in headers[:start]]
    restored = sum(1 for name, _ in headers[:start] if name in renamed)
    return original, {name: value for name, value in headers[start:]}, restored


def cut(kind: str, errors: dict[str, bytes]) -> bool:
    """Whether the dead letter holds less than the original record."""
    return kind == CUT_KIND or TRUNCATED_HEADER in errors


async def replay_dead_letters(settings: WorkerSettings, selection: Selection, apply: bool) -> Report:
    report = Report()
    inputs = input_topics(settings)
    # With the original to read, if cut, and the headers renamed back otherwise.
    chosen: list[tuple[Replay, tuple[str, int, int] | None, int]] = []
    async for batch in scan(settings, settings.topic_dead_letters):
        for record in batch:
            report.read += 1
            original, errors, restored = split_headers(record.headers or ())
            kind = errors.get("error.kind", b"").decode(errors="replace") or "(no error.kind)"
            if not selection.selects(record.partition, record.offset, kind):
                continue
            if not selection.include_replayed and any(name == REPLAYED_FROM for name, _ in original):
                report.replayed_before += 1  # parked again after a replay: its first letter is selected too
                continue
            report.selected[kind] += 1
            where = f"{record.topic}/{record.partition}/{record.offset}"
            topic = errors["source.topic"].decode(errors="replace") if "source.topic" in errors else inputs[0]
            if topic not in inputs:
                report.unrecoverable.append(
                    f"{where}: its source topic {topic} is not an input topic of this deployment"
                )
                continue
            source = _source(errors) if cut(kind, errors) else None
            if cut(kind, errors) and source is None:
                report.unrecoverable.append(f"{where}: cut, and its source headers are missing")
                continue
            chosen.append((Replay(where, topic, kind, record.key, record.value, original), source, restored))
    sources = {source for _, source, _ in chosen if source is not None}
    found = await _read_originals(settings, sources) if sources else {}
    replays: list[Replay] = []
    for replay, source, restored in chosen:
        if source is None:
            replays.append(replay)
            report.renamed_back += restored
            report.renamed_letters += restored > 0
        elif source in found:
            record = found[source]
            headers = list(record.headers or ())
            replays.append(Replay(replay.letter, replay.topic, replay.kind, record.key, record.value, headers))
            report.from_source += 1
        else:
            report.unrecoverable.append(f"{replay.letter}: cut, and its original {'/'.join(map(str, source))} is gone")
    report.to = Counter({topic: n for topic in inputs if (n := sum(r.topic == topic for r in replays))})
    if apply and replays:
        report.replayed = await _produce(settings, replays)
    return report


def _source(errors: dict[str, bytes]) -> tuple[str, int, int] | None:
    try:
        topic = errors["source.topic"].decode()
        return topic, int(errors["source.partition"]), int(errors["source.offset"])
    except (KeyError, ValueError):
        return None


async def _read_originals(
    settings: WorkerSettings, wanted: set[tuple[str, int, int]]
) -> dict[tuple[str, int, int], ConsumerRecord]:
    """The records at the given (topic, partition, offset), those that still exist."""
    consumer = AIOKafkaConsumer(**kafka_options(settings), enable_auto_commit=False, auto_offset_reset="none")
    found: dict[tuple[str, int, int], ConsumerRecord] = {}
    try:
        await retrying(KAFKA_CONNECT, consumer.start)
        await retrying(KAFKA_READ, consumer.topics)
        for topic, partition, offset in sorted(wanted):
            if partition not in (consumer.partitions_for_topic(topic) or set()):
                continue
            tp = TopicPartition(topic, partition)
            consumer.assign([tp])
            first = (await retrying(KAFKA_READ, consumer.beginning_offsets, [tp]))[tp]
            if offset < first:
                continue  # deleted by retention
            consumer.seek(tp, offset)
            record = await _first_at_or_after(consumer, tp)
            if record is not None and record.offset == offset:
                found[(topic, partition, offset)] = record
    finally:
        await close_quietly(consumer.stop())
    return found


async def _first_at_or_after(consumer: AIOKafkaConsumer, tp: TopicPartition) -> ConsumerRecord | None:
    """The next record of `tp` from its position, or None at the partition's end."""
    while True:
        batches = await retrying(KAFKA_READ, lambda: consumer.getmany(tp, timeout_ms=FETCH_TIMEOUT_MS, max_records=1))
        for batch in batches.values():
            if batch:
                record: ConsumerRecord = batch[0]
                return record
        highwater = consumer.highwater(tp)
        if highwater is not None and await consumer.position(tp) >= highwater:
            return None


async def _produce(settings: WorkerSettings, replays: list[Replay]) -> int:
    producer = AIOKafkaProducer(
        **kafka_options(settings),
        acks="all",
        enable_idempotence=settings.kafka_idempotent_producer,
        max_request_size=settings.kafka_max_request_bytes,
        compression_type=compression(settings),
    )
    try:
        await start_producer(producer, settings)
        for start in range(0, len(replays), CHUNK):
            chunk = replays[start : start + CHUNK]

            async def send(chunk: list[Replay] = chunk) -> None:
                sent = [
                    await producer.send(
                        replay.topic,
                        replay.value,
                        key=replay.key,
                        headers=[*replay.headers, (REPLAYED_FROM, replay.letter.encode())],
                    )
                    for replay in chunk
                ]
                await asyncio.gather(*sent)

            # A chunk per round trip, acknowledged whole before the next; a chunk retried after a
            # failure may send some of its records twice (a game twice is a duplicate).
            await retrying(KAFKA_PUBLISH, send)
        return len(replays)
    finally:
        await close_quietly(producer.stop())
