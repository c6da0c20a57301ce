"""fide's demo traffic (`worker.embedded.demo_months`): a year of months before the present in
fast-forward, a month every so many games, then games dated as they are made, never later; no
close line reaches the input topic (a bad control line does, to be dead-lettered)."""

import json
from collections import Counter
from datetime import UTC, datetime

from worker.embedded.demo_months import MONTHS_BACK, fast_months, without_close_lines
from worker.systems.period_traffic import month_index, month_period


def test_the_games_run_a_year_of_months_at_the_pace_asked_then_stay_at_the_present() -> None:
    now = datetime.now(UTC)
    rate, month_seconds = 10.0, 6.0  # 60 games a month
    sim = fast_months(40, 3, rate, month_seconds, now)
    lines = list(without_close_lines(sim.game_lines(60 * MONTHS_BACK * 3)))
    games = [json.loads(line) for line in lines]  # no close line, and no bad line asked for
    dated = [datetime.fromisoformat(g["finished_at"]) for g in games]
    months = Counter(month_period(month_index(d)) for d in dated)
    first = month_period(month_index(now) - MONTHS_BACK)
    assert min(months) == first
    full = [n for month, n in months.items() if first < month < month_period(month_index(now) - 1)]
    assert len(full) >= MONTHS_BACK - 3 and all(30 <= n <= 90 for n in full), months  # about 60 each
    assert max(dated) <= datetime.now(UTC)  # the present reached, never passed
    assert months[month_period(month_index(datetime.now(UTC)))] > 60 * MONTHS_BACK // 2  # the rest: now


def test_no_close_line_reaches_the_input_but_a_bad_control_line_does() -> None:
    lines = [
        b'{"control":"close","period":"2026-01"}',
        b'{"control":"stop","period":"2026-01"}',
        b'{"control":"close"',  # truncated: bad input, as any other
        b'{"event_id":"e1"}',
    ]
    assert list(without_close_lines(lines)) == lines[1:]
    sim = fast_months(20, 1, 50.0, 1.0, datetime.now(UTC))
    controls = [json.loads(line)["control"] for line in sim.game_lines(3000, bad_share=0.1) if b'"control"' in line]
    assert "close" in controls  # fide's traffic writes `rate`'s close lines...
    kept = [line for line in without_close_lines(sim.game_lines(3000, bad_share=0.1)) if b'"control"' in line]
    assert kept and all(json.loads(line)["control"] != "close" for line in kept)  # ...the demo none
