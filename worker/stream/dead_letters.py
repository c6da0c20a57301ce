"""The dead-letter topic: bad input parked with its reason, and an alarm when it floods.

A dead letter copies the bad record's key, value and headers, then adds the five error
headers (contract, "Bad input"). It must also fit what Kafka accepts: a record larger than
the producer's request limit, or than the broker's, is refused for good, and retrying it
would block its partition for ever. So a dead letter is cut to fit before it is sent (original
headers that leave no room for the value, then the value, then the other original headers,
then the key) and says what was cut in a sixth header,
`error.truncated`; if the broker still refuses its size, it is cut to half and sent again.
"""

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aiokafka import AIOKafkaProducer
from aiokafka.errors import MessageSizeTooLargeError, RecordTooLargeError
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from worker import metrics
from worker.engine.decoder import BadInput, ErrorKind
from worker.stream.retry import KAFKA_DEAD_LETTER, retrying

log = logging.getLogger(__name__)
FLOOD_WINDOW_SECONDS = 60.0
ERROR_HEADERS = ("error.kind", "error.message", "source.topic", "source.partition", "source.offset")
TRUNCATED_HEADER = "error.truncated"
# A dead letter the broker refuses for its size is cut to half, down to this: by then it is
# the error headers alone, which every broker takes.
SMALLEST_BUDGET = 4096
NOTE_BYTES = 160  # the longest `error.truncated` note: three short clauses

Headers = list[tuple[str, bytes]]


@dataclass(frozen=True, slots=True)
class Source:
    """Where an input record came from, and its bytes, as a dead letter must copy them."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int = 0  # the record's timestamp, in ms
    headers: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True, slots=True)
class DeadLetter:
    source: Source
    error: BadInput


def record_size(key: bytes | None, value: bytes | None, headers: Headers) -> int:
    """An upper bound of the record's size in a produce request, as the producer estimates it."""
    size: int = DefaultRecordBatchBuilder.estimate_size_in_bytes(key, value, headers)
    return size


def dead_letter_record(letter: DeadLetter, max_bytes: int, budget: int) -> tuple[bytes | None, bytes | None, Headers]:
    """The key, value and headers of `letter`'s record, cut to fit `budget` bytes.

    The original headers come first, but one named like an error header is renamed
    `original.<name>`; a `too_large` value is cut to `max_bytes` (the contract). Then, if the
    record is still over the budget: original headers that leave no room for any of the value
    are dropped, the value is cut to the room left, the other original headers are dropped,
    the key is cut; and `error.truncated` says what was cut.
    """
    source, error = letter.source, letter.error
    key, value = source.key, source.value
    if error.kind is ErrorKind.TOO_LARGE and value is not None:
        value = value[:max_bytes]
    original = [(f"original.{k}" if k in ERROR_HEADERS or k == TRUNCATED_HEADER else k, v) for k, v in source.headers]
    errors = [
        ("error.kind", str(error.kind).encode()),
        ("error.message", error.message.encode()),
        ("source.topic", source.topic.encode()),
        ("source.partition", str(source.partition).encode()),
        ("source.offset", str(source.offset).encode()),
    ]
    if record_size(key, value, original + errors) <= budget:
        return key, value, original + errors

    def over() -> int:  # bytes over the budget, counting the longest note
        return record_size(key, value, [*original, *errors, (TRUNCATED_HEADER, b"x" * NOTE_BYTES)]) - budget

    cuts = []
    note = (TRUNCATED_HEADER, b"x" * NOTE_BYTES)
    if over() > 0 and original and record_size(key, None, [*original, *errors, note]) > budget:
        # The key and headers alone do not fit: the headers go first, so that the value keeps
        # whatever room is left (it says more about the bad record than its headers).
        cuts.append(f"{len(original)} original headers dropped")
        original = []
    if over() > 0 and value:
        kept = max(0, len(value) - over())
        cuts.insert(0, f"value: first {kept} of {len(value)} bytes kept")
        value = value[:kept]
    if over() > 0 and original:
        cuts.append(f"{len(original)} original headers dropped")
        original = []
    if over() > 0 and key:
        kept = max(0, len(key) - over())
        cuts.append(f"key: first {kept} of {len(key)} bytes kept")
        key = key[:kept]
    if over() > 0:
        raise ValueError(f"a dead letter cannot fit {budget} bytes even without its key, value and headers")
    return key, value, [*original, *errors, (TRUNCATED_HEADER, "; ".join(cuts).encode())]


class DeadLetters:
    def __init__(
        self,
        producer: AIOKafkaProducer,
        topic: str,
        max_bytes: int,
        alarm_per_minute: int,
        clock: Callable[[], float] = time.monotonic,
        budget: int = 1024 * 1024,
    ) -> None:
        self.producer = producer
        self.topic = topic
        self.max_bytes = max_bytes
        self.alarm_per_minute = alarm_per_minute
        self.clock = clock
        self.budget = budget  # the largest record the producer may send (RATING_KAFKA_MAX_REQUEST_BYTES)
        self.recent: deque[float] = deque()
        self.flooding = False

    async def send(self, letters: Sequence[DeadLetter]) -> None:
        """Publish and wait for Kafka's acknowledgement; retried until it succeeds."""
        if letters:
            await retrying(KAFKA_DEAD_LETTER, self._send, letters)
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
        futures = [await self._send_one(letter, self.budget) for letter in letters]
        for letter, first in zip(letters, futures, strict=True):
            budget, future = self.budget, first
            while True:
                try:
                    await future
                    break
                except (MessageSizeTooLargeError, RecordTooLargeError) as e:
                    # The broker takes less than the producer may send (its max.message.bytes).
                    if budget <= SMALLEST_BUDGET:
                        raise
                    budget = max(SMALLEST_BUDGET, budget // 2)
                    log.warning("the broker refused a dead letter's size (%s); cutting it to %d bytes", e, budget)
                    future = await self._send_one(letter, budget)

    async def _send_one(self, letter: DeadLetter, budget: int) -> "asyncio.Future[object]":
        key, value, headers = dead_letter_record(letter, self.max_bytes, budget)
        future: asyncio.Future[object] = await self.producer.send(self.topic, value=value, key=key, headers=headers)
        return future

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
