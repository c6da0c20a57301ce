"""The external sort against Python's own sort, with budgets that force many runs or none."""

import random
from pathlib import Path

from worker.operate.external_sort import ExternalSort


def entries(n: int, seed: int) -> list[tuple[str, int, int, bool, bytes]]:
    rng = random.Random(seed)
    return [
        (f"g{rng.randrange(n // 3):05d}", rng.randrange(10**6), i, rng.random() < 0.5, rng.randbytes(rng.randrange(40)))
        for i in range(n)
    ]


def test_many_small_runs_merge_into_the_sorted_order_and_their_files_are_deleted(tmp_path: Path) -> None:
    data = entries(5000, seed=1)
    sort = ExternalSort(tmp_path / "runs", budget_bytes=20_000)
    for e in data:
        sort.add(e, len(e[0]) + len(e[4]))
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
    sort = ExternalSort(tmp_path, budget_bytes=1)  # every entry its own run
    for e in data:
        sort.add(e, 0)
    assert len(sort.runs) == 2
    assert list(sort.merged()) == sorted(data)
