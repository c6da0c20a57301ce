"""`rating-worker close-period` on a test's stack, for the tests of its runs' record and log lines
and of the workers' metrics of them: the command (with `fide`'s settings), a game of a month, the
month due by the clock, and the command's JSON log lines; and what the stream tests of `fide`
share: its other commands, `rate`'s input cut at its close lines, the output topic read whole,
what a finished close leaves, a close started to be SIGKILLed at a given step, and the order of
`rate`'s file rebuilt from events under load (`in_order`)."""

import heapq
import itertools
import json
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from tests.support import commands
from tests.support.kafka import read_topic
from tests.support.stack import Stack
from worker.rules.finished_at import month_named, month_number
from worker.store import keys
from worker.store.redis_store import RedisStore
from worker.systems.fide.codec import FIDE_CALENDAR, FIDE_STATES
from worker.systems.fide.rules import FideRules

FIDE = {"system": "fide"}
PREFIX = "rating-fide:"  # fide's default RATING_REDIS_KEY_PREFIX
LOGGER = "worker.operate.close_period"


def close_period(stack: Stack, *args: str, **settings: object) -> "subprocess.CompletedProcess[bytes]":
    return commands.run(
        [sys.executable, "-m", "worker", "close-period", *args],
        env=stack.env(**FIDE, **settings),
        capture_output=True,
        timeout=120,
        check=False,
    )


def due_month() -> str:
    """The month `close-period --due` closes now: the month before the one an hour ago falls in
    (RATING_PERIOD_GRACE_SECONDS's default)."""
    first = (datetime.now(UTC) - timedelta(hours=1)).replace(day=1)
    return (first - timedelta(days=1)).strftime("%Y-%m")


def month_before(month: str) -> str:
    return month_named(month_number(month) - 1)


def game(game_id: str, white: str, black: str, month: str) -> bytes:
    """A rated blitz game won by white, finished in the middle of `month`."""
    return fide_game(game_id, white, black, "1-0", f"{month}-15T12:00:00Z")


def steps(done: "subprocess.CompletedProcess[bytes]") -> list[dict[str, Any]]:
    """close-period's own JSON log lines on stderr, in order (its plain lines and the clients' left out)."""
    lines = []
    for line in done.stderr.decode(errors="replace").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("logger") == LOGGER:
            lines.append(value)
    return lines


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


def fide_game(game_id: str, white: str, black: str, result: str, at: str) -> bytes:
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


def close_line(month: str) -> bytes:
    return json.dumps({"control": "close", "period": month}).encode()


def start_close(stack: Stack, log: Path, *args: str) -> "subprocess.Popen[bytes]":
    with log.open("wb") as out:
        return commands.start(
            [sys.executable, "-m", "worker", "close-period", *args], env=stack.env(**FIDE), output=out.fileno()
        )


def kill_when(process: "subprocess.Popen[bytes]", log: Path, said: str | None, delay: float) -> bool:
    """SIGKILL `process` `delay` seconds after its output shows `said` (None: after it started);
    whether it was still running then."""
    deadline = time.monotonic() + 60
    while said is not None and said.encode() not in log.read_bytes():
        if process.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    time.sleep(delay)
    if process.poll() is not None:
        return False
    process.kill()
    process.wait(timeout=10)
    return True


def first_copies(values: list[bytes]) -> list[bytes]:
    """Each event once, at its first copy; every copy of an event is byte-identical."""
    seen: dict[str, bytes] = {}
    for value in values:
        event_id = json.loads(value)["event_id"]
        assert seen.setdefault(event_id, value) == value, f"copies of {event_id} differ"
    return list(seen.values())


SEED_HEADER = "player_id,category,rating,rated_games,reached_2400,birth_year"


def seed_file(path: Path, *rows: str) -> Path:
    """A fide seeding file of `rows` (`player_id,category,rating,rated_games,reached_2400,birth_year`)."""
    path.write_text("\n".join([SEED_HEADER, *rows]) + "\n")
    return path


def killed_close_store(client: Redis) -> RedisStore[Any]:
    """A store on fide's prefix to mark a month closed with, as a close-period killed right after
    its mark leaves it (the mark made, nothing closed yet)."""
    return RedisStore(
        client,
        PREFIX,
        "killed-close",
        5,
        3600,
        codec=FIDE_STATES,
        pending=FideRules().pending,
        calendar_codec=FIDE_CALENDAR,
    )


def in_order(lines: list[bytes], events: dict[str, list[dict[str, Any]]]) -> list[bytes]:
    """`lines` in an order that keeps each rating's order of events (of the games among them),
    the earliest produced first where free."""
    place = {json.loads(line)["game_id"]: n for n, line in enumerate(lines)}
    after: dict[str, set[str]] = defaultdict(set)  # game -> the games that must come after it
    before = dict.fromkeys(place, 0)
    for sequence in events.values():
        games = [e["game_id"] for e in sequence if e["game_id"] in place]
        for a, b in itertools.pairwise(games):
            if b not in after[a]:
                after[a].add(b)
                before[b] += 1
    ready = [(place[g], g) for g, n in before.items() if n == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        _, game = heapq.heappop(ready)
        out.append(lines[place[game]])
        for later in after[game]:
            before[later] -= 1
            if before[later] == 0:
                heapq.heappush(ready, (place[later], later))
    assert len(out) == len(lines), "the ratings' orders of events contradict each other"
    return out
