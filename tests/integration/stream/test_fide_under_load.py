"""A FIDE month closed under load, through the real broker and Redis: three workers on twelve
partitions keep recording games of two months while `close-period` runs (late games of the month
being closed, games of the next); one worker is SIGKILLed right after the mark, and the close
command itself while it closes, then run again. At the end every rating has exactly the events
`rate` writes for the same games with the close line where the mark fell, copies of an event
only byte-identical, nothing left in an outbox or in progress, and nothing dead-lettered.

Where the mark fell is read from the events: a game applied after it comes, for a player with
games of the month, after his close event (close-first), and before it otherwise. `rate`'s
file is then the games applied before the mark, the close line, the games after it, each part
in an order that keeps every rating's own order of events.
"""

import asyncio
import json
from collections import defaultdict
from typing import Any

import pytest

from schemas.game_finished import GameFinished
from tests.support.closes import (
    FIDE,
    close_line,
    close_period,
    first_copies,
    in_order,
    kill_when,
    leftovers,
    segments,
    start_close,
)
from tests.support.games import keyed
from tests.support.kafka import read_topic
from tests.support.stack import Stack
from tests.support.systems import per_key, rate, seeded
from worker.engine.engine import Engine
from worker.rules.hundredths import Points
from worker.systems.registry import BY_NAME

pytestmark = pytest.mark.integration

PACE = 25  # games produced at once during the close, every PACE_SECONDS
PACE_SECONDS = 0.15


async def produce_paced(stack: Stack, lines: list[bytes]) -> None:
    for start in range(0, len(lines), PACE):
        chunk = lines[start : start + PACE]
        await stack.produce(chunk, keyed(chunk))
        await asyncio.sleep(PACE_SECONDS)


def split_at_mark(
    lines: list[bytes], month: str, events: dict[str, list[dict[str, Any]]]
) -> tuple[list[bytes], list[bytes]]:
    """The games applied before the mark of `month` and those applied after it, as the events show."""
    position: dict[tuple[str, str], int] = {}  # (game, rating) -> its event's place in the rating's events
    closed_at: dict[str, int] = {}  # rating -> the place of its close event of `month`
    for key, sequence in events.items():
        for n, e in enumerate(sequence):
            if e["game_id"] is not None:
                position[(e["game_id"], key)] = n
            elif e["event_id"] == f"period/{month}/{key}":
                closed_at[key] = n
    by_game: dict[str, list[str]] = defaultdict(list)
    for game, key in position:
        by_game[game].append(key)
    before: list[bytes] = []
    later: list[bytes] = []
    for line in lines:
        game = json.loads(line)["game_id"]
        sides = {position[(game, k)] > closed_at[k] for k in by_game.get(game, ()) if k in closed_at}
        assert len(sides) <= 1, f"{game} is before the close of {month} for one player and after it for the other"
        if not by_game.get(game):
            before.append(line)  # it changed nothing: where it goes does not matter
        else:
            assert sides, f"{game}: neither player has games of {month}, so the events do not show the mark"
            (later if sides.pop() else before).append(line)
    return before, later


def ratings_of(*lines: bytes) -> set[str]:
    """The ratings the games count for (none for a game that changes nothing)."""
    engine = Engine(BY_NAME["fide"], Points(0))
    return {key for line in lines for key in engine.ratings_read(GameFinished.model_validate_json(line)) or ()}


@pytest.mark.timeout(400)
async def test_a_close_under_load_with_a_worker_and_the_close_killed_publishes_what_rate_writes(
    stack: Stack,
) -> None:
    await stack.create_topics(games=12, ratings=6)
    sim, seed = seeded(stack, "fide", 60, seed=13)
    parts = segments(list(sim.game_lines(5000)))
    (none, opening), (month_games, month), (next_games, next_month) = parts[:3]
    assert not none and opening is not None and month is not None and next_month is not None
    # Of the games arriving during the close, those of a rating with games of the month: the
    # events show on which side of the mark each fell (the others change nothing or are left out).
    next_games = [line for line in next_games if not ratings_of(line) or ratings_of(line) & ratings_of(*month_games)]
    # And late games of the month all along, replays of its games under new ids: some fall after the mark.
    for n, line in enumerate(month_games[-len(next_games) // 8 :]):
        game = json.loads(line)
        game.update(game_id=f"{game['game_id']}-late", event_id=f"{game['event_id']}-late")
        next_games.insert(8 * n + 7, json.dumps(game, separators=(",", ":")).encode())
    done = close_period(stack, opening)  # sets the latest closed month: the month's games count at once
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    for _ in range(3):
        stack.start_worker(**FIDE)
    await stack.produce(month_games, keyed(month_games))
    await stack.wait_committed(await stack.end_offsets(len(month_games)), timeout=120)

    # The close of `month`, with the next games arriving all along (its late games, the next month's).
    producing = asyncio.create_task(produce_paced(stack, next_games))
    log = stack.tmp / "close.log"
    close = start_close(stack, log, month)
    assert await asyncio.to_thread(kill_when, stack.workers[1], log, "marked closed", 0.0), "no worker to kill"
    assert await asyncio.to_thread(kill_when, close, log, "ratings to close", 0.02), "the close ended before its kill"
    again = await asyncio.to_thread(close_period, stack, month)
    assert again.returncode == 0, again.stderr.decode(errors="replace") + log.read_text(errors="replace")
    stack.start_worker(**FIDE)  # the killed worker's replacement
    await producing
    produced = month_games + next_games
    await stack.wait_committed(await stack.end_offsets(len(produced)), timeout=180)
    done = close_period(stack, next_month)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert leftovers(stack)["outboxes"] == [] and leftovers(stack)["closing"] is None

    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1, timeout=60, idle=2.0)
    values = first_copies([r.value for r in sorted(records, key=lambda r: (r.partition, r.offset)) if r.value])
    events = {key: [json.loads(v) for v in vs] for key, vs in per_key(values).items()}
    before, later = split_at_mark(produced, month, events)
    assert later, "no game was applied after the mark"
    assert any(month in json.loads(line)["finished_at"][:7] for line in later), "no late game of the month"
    file = [close_line(opening), *in_order(before, events), close_line(month)]
    file += [*in_order(later, events), close_line(next_month)]
    expected, letters = rate(stack.tmp, "fide", seed, file)
    assert not letters
    assert per_key(values) == per_key(expected)
    late = sum(month in json.loads(line)["finished_at"][:7] for line in later)
    print(f"\n{len(before)} games before the mark, {len(later)} after it ({late} late games of {month})")
    dead = await read_topic(stack.broker.bootstrap, stack.dlq_topic, 0, timeout=5, idle=1.0)
    assert dead == [], [r.headers for r in dead]
    assert all(GameFinished.model_validate_json(line) for line in produced)
