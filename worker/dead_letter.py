"""The dead-letter topic: bad input parked with its reason, and an alarm when it floods."""

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aiokafka import AIOKafkaProducer

from worker import metrics
from worker.decode import BadInput, ErrorKind
from worker.retry import retrying

log = logging.getLogger(__name__)
FLOOD_WINDOW_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class Source:
    """Where an input record came from, and its bytes, as a dead letter must copy them."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int = 0  # the record's timestamp, in ms


@dataclass(frozen=True, slots=True)
class DeadLetter:
    source: Source
    error: BadInput


class DeadLetters:
    def __init__(
        self,
        producer: AIOKafkaProducer,
        topic: str,
        max_bytes: int,
        alarm_per_minute: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.producer = producer
        self.topic = topic
        self.max_bytes = max_bytes
        self.alarm_per_minute = alarm_per_minute
        self.clock = clock
        self.recent: deque[float] = deque()
        self.flooding = False

    async def send(self, letters: Sequence[DeadLetter]) -> None:
        """Publish and wait for Kafka's acknowledgement; retried until it succeeds."""
        if letters:
            await retrying("dead-lettering", self._send, letters)
        for letter in letters:
            metrics.DEAD_LETTERS.labels(letter.error.kind).inc()
            log.warning(
                "dead-lettered: %s",
                letter.error,
                extra={
                    "partition": letter.source.partition,
                    "offset": letter.source.offset,
                    "error_kind": str(letter.error.kind),
                },
            )
        self._watch_flood(len(letters))

    async def _send(self, letters: Sequence[DeadLetter]) -> None:
        futures = []
        for letter in letters:
            source = letter.source
            value = source.value
            if letter.error.kind is ErrorKind.TOO_LARGE and value is not None:
                value = value[: self.max_bytes]
            headers = [
                ("error.kind", str(letter.error.kind).encode()),
                ("error.message", letter.error.message.encode()),
                ("source.topic", source.topic.encode()),
                ("source.partition", str(source.partition).encode()),
                ("source.offset", str(source.offset).encode()),
            ]
            futures.append(await self.producer.send(self.topic, value=value, key=source.key, headers=headers))
        await asyncio.gather(*futures)

    def _watch_flood(self, count: int) -> None:
        now = self.clock()
        self.recent.extend([now] * count)
        while self.recent and self.recent[0] < now - FLOOD_WINDOW_SECONDS:
            self.recent.popleft()
        flooding = len(self.recent) > self.alarm_per_minute
        if flooding and not self.flooding:
            log.error(
                "dead-letter flood: %d bad records in the last minute (alarm above %d); an upstream producer "
                "is probably broken: look at the error.kind headers on %s",
                len(self.recent),
                self.alarm_per_minute,
                self.topic,
            )
        self.flooding = flooding
        metrics.DEAD_LETTER_FLOOD.set(1 if flooding else 0)
