"""The consumer's commits when some batches wait for parked ratings (worker.stream.pipeline): per
partition in order, never past a batch still waiting. No I/O: the Kafka consumer is a recorder."""

import asyncio
from collections import deque

from aiokafka import TopicPartition

from worker.stream.consumer import RatingConsumer, _Done
from worker.stream.health import Health

P0, P1 = TopicPartition("games", 0), TopicPartition("games", 1)


class Commits:
    """What RatingConsumer asks of the Kafka consumer for its commits."""

    def __init__(self) -> None:
        self.made: list[dict[TopicPartition, int]] = []

    def assignment(self) -> set[TopicPartition]:
        return {P0, P1}

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        self.made.append(dict(offsets))


def consumer() -> tuple[RatingConsumer, Commits]:
    kafka = Commits()
    # Neither the pipeline nor the dead letters take part in a commit.
    worker = RatingConsumer(kafka, None, None, 100, 1000, Health(stall_seconds=100), future_allowance_seconds=0)  # type: ignore[arg-type]
    return worker, kafka


def done(offset: int, *waits: "asyncio.Future[None]") -> _Done:
    return _Done(offset, waits, frozenset(), float(offset), float(offset), 0.0)


async def test_a_batch_waiting_for_parked_ratings_holds_back_its_partitions_later_batches_only() -> None:
    worker, kafka = consumer()
    parked: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    worker.uncommitted = {P0: deque([done(10, parked), done(20)])}
    worker.uncommitted[P1] = deque([done(7)])
    await worker.commit_ready()
    assert kafka.made == [{P1: 7}]  # P0's first batch waits, and its second with it
    parked.set_result(None)
    await worker.commit_ready()
    assert kafka.made[-1] == {P0: 20} and P0 not in worker.uncommitted
    assert worker.oldest_pending == {}


async def test_a_failure_of_the_parked_publication_stops_the_worker_at_its_commit() -> None:
    worker, kafka = consumer()
    failed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    failed.set_exception(RuntimeError("Kafka refuses the record for good"))
    worker.uncommitted = {P0: deque([done(10, failed)])}
    try:
        await worker.commit_ready()
    except RuntimeError as e:
        assert "for good" in str(e)
    else:
        raise AssertionError("a failed publication was committed")
    assert kafka.made == []


async def test_a_wait_for_parked_ratings_is_by_design_only_so_long_and_not_beside_a_hung_batch() -> None:
    worker, _ = consumer()
    worker.max_wait = 30.0
    pending: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    waiting = _Done(10, (pending,), frozenset({"a/blitz"}), 0.0, 0.0, queued=100.0)
    assert worker.waits_by_design(waiting, clock=129.0)
    assert not worker.waits_by_design(waiting, clock=131.0)  # longer than any lease lasts: a stall
    worker.processing_since = 0.0  # a batch in flight for longer than the stall time: hung
    assert not worker.waits_by_design(waiting, clock=110.0)
    worker.processing_since = None
    pending.set_result(None)
    assert not worker.waits_by_design(waiting, clock=110.0)  # published: nothing to wait for
