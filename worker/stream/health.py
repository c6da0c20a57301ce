"""Health that means progress: what `/livez` and `/readyz` answer (`worker.service.health` serves
them with `/metrics` on the metrics port, and tells this module whether Kafka and Redis answer).

- `/readyz` is 200 once Kafka and Redis answer and the consumer has joined its group, holding
  partitions or not; 503 otherwise. A member with no partition is ready: with as many replicas
  as partitions, a rolling update's surge pod gets none until an old pod leaves, and a
  readiness that waited for partitions would stall the rollout for good.
- `/livez` is 503 when the event loop was blocked (it also cannot answer at all while it is
  blocked, which the probe's timeout counts as a failure), or when a partition has had records
  waiting with no commit for RATING_STALL_SECONDS **while Kafka and Redis answer** (their
  pings, and no call of the worker to them failing and being retried; counted
  from the later of its oldest waiting record first seen and its last commit): an outage of a
  dependency makes the pods unready, never restarts them all. Nor is a partition stalled while
  its commit waits for events that wait out a publication lease (`worker.stream.pipeline`).
  The same stall is exported per partition (`rating_partition_stall_seconds`), so the alert on
  it and the probe agree.

The consumer keeps it up to date as partitions are assigned, lag and commit
(`worker.stream.consumer`). Time is passed in (`now`) to the decisions, so they are tested without
clocks.
"""

from dataclasses import dataclass, field

LOOP_BLOCKED_SECONDS = 5.0  # a sample late by more than this means the loop was blocked


@dataclass
class Waiting:
    """One assigned partition: records behind, and since when they count as stalled."""

    lag: int = 0
    since: float | None = None  # monotonic; None while the partition has no lag


@dataclass
class Health:
    stall_seconds: float
    kafka_ok: bool = False
    redis_ok: bool = False
    loop_lag: float = 0.0
    partitions: dict[int, Waiting] = field(default_factory=dict)
    joined: bool = False  # the consumer has been through a rebalance (with or without partitions)

    def assigned(self, partitions: set[int], now: float) -> None:
        """The partitions held now (none is an assignment too); those still held keep their clocks."""
        self.joined = True
        self.partitions = {p: self.partitions.get(p) or Waiting() for p in partitions}

    def revoked(self, partitions: set[int]) -> None:
        for p in partitions:
            self.partitions.pop(p, None)

    def lag(self, partition: int, records: int, now: float) -> None:
        """A lag sample: the stall clock starts when records are first seen waiting."""
        waiting = self.partitions.get(partition)
        if waiting is None:
            return
        waiting.lag = records
        if records == 0:
            waiting.since = None
        elif waiting.since is None:
            waiting.since = now

    def waiting(self, partition: int, now: float) -> None:
        """The partition's oldest uncommitted batch waits, by design, for ratings whose publication
        waits out a lease (a hold after a send of unknown outcome, or another process's lease;
        `worker.stream.consumer.waits_by_design`): progress delayed, not a stall. Its clock
        restarts, as at a commit."""
        self.progressed(partition, now)

    def progressed(self, partition: int, now: float) -> None:
        """A commit: whatever still waits counts from now."""
        waiting = self.partitions.get(partition)
        if waiting is not None and waiting.since is not None:
            waiting.since = now

    def answered(self, kafka: bool, redis: bool, now: float) -> None:
        """The dependencies' last check. While one is away nothing stalls: the clocks restart,
        so that its return does not find every waiting partition stalled at once."""
        self.kafka_ok, self.redis_ok = kafka, redis
        if not (kafka and redis):
            for waiting in self.partitions.values():
                if waiting.since is not None:
                    waiting.since = now

    def stall(self, partition: int, now: float) -> float:
        """How long the partition has had records waiting with no commit while Kafka and Redis
        answer: from the later of its oldest waiting record first seen and its last commit.
        /livez fails above `stall_seconds`; `rating_partition_stall_seconds` exports it."""
        waiting = self.partitions.get(partition)
        if waiting is None or waiting.since is None or not (self.kafka_ok and self.redis_ok):
            return 0.0
        return max(0.0, now - waiting.since)

    def ready(self) -> tuple[bool, str]:
        if not self.kafka_ok:
            return False, "kafka unreachable"
        if not self.redis_ok:
            return False, "redis unreachable"
        if not self.joined:
            return False, "not yet a member of the consumer group"
        if not self.partitions:
            return True, "ready: a member of the group holding no partition (more members than partitions)"
        held = len(self.partitions)
        return True, f"ready: {held} partition{'s' if held != 1 else ''}"

    def live(self, now: float) -> tuple[bool, str]:
        if self.loop_lag > LOOP_BLOCKED_SECONDS:
            return False, f"event loop blocked for {self.loop_lag:.1f} s"
        if not (self.kafka_ok and self.redis_ok):
            return True, "a dependency is unreachable: waiting, not stalled"
        stalled = sorted(p for p in self.partitions if self.stall(p, now) > self.stall_seconds)
        if stalled:
            return False, f"partitions {stalled} have lag and made no progress for {self.stall_seconds:.0f} s"
        return True, "live"
