"""What the stream tests of `tornelo` as a service share: its settings on a test's stack (its own
tournament topic), the close follower started and stopped, end records published, a close waited
for, and what a finished close leaves in Redis."""

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.support import commands
from tests.support.closes import fide_game
from tests.support.kafka import committed, produce
from tests.support.stack import Stack
from worker.embedded.stack import create_topics
from worker.store import keys
from worker.store.redis_store import RedisStore
from worker.systems.tornelo.codec import TORNELO_CALENDAR, TORNELO_STATES
from worker.systems.tornelo.rules import Ended, TorneloRules
from worker.systems.tornelo.traffic import TorneloSimulation

PREFIX = "rating-tornelo:"  # tornelo's default RATING_REDIS_KEY_PREFIX


def tornelo(stack: Stack) -> dict[str, object]:
    """The settings of a tornelo deployment on `stack`: its own tournament topic."""
    return {"system": "tornelo", "topic_tournaments": ends_topic(stack)}


def ends_topic(stack: Stack) -> str:
    return f"ends-{stack.name}"


async def create_ends_topic(stack: Stack) -> None:
    await create_topics(stack.broker.bootstrap, {ends_topic(stack): 1})


def end_record(tournament: str, event_id: str | None = None) -> bytes:
    value = {
        "event_id": event_id or f"end-{tournament}",
        "tournament_id": tournament,
        "finished_at": "2026-12-01T00:00:00Z",
    }
    return json.dumps(value, separators=(",", ":")).encode()


async def publish_ends(stack: Stack, *tournaments: str) -> None:
    """End records of `tournaments`, in order, acknowledged by the broker."""
    await produce(stack.broker.bootstrap, ends_topic(stack), [end_record(t) for t in tournaments])


async def publish_raw(stack: Stack, value: bytes) -> None:
    await produce(stack.broker.bootstrap, ends_topic(stack), [value])


def start_follower(stack: Stack, log: Path, **settings: object) -> "subprocess.Popen[bytes]":
    """`close-period --follow` logging to `log`, killed at the test's end."""
    with log.open("ab") as out:
        follower = commands.start(
            [sys.executable, "-m", "worker", "close-period", "--follow"],
            env=stack.env(**tornelo(stack), **settings),
            output=out.fileno(),
        )
    return stack.processes.register("close follower", follower)


def run(stack: Stack, *args: str, timeout: float = 120, **settings: object) -> "subprocess.CompletedProcess[bytes]":
    return commands.run(
        [sys.executable, "-m", "worker", *args],
        env=stack.env(**tornelo(stack), **settings),
        capture_output=True,
        timeout=timeout,
        check=False,
    )


def ended(stack: Stack) -> list[str]:
    """The tournaments marked ended, in the order of their marks."""
    places = stack.redis_client().hgetall(keys.marked_key(PREFIX))
    return [text(t) for t, _ in sorted(places.items(), key=lambda item: int(item[1]))]


def wait_closed(stack: Stack, tournament: str, timeout: float = 60, logs: Path | None = None) -> None:
    """Until `tournament` is marked ended and its close is finished."""
    r = stack.redis_client()
    deadline = time.monotonic() + timeout
    while True:
        marked = r.hget(keys.marked_key(PREFIX), tournament) is not None
        if marked and r.hget(keys.periods_key(PREFIX), "closing") != tournament.encode():
            return
        if time.monotonic() > deadline:
            tail = "" if logs is None else logs.read_text(errors="replace")[-4000:]
            raise AssertionError(f"{tournament} not closed within {timeout} s\n{tail}\n{stack.logs()[-3000:]}")
        time.sleep(0.05)


def leftovers(stack: Stack) -> dict[str, Any]:
    """What finished closes leave behind: no outbox, no index of an ended tournament, nothing in progress."""
    r = stack.redis_client()
    gone = set(ended(stack))
    return {
        "outboxes": [k for k in r.scan_iter(f"{PREFIX}{keys.OUTBOX}*") if r.llen(k)],
        "ended_indexes": sorted(t for t in map(text, r.smembers(keys.indexed_key(PREFIX))) if t in gone),
        "closing": r.hget(keys.periods_key(PREFIX), "closing"),
    }


def text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def seeded(stack: Stack, players: int, seed: int, tournament_size: int = 8) -> tuple[TorneloSimulation, Path]:
    """Tornelo's simulation of `players` in tournaments of `tournament_size`, its seeding file imported."""
    sim = TorneloSimulation(players, seed=seed, tournament_size=tournament_size)
    path = stack.tmp / "seed.csv"
    path.write_text(sim.seed_csv())
    imported = run(stack, "import", str(path))
    assert imported.returncode == 0, imported.stderr.decode(errors="replace")
    return sim, path


def game(game_id: str, white: str, black: str, result: str, tournament: str | None, minute: int = 0) -> bytes:
    """A rated blitz game of `tournament` (None: none)."""
    value = json.loads(fide_game(game_id, white, black, result, f"2026-11-10T12:{minute:02d}:00Z"))
    if tournament is not None:
        value["tournament_id"] = tournament
    return json.dumps(value, separators=(",", ":")).encode()


def close_line(tournament: str) -> bytes:
    return json.dumps({"control": "close", "period": tournament}).encode()


SEED_HEADER = "player_id,category,rating,rated_games,k_modifier"


def seed_file(path: Path, *rows: str) -> Path:
    path.write_text("\n".join([SEED_HEADER, *rows]) + "\n")
    return path


def marking_store(client: Any) -> RedisStore[Any]:
    """A store on tornelo's prefix to mark a tournament ended with, as a follower killed right
    after its mark leaves it (the mark made, nothing closed yet)."""
    return RedisStore(
        client,
        PREFIX,
        "killed-follower",
        5,
        3600,
        codec=TORNELO_STATES,
        pending=TorneloRules().pending,
        calendar_codec=TORNELO_CALENDAR,
    )


async def mark_ended(client: Any, tournament: str) -> None:
    store = marking_store(client)
    snapshot = await store.read([], [], [tournament])
    assert snapshot.calendar_version is not None
    assert isinstance(snapshot.calendar, Ended)
    calendar = TorneloRules().marked(snapshot.calendar, tournament)
    assert await store.mark(snapshot.calendar_version, calendar, tournament) == 1


async def wait_follower_committed(stack: Stack, offset: int, timeout: float = 30) -> None:
    """Until the close follower's group committed `offset` on the tournament topic."""
    deadline = time.monotonic() + timeout
    done = 0
    while time.monotonic() < deadline:
        done = (await committed(stack.broker.bootstrap, f"{stack.group}-close", ends_topic(stack), 1))[0]
        if done >= offset:
            return
        await asyncio.sleep(0.3)
    raise AssertionError(f"the follower committed {done}, not {offset}, in {timeout} s")
