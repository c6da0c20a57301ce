"""FIDE per month (`fide`) as a service, through the real broker and Redis: workers record games,
`rating-worker close-period` closes months while they run (docs/systems/fide.md, "Closing months").

- one worker on one partition, and `close-period` run where `rate`'s input has a close line,
  publish per rating exactly `rate`'s events (late games, held games, closes that close
  nothing, months closed with no game);
- a game applied after a month was marked, to ratings its close has not reached, first closes
  them (their close events before the game's); while the close is in progress `import`,
  `erase`, `restore` and `switch-over` are refused; `close-period` then finishes it, and the
  events are `rate`'s with the close line where the mark fell;
- refusals: a month not due, `9999-12`, `--init` over state; a drain past its timeout changes
  nothing.
"""

import json
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from redis.asyncio import Redis

from tests.support import commands
from tests.support.kafka import read_topic
from tests.support.stack import Stack
from tests.support.systems import per_key, rate, seeded
from worker.store import keys
from worker.store.redis_store import RedisStore
from worker.systems.fide.codec import FIDE_CALENDAR, FIDE_STATES
from worker.systems.fide.rules import FideRules

pytestmark = pytest.mark.integration

FIDE = {"system": "fide"}
PREFIX = "rating-fide:"  # fide's default RATING_REDIS_KEY_PREFIX


def close_period(stack: Stack, *args: str, **settings: object) -> "subprocess.CompletedProcess[bytes]":
    return commands.run(
        [sys.executable, "-m", "worker", "close-period", *args],
        env=stack.env(**FIDE, **settings),
        capture_output=True,
        timeout=120,
        check=False,
    )


def command(stack: Stack, *args: str) -> "subprocess.CompletedProcess[bytes]":
    return commands.run(
        [sys.executable, "-m", "worker", *args], env=stack.env(**FIDE), capture_output=True, timeout=120, check=False
    )


def segments(lines: Sequence[bytes]) -> list[tuple[list[bytes], str | None]]:
    """`rate`'s input cut at its close lines: each run of games and the month closed after it."""
    out: list[tuple[list[bytes], str | None]] = []
    games: list[bytes] = []
    for line in lines:
        value = json.loads(line)
        if "control" in value:
            out.append((games, value["period"]))
            games = []
        else:
            games.append(line)
    out.append((games, None))
    return out


async def published(stack: Stack, expected: int) -> list[bytes]:
    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, expected, timeout=60, idle=1.0)
    return [r.value for r in sorted(records, key=lambda r: (r.partition, r.offset)) if r.value is not None]


def leftovers(stack: Stack) -> dict[str, Any]:
    """What a finished close leaves behind: nothing in an outbox, an index or in progress."""
    r = stack.redis_client()
    return {
        "outboxes": [k for k in r.scan_iter(f"{PREFIX}{keys.OUTBOX}*") if r.llen(k)],
        "indexes": sorted(r.smembers(keys.indexed_key(PREFIX))),
        "closing": r.hget(keys.periods_key(PREFIX), "closing"),
    }


def closed(stack: Stack) -> str | None:
    value = stack.redis_client().hget(keys.periods_key(PREFIX), "calendar")
    return None if value is None else FIDE_CALENDAR.decode(value if isinstance(value, bytes) else value.encode())


@pytest.mark.timeout(400)
async def test_one_worker_and_close_period_publish_per_rating_what_rate_writes(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=4)
    sim, seed = seeded(stack, "fide", 40, seed=7)
    lines = list(sim.game_lines(500))
    stack.start_worker(**FIDE)
    months = []
    for games, month in segments(lines):
        if games:
            await stack.produce(games)
        if month is not None:
            done = close_period(stack, month)
            assert done.returncode == 0, done.stderr.decode(errors="replace") + stack.logs()[-3000:]
            months.append(month)
    assert len(months) > 12  # a close a month, some closing a month closed already
    end = await stack.end_offsets(sum(len(g) for g, _ in segments(lines)))
    await stack.wait_committed(end, timeout=120)

    expected, letters = rate(stack.tmp, "fide", seed, lines)
    assert not letters
    values = await published(stack, len(expected))
    assert per_key(values) == per_key(expected)
    kinds = {json.loads(v)["kind"] for v in expected}
    assert {"period_game", "period_rating", "imported"} <= kinds, kinds
    assert closed(stack) == max(months)
    game_months = {json.loads(line)["finished_at"][:7] for games, _ in segments(lines) for line in games}
    still_open = sorted(m.encode() for m in game_months if m > max(months))  # the months after the last close
    assert leftovers(stack) == {"outboxes": [], "indexes": still_open, "closing": None}

    # Redis lost everything of the deployment: restore gives back the states, the latest closed
    # month (from the states' closed_period) and each open month's index (from their pending).
    r = stack.redis_client()
    before = {k: r.get(k) for k in r.scan_iter(f"{PREFIX}{keys.STATE}*")}
    indexes = {m: r.smembers(keys.index_key(PREFIX, m.decode())) for m in still_open}
    for worker in stack.workers:
        worker.kill()
        worker.wait(timeout=10)
    r.delete(*r.scan_iter(f"{PREFIX}*"))
    restored = command(stack, "restore")
    assert restored.returncode == 0, restored.stderr.decode(errors="replace")
    assert f"latest closed period {max(months)} (from the states)" in restored.stderr.decode()
    assert {k: r.get(k) for k in r.scan_iter(f"{PREFIX}{keys.STATE}*")} == before
    assert closed(stack) == max(months)
    assert {m: r.smembers(keys.index_key(PREFIX, m.decode())) for m in still_open} == indexes
    assert leftovers(stack) == {"outboxes": [], "indexes": still_open, "closing": None}
    later = command(stack, "restore", "--closed-through", "9999-11")  # a month closed with no games
    assert later.returncode == 0, later.stderr.decode(errors="replace")
    assert "latest closed period 9999-11 (from --closed-through)" in later.stderr.decode()
    assert "the close of 9999-11 was interrupted" in later.stderr.decode()  # the open months' games are held back
    assert r.hget(keys.periods_key(PREFIX), "closing") == b"9999-11"
    r.hdel(keys.periods_key(PREFIX), "closing")
    command(stack, "restore")  # back to the states' month for the rest of the test
    assert closed(stack) == max(months)
    stack.start_worker(**FIDE)

    again = close_period(stack, max(months))  # a finished close run again publishes nothing
    assert again.returncode == 0, again.stderr.decode(errors="replace")
    assert "marked none; 0 ratings closed" in again.stderr.decode()
    assert len(await published(stack, len(expected))) == len(values)


@pytest.mark.timeout(300)
async def test_a_game_after_a_mark_closes_its_players_first_and_close_period_finishes_the_close(
    stack: Stack,
) -> None:
    await stack.create_topics(games=1, ratings=4)
    seed = stack.tmp / "seed.csv"
    seed.write_text(
        "player_id,category,rating,rated_games,reached_2400,birth_year\n"
        "A,blitz,2000,40,,\nB,blitz,1900,40,,\nC,blitz,2100,40,,\nD,blitz,2450,40,,\n"
    )
    assert stack.import_seed(seed, system="fide").returncode == 0

    def game(game_id: str, white: str, black: str, result: str, at: str) -> bytes:
        value = {
            "event_id": f"e-{game_id}",
            "game_id": game_id,
            "white_id": white,
            "black_id": black,
            "result": result,
            "termination": "checkmate",
            "rated": True,
            "time_control": {"base_seconds": 180, "increment_seconds": 0},
            "finished_at": at,
        }
        return json.dumps(value, separators=(",", ":")).encode()

    november = [
        game("g1", "A", "B", "1-0", "2026-11-03T10:00:00Z"),
        game("g2", "C", "A", "1/2-1/2", "2026-11-04T10:00:00Z"),
        game("g3", "A", "D", "0-1", "2026-11-05T10:00:00Z"),
        game("g4", "B", "C", "1-0", "2026-11-06T10:00:00Z"),
    ]
    later = [game("g9", "A", "B", "1-0", "2026-12-01T09:00:00Z")]
    stack.start_worker(**FIDE)
    await stack.produce(november)
    await stack.wait_committed(await stack.end_offsets(len(november)), timeout=60)

    # November marked closed, as a close-period killed right after its mark leaves it.
    client = Redis.from_url(stack.redis.url)
    try:
        store = RedisStore(
            client,
            PREFIX,
            "killed-close",
            5,
            3600,
            codec=FIDE_STATES,
            pending=FideRules().pending,
            calendar_codec=FIDE_CALENDAR,
        )
        snapshot = await store.read([], [])
        assert snapshot.calendar is None and snapshot.calendar_version == 0
        assert await store.mark(0, "2026-11", "2026-11") == 1
        assert await store.mark(1, "2026-12", "2026-12") == -1  # no second mark while a close is in progress
    finally:
        await client.aclose()

    status = close_period(stack, "--status")
    assert status.returncode == 0, status.stderr.decode(errors="replace")
    assert "close in progress: 2026-11, 4 ratings left" in status.stdout.decode()
    for args in (["import", str(seed), "--force"], ["erase", "C"], ["restore"], ["switch-over"]):
        refused = command(stack, *args)
        assert refused.returncode == 2, (args, refused.stderr.decode(errors="replace"))
        message = refused.stderr.decode().strip().splitlines()[-1]  # after the debug log lines
        assert message.startswith("rating-worker: error: "), message
        assert "close of 2026-11 is in progress (4 ratings left)" in message, message

    await stack.produce(later)  # A and B are closed first, by g9
    await stack.wait_committed(await stack.end_offsets(len(november) + len(later)), timeout=60)
    done = close_period(stack, "2026-11")  # finishes the close in progress: C and D
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    report = done.stderr.decode()
    assert "marked none; 2 ratings closed, 2 found closed already" in report, report

    close_line = json.dumps({"control": "close", "period": "2026-11"}).encode()
    expected, _ = rate(stack.tmp, "fide", seed, [*november, close_line, *later])
    values = await published(stack, len(expected))
    assert per_key(values) == per_key(expected)
    a = [json.loads(v)["event_id"] for v in per_key(values)["A/blitz"]]
    assert a[-2:] == ["period/2026-11/A/blitz", "g9/A"]
    assert leftovers(stack) == {"outboxes": [], "indexes": [b"2026-12"], "closing": None}


@pytest.mark.timeout(200)
async def test_close_period_refuses_what_it_must_and_a_drain_past_its_timeout_marks_nothing(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=4)
    seed = stack.tmp / "seed.csv"
    seed.write_text("player_id,category,rating,rated_games,reached_2400,birth_year\nA,blitz,2000,40,,\n")

    for args, named in (
        (["2099-01"], "2099-01 is not due yet"),
        (["9999-12", "--force"], "'9999-12' is not a period that can be closed"),
        (["2026-13"], "'2026-13' is not a period that can be closed"),
        ([], "exactly one of PERIOD, --due, --init MONTH and --status"),
        (["2026-10", "--due"], "exactly one of"),
    ):
        refused = close_period(stack, *args)
        assert refused.returncode == 2, (args, refused.stderr.decode(errors="replace"))
        assert named in refused.stderr.decode(), (args, refused.stderr.decode())
    assert closed(stack) is None

    assert stack.import_seed(seed, system="fide").returncode == 0
    init = close_period(stack, "--init", "2026-10")
    assert init.returncode == 2 and "ratings have state" in init.stderr.decode(), init.stderr.decode()
    assert closed(stack) is None

    # No worker runs: the drain waits for games nobody applies, then gives up, marking nothing.
    await stack.produce([b'{"not": "a game"}'])
    timed_out = close_period(stack, "2026-10", close_drain_timeout_seconds=1)
    assert timed_out.returncode == 1, timed_out.stderr.decode(errors="replace")
    assert "nothing new was marked" in timed_out.stderr.decode()
    assert "partition 0 at 0 of 1" in timed_out.stderr.decode()
    assert closed(stack) is None


@pytest.mark.timeout(120)
async def test_init_sets_the_latest_closed_month_of_a_new_deployment_once(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=4)
    init = close_period(stack, "--init", "2026-09")
    assert init.returncode == 0, init.stderr.decode(errors="replace")
    assert closed(stack) == "2026-09"
    again = close_period(stack, "--init", "2026-10")
    assert again.returncode == 2 and "closed already" in again.stderr.decode(), again.stderr.decode()
    assert closed(stack) == "2026-09"
    status = close_period(stack, "--status")
    assert "latest closed period: 2026-09" in status.stdout.decode()
    assert "close in progress: none" in status.stdout.decode()
    # The month before the one an hour ago falls in (RATING_PERIOD_GRACE_SECONDS's default) is due.
    first = (datetime.now(UTC) - timedelta(hours=1)).replace(day=1)
    due = (first - timedelta(days=1)).strftime("%Y-%m")
    assert f"due and not closed: {due}" in status.stdout.decode(), status.stdout.decode()
