"""`rating-worker close-period`'s runs, as an operator and the workers' metrics see them, against a
real broker and redis-server: every step of a run is a JSON log line on stderr with its `step`,
the last one `done` with the run's `outcome`; and every run's outcome is counted in Redis
(`{prefix}closes`, once a command of the system has written under its prefix), with the
durations and ratings of the last close (the workers export them:
tests/integration/service/alerts/test_closes.py). What a close does is tested in
tests/integration/stream/test_fide.py."""

from typing import Any

import pytest

from tests.support.closes import FIDE, PREFIX, close_period, due_month, game, steps
from tests.support.stack import Stack
from worker.store import keys

pytestmark = pytest.mark.integration


def named(lines: list[dict[str, Any]]) -> list[str]:
    return [line["step"] for line in lines]


@pytest.mark.timeout(200)
async def test_every_run_logs_its_steps_as_json_lines_and_counts_its_outcome_in_redis(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=4)
    due = due_month()
    # A new deployment: a refused run writes nothing, its outcome not even (a key under the prefix
    # would make it look like the arena's).
    first = close_period(stack, "2099-01")
    assert first.returncode == 2, first.stderr.decode(errors="replace")
    assert [line["step"] for line in steps(first)] == ["refused", "done", "record"], steps(first)
    assert stack.redis_client().keys(f"{PREFIX}*") == []

    await stack.produce([game("g1", "A", "B", due)])

    # No worker yet: the drain waits for the game nobody applies, then gives up.
    timed_out = close_period(stack, "--due", close_drain_timeout_seconds=1)
    assert timed_out.returncode == 1, timed_out.stderr.decode(errors="replace")
    lines = steps(timed_out)
    assert named(lines) == ["drain_start", "drain_progress", "drain_timeout", "done"], lines
    assert lines[0]["partitions"] == 1
    assert (lines[2]["level"], lines[2]["partitions"], lines[2]["behind"]) == ("error", 1, 1)
    assert lines[-1]["outcome"] == "drain_timed_out"

    refused = close_period(stack, "2099-01")
    assert refused.returncode == 2, refused.stderr.decode(errors="replace")
    lines = steps(refused)
    assert named(lines) == ["refused", "done"], lines
    assert lines[0]["period"] == "2099-01" and "not due yet" in lines[0]["message"]
    assert lines[-1]["outcome"] == "refused"

    unreachable = close_period(stack, "--due", kafka_bootstrap_servers="127.0.0.1:1", command_retry_seconds=1)
    assert unreachable.returncode == 1, unreachable.stderr.decode(errors="replace")
    lines = steps(unreachable)
    assert named(lines) == ["failed", "done"], lines
    assert lines[0]["level"] == "error" and lines[-1]["outcome"] == "failed"

    stack.start_worker(**FIDE)
    await stack.wait_committed(await stack.end_offsets(1), timeout=60)
    closed = close_period(stack, "--due")
    assert closed.returncode == 0, closed.stderr.decode(errors="replace")
    lines = steps(closed)
    assert named(lines) == ["drain_start", "drain_end", "mark", "closing", "chunk", "finished", "done"], lines
    by_step = {line["step"]: line for line in lines}
    assert by_step["mark"]["period"] == due
    assert (by_step["closing"]["period"], by_step["closing"]["ratings"]) == (due, 2)
    assert by_step["chunk"]["ratings"] == 2 and by_step["finished"]["ratings"] == 2
    assert (by_step["done"]["outcome"], by_step["done"]["ratings"]) == ("closed", 2)

    again = close_period(stack, "--due")
    assert again.returncode == 0, again.stderr.decode(errors="replace")
    assert named(steps(again)) == ["drain_start", "drain_end", "nothing_due", "done"], steps(again)
    assert steps(again)[-1]["outcome"] == "nothing_due"

    stored = stack.redis_client().hgetall(keys.closes_key(PREFIX))
    record = {(k.decode() if isinstance(k, bytes) else k): float(v) for k, v in stored.items()}
    seconds, drain = record.pop("seconds"), record.pop("drain_seconds")
    assert record == {
        "drain_timed_out": 1,
        "refused": 1,
        "failed": 1,
        "closed": 1,
        "nothing_due": 1,
        "ratings": 2,  # of the run that closed
    }
    assert seconds == pytest.approx(by_step["done"]["seconds"], abs=0.001)  # of the run that closed
    assert drain > 0  # of the last run that drained: the one that found nothing to close
