"""The worker's last log line: what it did with the games it consumed, in words."""

from collections import Counter

from worker.service.process import _games_summary


def test_the_summary_counts_games_by_verdict_with_plurals() -> None:
    assert _games_summary(Counter()) == "no game consumed"
    assert _games_summary(Counter({"applied": 1})) == "1 game consumed: applied 1"
    totals = Counter({"applied": 3, "duplicate": 2, "conflicting_duplicate": 1})
    assert _games_summary(totals) == "6 games consumed: applied 3, conflicting duplicate 1, duplicate 2"
