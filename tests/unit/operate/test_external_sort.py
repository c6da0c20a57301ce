"""The external sort against Python's own sort, with budgets that force many runs or none, and
its floor: a budget under MIN_BUDGET_BYTES is refused."""

import random
from pathlib import Path

import pytest

from worker.operate.external_sort import MIN_BUDGET_BYTES, ExternalSort


def entries(n: int, seed: int) -> list[tuple[str, int, int, bool, bytes]]:
    rng = random.Random(seed)
    return [
        (f"g{rng.randrange(n // 3):05d}", rng.randrange(10**6), i, rng.random() < 0.5, rng.randbytes(rng.randrange(40)))
        for i in range(n)
    ]


def test_many_small_runs_merge_into_the_sorted_order_and_their_files_are_deleted(tmp_path: Path) -> None:
    data = entries(5000, seed=1)
    sort = ExternalSort(tmp_path / "runs", budget_bytes=MIN_BUDGET_BYTES)
    for e in data:  # each counted as a 150th of the budget (the sort takes the caller's sizes): ~33 runs
        sort.add(e, MIN_BUDGET_BYTES // 150)
    assert len(sort.runs) == sort.spilled_runs > 20  # the budget forced spills
    written = sum(p.stat().st_size for p in sort.runs)
    assert written == sort.spilled_bytes > 5000 * 10
    assert list(sort.merged()) == sorted(data)
    assert not list((tmp_path / "runs").iterdir())
    assert sort.runs == [] and sort.spilled_runs > 20  # merged and deleted, still counted


def test_within_the_budget_nothing_is_written(tmp_path: Path) -> None:
    data = entries(300, seed=2)
    sort = ExternalSort(tmp_path / "runs", budget_bytes=10**9)
    for e in data:
        sort.add(e, 10)
    assert sort.runs == [] and not (tmp_path / "runs").exists()
    assert list(sort.merged()) == sorted(data)


def test_types_survive_the_files(tmp_path: Path) -> None:
    """str stays str and bytes stays bytes (the history's ids and raw records), tuples stay tuples."""
    data = [("é-id", 1, "25", b"\xff\x00raw", True), ("a", -5, "", b"", False)]
    sort = ExternalSort(tmp_path, budget_bytes=MIN_BUDGET_BYTES)
    for e in data:
        sort.add(e, MIN_BUDGET_BYTES)  # every entry its own run
    assert len(sort.runs) == 2
    assert list(sort.merged()) == sorted(data)


@pytest.mark.parametrize("budget", [MIN_BUDGET_BYTES - 1, 1, 0, -1])
def test_a_budget_under_the_floor_is_refused(tmp_path: Path, budget: int) -> None:
    """Under it, every entry or few would be a run of its own, and the merge opens every run at once."""
    with pytest.raises(ValueError, match=rf"^a sort's budget of {budget} bytes is under its floor of 8388608 bytes"):
        ExternalSort(tmp_path, budget)
    assert not tmp_path.joinpath("run-00000").exists()


def test_the_floor_is_8_mib_and_is_taken(tmp_path: Path) -> None:
    assert MIN_BUDGET_BYTES == 8 * 1024 * 1024  # half of rebuild's least --memory-mb (16): one sort's share
    ExternalSort(tmp_path, MIN_BUDGET_BYTES)
