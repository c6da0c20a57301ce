"""`rating-worker dead-letter-unreadable --partition P --offset O`: the way past a record the
Kafka client cannot read, which has its input partition paused (`worker.stream.unreadable`).

The command does not read or commit anything itself: Kafka accepts offset commits only from a
member of the consumer group, so it is the worker holding the paused partition that does it,
inside its group, while the others go on. The command:

1. checks the group's committed offset of the partition: past O, there is nothing to do;
2. writes the instruction `pass O` to Redis (`{prefix}unreadable:{topic}:{P}`), where it stays
   until a worker paused at exactly that offset carries it out (the one holding the partition
   now, or its next owner, which pauses at the same record);
3. waits for the worker's report (`done O: ...`), prints it, and removes it.

The worker reads the partition's stored bytes from O through the batch holding the unreadable
record; the records it could have read go through the usual path (rated, or dead-lettered for
their own reasons), each unreadable one is dead-lettered `invalid_encoding` with its original
key and value; once all of it is committed, it commits the offset past the batch and resumes.
"""

import asyncio
import time
from dataclasses import dataclass

from aiokafka import TopicPartition

from worker.operate.redis_ops import connected
from worker.operate.topic_scan import group_reader
from worker.service.owner import own_prefix
from worker.settings import WorkerSettings
from worker.store import keys
from worker.stream import unreadable
from worker.stream.retry import KAFKA_READ, REDIS_COMMAND, retrying

POLL_SECONDS = 0.5  # how often the worker's report is looked for (a worker looks for instructions every second)


class NotDone(Exception):
    """No worker carried the instruction out in time: it stays in Redis (the message says what to check)."""


@dataclass(frozen=True)
class Outcome:
    committed: int | None  # the group's committed offset of the partition, when the command started
    report: str | None  # the worker's report; None: the partition was already past the offset


async def committed_offset(settings: WorkerSettings, tp: TopicPartition) -> int | None:
    """The group's committed offset of `tp` (None: none committed), asked as a member-less client."""
    async with group_reader(settings) as consumer:
        await retrying(KAFKA_READ, consumer.topics)  # the metadata of every topic
        partitions = consumer.partitions_for_topic(tp.topic)
        if not partitions or tp.partition not in partitions:
            raise NotDone(f"{tp.topic} has no partition {tp.partition} (RATING_TOPIC_GAMES)")
        offset: int | None = await retrying(KAFKA_READ, consumer.committed, tp)
        return offset


async def dead_letter_unreadable(settings: WorkerSettings, partition: int, offset: int, wait: float) -> Outcome:
    tp = TopicPartition(settings.topic_games, partition)
    committed = await committed_offset(settings, tp)
    if committed is not None and committed > offset:
        return Outcome(committed, None)
    prefix = settings.redis_key_prefix
    async with connected(settings) as redis:
        await own_prefix(redis, prefix, settings.spec().name, write=True, parameters=settings.parameters())
        await retrying(REDIS_COMMAND, unreadable.instruct, redis, prefix, tp, offset)
        deadline = time.monotonic() + wait
        while True:
            report = await retrying(REDIS_COMMAND, unreadable.reported, redis, prefix, tp, offset)
            if report is not None:
                return Outcome(committed, report)
            if time.monotonic() >= deadline:
                raise NotDone(
                    f"no worker has carried it out in {wait:.0f} s; the instruction stays in Redis "
                    f"({keys.unreadable_key(prefix, tp.topic, tp.partition)}) for the worker that pauses "
                    f"{tp.topic} partition {partition} at offset {offset}: is a worker of group "
                    f"{settings.kafka_group_id} running, and does its log name that offset? Run the same command "
                    "again to wait for its report"
                )
            await asyncio.sleep(POLL_SECONDS)
