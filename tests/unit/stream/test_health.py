"""Liveness and readiness decisions, with time passed in."""

from worker.stream.health import LOOP_BLOCKED_SECONDS, Health


def healthy(stall: float = 100.0) -> Health:
    h = Health(stall_seconds=stall, kafka_ok=True, redis_ok=True)
    h.assigned({0, 1}, now=0.0)
    return h


def test_not_ready_until_the_group_is_joined_and_dependencies_answer() -> None:
    h = Health(stall_seconds=100)
    assert h.ready() == (False, "kafka unreachable")
    h.kafka_ok = True
    assert h.ready() == (False, "redis unreachable")
    h.redis_ok = True
    assert h.ready() == (False, "not yet a member of the consumer group")
    h.assigned({3}, now=0.0)
    assert h.ready() == (True, "ready: 1 partition")


def test_a_member_holding_no_partition_is_ready() -> None:
    """With as many replicas as partitions, a rolling update's surge pod holds none: were it
    unready, the rollout (maxUnavailable 0) would wait for it for ever."""
    h = Health(stall_seconds=100, kafka_ok=True, redis_ok=True)
    h.assigned(set(), now=0.0)
    ok, reason = h.ready()
    assert ok and "holding no partition" in reason
    h.assigned({0, 1}, now=1.0)
    h.revoked({0, 1})
    assert h.ready()[0]  # revoked before a new assignment: still a member


def test_a_partition_with_lag_and_no_progress_for_the_stall_time_is_not_live() -> None:
    h = healthy(stall=100)
    h.lag(1, 50, now=0.0)
    assert h.live(now=100.0)[0]  # exactly the stall time: not yet
    ok, reason = h.live(now=100.5)
    assert not ok and "[1]" in reason
    assert h.stall(1, now=100.5) == 100.5 and h.stall(0, now=100.5) == 0.0
    h.progressed(1, now=100.5)
    assert h.live(now=150.0)[0]
    assert h.stall(1, now=150.0) == 49.5


def test_the_stall_counts_from_the_oldest_waiting_record_not_from_the_last_commit() -> None:
    """A partition idle for an hour after its last commit is not stalled the moment a record arrives."""
    h = healthy(stall=100)
    h.progressed(0, now=10.0)
    h.lag(0, 0, now=20.0)
    h.lag(0, 3, now=3600.0)  # first seen waiting an hour after the last commit
    assert h.stall(0, now=3601.0) == 1.0
    assert h.live(now=3601.0)[0]
    h.lag(0, 0, now=3602.0)  # done: no stall, and the next wait starts a new clock
    h.lag(0, 1, now=5000.0)
    assert h.stall(0, now=5050.0) == 50.0


def test_a_partition_without_lag_is_never_stalled() -> None:
    h = healthy(stall=10)
    h.lag(0, 0, now=0.0)
    assert h.live(now=10_000.0)[0]
    assert h.stall(0, now=10_000.0) == 0.0


def test_an_unreachable_dependency_makes_the_pod_unready_not_dead() -> None:
    h = healthy(stall=10)
    h.lag(0, 500, now=0.0)
    h.answered(kafka=True, redis=False, now=5.0)
    assert h.live(now=10_000.0)[0]
    assert h.stall(0, now=10_000.0) == 0.0  # waiting, not stalled: the exported stall agrees
    assert not h.ready()[0]


def test_the_stall_clock_restarts_when_a_dependency_comes_back() -> None:
    """After a ten-minute Redis outage the waiting partitions are not all stalled at once."""
    h = healthy(stall=100)
    h.lag(0, 500, now=0.0)
    h.answered(kafka=True, redis=False, now=2.0)
    h.answered(kafka=True, redis=False, now=600.0)
    h.answered(kafka=True, redis=True, now=602.0)
    assert h.stall(0, now=603.0) == 3.0
    assert h.live(now=603.0)[0]
    assert not h.live(now=700.5)[0]


def test_a_blocked_event_loop_is_not_live() -> None:
    h = healthy()
    h.loop_lag = LOOP_BLOCKED_SECONDS + 0.1
    ok, reason = h.live(now=0.0)
    assert not ok and "blocked" in reason


def test_a_new_assignment_keeps_the_clocks_of_partitions_still_held() -> None:
    h = healthy(stall=10)
    h.lag(0, 1, now=55.0)
    h.progressed(0, now=58.0)
    h.assigned({0, 2}, now=60.0)  # 0 keeps its clock at 58; 2 starts when its records are seen
    h.lag(2, 1, now=61.0)
    assert h.live(now=65.0)[0]
    ok, reason = h.live(now=68.5)
    assert not ok and "[2]" not in reason and "[0]" in reason
    h.revoked({0})
    assert h.live(now=70.0)[0] and h.stall(0, now=70.0) == 0.0


def test_a_partition_whose_commit_waits_for_a_publication_lease_is_not_stalled() -> None:
    """A rating held one lease after a send of unknown outcome (or waiting for another process's
    lease) holds its partition's commit back by design: the clock restarts while it waits."""
    h = healthy(stall=100)
    h.lag(0, 5, now=0.0)
    h.waiting(0, now=90.0)
    assert h.stall(0, now=150.0) == 60.0 and h.live(now=150.0)[0]
    assert not h.live(now=190.5)[0]  # no longer waiting, no commit: a stall again
