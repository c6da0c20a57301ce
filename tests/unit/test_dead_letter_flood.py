"""The dead-letter flood alarm: a count over a sliding minute, with time passed in."""

import logging

import pytest

from worker.stream.dead_letters import DeadLetters


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_alarm_rises_above_the_threshold_within_a_minute_and_falls_after(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    letters = DeadLetters(producer=None, topic="dlq", max_bytes=100, alarm_per_minute=10, clock=clock)
    letters._watch_flood(10)
    assert not letters.flooding  # exactly the threshold is not a flood
    clock.now += 30
    with caplog.at_level(logging.ERROR):
        letters._watch_flood(1)
    assert letters.flooding
    assert "dead-letter flood" in caplog.text
    clock.now += 31  # the first ten are now more than a minute old
    letters._watch_flood(0)
    assert not letters.flooding


def test_a_steady_trickle_under_the_threshold_never_raises_the_alarm() -> None:
    clock = Clock()
    letters = DeadLetters(producer=None, topic="dlq", max_bytes=100, alarm_per_minute=10, clock=clock)
    for _ in range(100):
        letters._watch_flood(1)
        clock.now += 7  # ~8.6 a minute
        assert not letters.flooding
