"""The load of a fault test, and when it was committed.

- `Feeder` produces chunks of input records on a schedule with one producer and remembers where
  each record landed (partition, offset, from the broker's acknowledgement), so the tests know
  exactly what was produced up to any moment without the broker's (wrong) end offsets.
- `CommitTimeline` samples the group's committed offsets every ~0.1 s in the background; the
  recovery times are read from it afterwards:
    * recovery  = from the end of the fault to the first sample where every partition's
      committed offset reaches the end of what had been acknowledged to the feeder at the
      end of the fault ("everything produced up to then is committed");
    * first progress = from the end of the fault to the first sample whose committed total
      exceeds the last one taken before the fault ended.
"""

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError

from tests.support.stack import Stack

SAMPLE_EVERY = 0.1  # seconds between two samples of the committed offsets
COMMITTED_TIMEOUT = 2.0  # one sample's bound (the broker may be frozen)

Message = tuple[bytes, bytes | None]  # value, key


def keyed_messages(lines: Sequence[bytes]) -> list[Message]:
    """Keyed by game id, as the arena does: one player's games land in many partitions."""
    return [(line, json.loads(line)["game_id"].encode()) for line in lines]


def chunked(items: Sequence[Message], size: int) -> list[list[Message]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


@dataclass(frozen=True)
class Sent:
    value: bytes
    key: bytes | None
    partition: int
    offset: int
    sent_at: float  # time.monotonic() when its chunk was handed to the producer
    acked_at: float  # time.monotonic() of the acknowledgement


@dataclass
class Feeder:
    """One producer for the whole test; `sent` holds every acknowledged record, in send order."""

    bootstrap: str
    topic: str
    sent: list[Sent] = field(default_factory=list)
    producer: AIOKafkaProducer | None = None

    async def start(self) -> None:
        self.producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5, acks="all")
        await self.producer.start()

    async def stop(self) -> None:
        if self.producer is not None:
            await self.producer.stop()

    async def send(self, messages: Sequence[Message]) -> None:
        """Produce and wait for every acknowledgement (per-partition order is the given order)."""
        assert self.producer is not None
        started = time.monotonic()
        futures = [await self.producer.send(self.topic, value, key=key) for value, key in messages]
        metadata = await asyncio.gather(*futures)
        now = time.monotonic()
        for (value, key), m in zip(messages, metadata, strict=True):
            self.sent.append(Sent(value, key, m.partition, m.offset, started, now))

    async def feed(self, chunks: Sequence[Sequence[Message]], pause: float) -> None:
        """One chunk every `pause` seconds (plus the time its acknowledgements take)."""
        for chunk in chunks:
            await self.send(chunk)
            await asyncio.sleep(pause)

    def ends(self, sent_before: float = float("inf")) -> dict[int, int]:
        """Per partition, the offset after the last record acknowledged (and handed to the producer
        before `sent_before`: a chunk sent during a frozen broker is acknowledged after the thaw)."""
        end: dict[int, int] = {}
        for s in self.sent:
            if s.sent_at <= sent_before:
                end[s.partition] = max(end.get(s.partition, 0), s.offset + 1)
        return end

    def last_ack(self) -> float:
        return max(s.acked_at for s in self.sent)


@dataclass
class CommitTimeline:
    """The consumer group's committed offsets, sampled in the background."""

    stack: Stack
    partitions: int
    samples: list[tuple[float, dict[int, int]]] = field(default_factory=list)
    consumer: AIOKafkaConsumer | None = None
    task: "asyncio.Task[None] | None" = None

    @property
    def group(self) -> str:
        return f"group-{self.stack.name}"

    async def start(self) -> None:
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=self.stack.broker.bootstrap, group_id=self.group, enable_auto_commit=False
        )
        await self.consumer.start()
        self.task = asyncio.create_task(self._sample())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        if self.consumer is not None:
            await self.consumer.stop()

    async def _sample(self) -> None:
        assert self.consumer is not None
        while True:
            try:
                async with asyncio.timeout(COMMITTED_TIMEOUT):
                    snap = {}
                    for p in range(self.partitions):
                        tp = TopicPartition(self.stack.games_topic, p)
                        snap[p] = await self.consumer.committed(tp) or 0
                self.samples.append((time.monotonic(), snap))
            except (KafkaError, TimeoutError, OSError):
                pass  # the broker is frozen or the coordinator moved: no sample this time
            await asyncio.sleep(SAMPLE_EVERY)

    def committed_at(self, sent: Sent) -> float | None:
        """When the record was first seen committed."""
        for t, snap in self.samples:
            if snap.get(sent.partition, 0) > sent.offset:
                return t
        return None

    def latest(self) -> dict[int, int]:
        return self.samples[-1][1] if self.samples else {}

    async def wait_until(self, ends: dict[int, int], timeout: float) -> float:
        """Wait until everything in `ends` is committed; the monotonic time of that sample."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reached = self.reached(ends, since=0.0)
            if reached is not None:
                return reached
            await asyncio.sleep(SAMPLE_EVERY)
        raise AssertionError(f"offsets not committed within {timeout} s: {self.latest()} < {ends}")

    async def wait_some(self, timeout: float = 30.0) -> None:
        """The workers joined and committed something: faults then hit work in flight."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sum(self.latest().values()) > 0:
                return
            await asyncio.sleep(SAMPLE_EVERY)
        raise AssertionError(f"nothing committed within {timeout} s of starting the workers")

    def reached(self, ends: dict[int, int], since: float) -> float | None:
        for t, snap in self.samples:
            if t >= since and all(snap.get(p, 0) >= end for p, end in ends.items()):
                return t
        return None

    def first_progress(self, since: float) -> float | None:
        before = [sum(snap.values()) for t, snap in self.samples if t < since]
        baseline = before[-1] if before else 0
        for t, snap in self.samples:
            if t >= since and sum(snap.values()) > baseline:
                return t
        return None

    def recovery(self, fault_end: float, feeder: Feeder) -> tuple[float | None, float | None]:
        """(recovery, first progress) in seconds after `fault_end`, None if never seen.

        Read once the feeding is over, so that the records sent before `fault_end` are all acknowledged.
        """
        reached, first = self.reached(feeder.ends(sent_before=fault_end), fault_end), self.first_progress(fault_end)
        return (
            None if reached is None else reached - fault_end,
            None if first is None else first - fault_end,
        )


def describe(seconds: float | None) -> str:
    return "never" if seconds is None else f"{seconds:.1f} s"
