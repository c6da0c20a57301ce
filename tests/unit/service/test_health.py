"""Liveness and readiness decisions, with time passed in."""

from worker.service.health import LOOP_BLOCKED_SECONDS, Health


def healthy(stall: float = 100.0) -> Health:
    h = Health(stall_seconds=stall, kafka_ok=True, redis_ok=True)
    h.assigned({0, 1}, now=0.0)
    return h


def test_not_ready_until_partitions_are_assigned_and_dependencies_answer() -> None:
    h = Health(stall_seconds=100)
    assert h.ready() == (False, "kafka unreachable")
    h.kafka_ok = True
    assert h.ready() == (False, "redis unreachable")
    h.redis_ok = True
    assert h.ready() == (False, "no partitions assigned")
    h.assigned({3}, now=0.0)
    assert h.ready()[0]


def test_a_partition_with_lag_and_no_progress_for_the_stall_time_is_not_live() -> None:
    h = healthy(stall=100)
    h.lag(1, 50)
    assert h.live(now=100.0)[0]  # exactly the stall time: not yet
    ok, reason = h.live(now=100.5)
    assert not ok and "[1]" in reason
    h.progressed(1, now=100.5)
    assert h.live(now=150.0)[0]


def test_a_partition_without_lag_is_never_stalled() -> None:
    h = healthy(stall=10)
    assert h.live(now=10_000.0)[0]


def test_an_unreachable_dependency_makes_the_pod_unready_not_dead() -> None:
    h = healthy(stall=10)
    h.lag(0, 500)
    h.redis_ok = False
    assert h.live(now=10_000.0)[0]
    assert not h.ready()[0]


def test_a_blocked_event_loop_is_not_live() -> None:
    h = healthy()
    h.loop_lag = LOOP_BLOCKED_SECONDS + 0.1
    ok, reason = h.live(now=0.0)
    assert not ok and "blocked" in reason


def test_a_new_assignment_keeps_the_progress_of_partitions_still_held() -> None:
    h = healthy(stall=10)
    h.progressed(0, now=58.0)
    h.assigned({0, 2}, now=60.0)  # 0 keeps its progress at 58; 2 starts its clock at 60
    h.lag(0, 1)
    h.lag(2, 1)
    assert h.live(now=65.0)[0]
    ok, reason = h.live(now=68.5)
    assert not ok and "[2]" not in reason and "[0]" in reason
