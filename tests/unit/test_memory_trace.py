"""The snapshot comparison of the tracemalloc mode tells a leak from a working set that grew."""

import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from worker.service.memory_trace import compare, parse_name, snapshot_name

kept: list[bytes] = []  # a leak: something of every game, kept
working: list[bytes] = []  # a working set: replaced, grown once


def leak(games: int) -> None:
    kept.extend(bytes(100) for _ in range(games))


def batch(size: int) -> None:
    working[:] = [bytes(100) for _ in range(size)]


@pytest.fixture
def tracing() -> Iterator[None]:
    tracemalloc.start(1)
    yield
    tracemalloc.stop()
    kept.clear()
    working.clear()


def test_a_site_that_keeps_every_game_is_a_leak_and_one_that_grew_once_is_not(tmp_path: Path, tracing: None) -> None:
    paths, games = [], 0
    for n, batch_size in enumerate((100, 1000, 1000)):  # the working set grows once, then holds
        leak(2000)
        batch(batch_size)
        games += 2000
        paths.append(tmp_path / snapshot_name(123, n, games))
        tracemalloc.take_snapshot().dump(str(paths[-1]))
    counted, totals, sites = compare(paths)
    assert counted == [2000, 4000, 6000]
    assert totals[2] > totals[0]
    by_function = {s.site: s for s in sites}
    leaking = [s for s in by_function.values() if s.grows_with_games]
    assert len(leaking) == 1 and "test_memory_trace.py" in leaking[0].site
    assert leaking[0].per_thousand[0] > 100_000  # 100 B a game, and a bytes object's own overhead
    grew_once = [s for s in sites if s.sizes[1] - s.sizes[0] > 50_000 and not s.grows_with_games]
    assert grew_once, "the working set's site is listed, not taken for a leak"


def test_names_carry_the_pid_the_count_and_the_games() -> None:
    assert parse_name(snapshot_name(41, 2, 123_456)) == (41, 2, 123_456)
