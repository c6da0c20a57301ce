"""Tornelo (`tornelo`) as a service, through the real broker and Redis: workers record games of
tournaments, `rating-worker close-period --follow` closes each tournament when its end record is
read (docs/systems/tornelo.md, "Ending tournaments in the service").
"""

import json
import time
import urllib.request

import pytest
from redis.asyncio import Redis

from tests.support.closes import first_copies, kill_when, published, segments
from tests.support.kafka import read_topic
from tests.support.stack import Stack
from tests.support.systems import per_key, rate
from tests.support.tornelo_service import (
    PREFIX,
    close_line,
    create_ends_topic,
    ended,
    ends_topic,
    game,
    leftovers,
    mark_ended,
    publish_ends,
    publish_raw,
    run,
    seed_file,
    seeded,
    start_follower,
    text,
    tornelo,
    wait_closed,
    wait_follower_committed,
)
from worker.embedded.stack import free_port
from worker.rules.instants import instant
from worker.store import keys
from worker.systems.tornelo.codec import TORNELO_STATES
from worker.systems.tornelo.events import read_tornelo
from worker.systems.tornelo.rules import TorneloRules

REBUILD = "rating-tornelo-rebuild:"

pytestmark = pytest.mark.integration


@pytest.mark.timeout(400)
async def test_one_worker_and_the_follower_publish_per_rating_what_rate_writes(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=4)
    await create_ends_topic(stack)
    sim, seed = seeded(stack, 40, seed=11)
    lines = list(sim.game_lines(600))
    stack.start_worker(**tornelo(stack))
    log = stack.tmp / "follower.log"
    start_follower(stack, log)
    closes = []
    for games, tournament in segments(lines):
        if games:
            await stack.produce(games)
        if tournament is not None:
            await publish_ends(stack, tournament)
            wait_closed(stack, tournament, logs=log)
            closes.append(tournament)
    assert len(set(closes)) > 10, closes
    produced = sum(len(g) for g, _ in segments(lines))
    await stack.wait_committed(await stack.end_offsets(produced), timeout=120)

    expected, letters = rate(stack.tmp, "tornelo", seed, lines)
    assert not letters
    values = first_copies(await published(stack, len(expected)))
    assert per_key(values) == per_key(expected)
    kinds = {json.loads(v)["kind"] for v in expected}
    assert {"period_game", "period_rating", "provisional_rating", "imported"} <= kinds, kinds
    assert ended(stack) == list(dict.fromkeys(closes))
    assert leftovers(stack) == {"outboxes": [], "ended_indexes": [], "closing": None}

    # rebuild: each ended tournament closed right after its last game (by finished_at, game_id), in
    # the order of the marks, so a game that was late live is counted in its tournament; then
    # switch-over gives every live rating the rebuilt state.
    r = stack.redis_client()
    rebuilt = run(stack, "rebuild", "--seed", str(seed))
    assert rebuilt.returncode == 0, rebuilt.stderr.decode(errors="replace")

    def ordered(line: bytes) -> tuple[tuple[int, str], str]:
        game = json.loads(line)
        return instant(game["finished_at"]), game["game_id"]

    history = sorted((line for games, _ in segments(lines) for line in games), key=ordered)
    marks = ended(stack)
    last = {json.loads(line).get("tournament_id"): n for n, line in enumerate(history)}
    file: list[bytes] = []
    due = 0  # the next mark to close
    for n, line in enumerate([b"", *history]):
        if line:
            file.append(line)
        while due < len(marks) and last.get(marks[due], -1) <= n - 1:
            file.append(close_line(marks[due]))
            due += 1
    expected_rebuild, letters = rate(stack.tmp, "tornelo", seed, file)
    assert not letters
    final = {key: read_tornelo(events[-1]).state for key, events in per_key(expected_rebuild).items()}
    codec = TORNELO_STATES
    rules = TorneloRules()
    rebuilt_states = {
        text(k).removeprefix(f"{REBUILD}{keys.STATE}"): codec.decode(r.get(k) or b"")
        for k in r.scan_iter(f"{REBUILD}{keys.STATE}*")
    }
    assert {k: rules.numbered(v, 0) for k, v in rebuilt_states.items()} == {
        k: rules.numbered(v, 0) for k, v in final.items()
    }
    live_before = {
        text(k).removeprefix(f"{PREFIX}{keys.STATE}"): codec.decode(r.get(k) or b"")
        for k in r.scan_iter(f"{PREFIX}{keys.STATE}*")
    }
    differing = [k for k, v in final.items() if rules.numbered(live_before.get(k, v), 0) != rules.numbered(v, 0)]
    assert differing, "no late game: the rebuild and the live states are the same"
    switched = run(stack, "switch-over")
    assert switched.returncode == 0, switched.stderr.decode(errors="replace")
    live_after = {
        text(k).removeprefix(f"{PREFIX}{keys.STATE}"): codec.decode(r.get(k) or b"")
        for k in r.scan_iter(f"{PREFIX}{keys.STATE}*")
    }
    assert {k: rules.numbered(v, 0) for k, v in live_after.items()} == {
        k: rules.numbered(v, 0) for k, v in final.items()
    }

    # Redis lost everything of the deployment: restore gives back the states, the marks in the
    # order of their records and each open tournament's index.
    states = {k: r.get(k) for k in r.scan_iter(f"{PREFIX}{keys.STATE}*")}
    indexed = r.smembers(keys.indexed_key(PREFIX))
    indexes = {t: r.smembers(keys.index_key(PREFIX, text(t))) for t in indexed}
    for worker in stack.workers:
        worker.kill()
        worker.wait(timeout=10)
    r.delete(*r.scan_iter(f"{PREFIX}*"))
    restored = run(stack, "restore")
    assert restored.returncode == 0, restored.stderr.decode(errors="replace")
    assert f"restore: {len(set(closes))} periods ended" in restored.stderr.decode()
    assert {k: r.get(k) for k in r.scan_iter(f"{PREFIX}{keys.STATE}*")} == states
    assert ended(stack) == list(dict.fromkeys(closes))
    assert r.smembers(keys.indexed_key(PREFIX)) == indexed
    assert {t: r.smembers(keys.index_key(PREFIX, text(t))) for t in indexed} == indexes


@pytest.mark.parametrize("wiped", [False, True], ids=["as-left", "restored-after-a-wipe"])
@pytest.mark.timeout(300)
async def test_a_game_after_a_mark_closes_its_players_first_and_the_follower_finishes_the_close(
    stack: Stack, wiped: bool
) -> None:
    """T1 marked ended with its end record on the topic but not committed, as a follower killed
    right after its mark leaves it; a game outside any tournament closes A and B first; while the
    close is in progress `import`, `erase`, `restore` and `switch-over` are refused; then
    (`restored-after-a-wipe`) Redis loses everything and `restore` gives back the states, the marks
    in order, the close in progress and the indexes; the follower finishes the close and reads the
    record again (`as-left`: `close-period --due` finishes the close first, marking nothing, as in the
    quiet window's steps): per rating, `rate`'s events with the close line where the mark fell."""
    await stack.create_topics(games=1, ratings=4)
    await create_ends_topic(stack)
    seed = seed_file(
        stack.tmp / "seed.csv", "A,blitz,2000,40,", "B,blitz,1900,40,", "C,blitz,2100,40,", "D,blitz,1500,5,"
    )
    assert run(stack, "import", str(seed)).returncode == 0
    t0 = [game("g0", "C", "D", "1-0", "T0", 0)]  # T0: ended and closed before
    t1 = [
        game("g1", "A", "B", "1-0", "T1", 1),
        game("g2", "C", "A", "1/2-1/2", "T1", 2),
        game("g3", "A", "D", "0-1", "T1", 3),
        game("g4", "B", "C", "1-0", "T1", 4),
        game("g5", "A", "B", "1-0", "T2", 5),  # T2 stays open
    ]
    later = [game("g9", "A", "B", "1-0", None, 9)]
    stack.start_worker(**tornelo(stack))
    log = stack.tmp / "follower.log"
    follower = start_follower(stack, log)
    await stack.produce(t0)
    await publish_ends(stack, "T0")
    wait_closed(stack, "T0", logs=log)
    follower.kill()
    follower.wait(timeout=10)
    await stack.produce(t1)
    await stack.wait_committed(await stack.end_offsets(len(t0) + len(t1)), timeout=60)
    await publish_ends(stack, "T1")  # read by no follower yet
    client = Redis.from_url(stack.redis.url)
    try:
        await mark_ended(client, "T1")
    finally:
        await client.aclose()

    status = run(stack, "close-period", "--status")
    assert status.returncode == 0, status.stderr.decode(errors="replace")
    shown = status.stdout.decode()
    assert "close in progress: T1, 4 ratings left" in shown, shown
    assert "ended: 2, in the order they were marked\n  T0\n  T1\n" in shown, shown
    assert "open (recorded games, no end read yet): 1" in shown and "  T2  oldest entry" in shown, shown
    for args in (["import", str(seed), "--force"], ["erase", "C"], ["restore"], ["switch-over"]):
        refused = run(stack, *args)
        assert refused.returncode == 2, (args, refused.stderr.decode(errors="replace"))
        message = refused.stderr.decode().strip().splitlines()[-1]
        assert message.startswith("rating-worker: error: "), message
        assert "close of T1 is in progress (4 ratings left)" in message, message

    await stack.produce(later)  # A and B are closed first, by g9
    await stack.wait_committed(await stack.end_offsets(len(t0) + len(t1) + len(later)), timeout=60)
    r = stack.redis_client()
    if wiped:  # Redis lost everything in the middle of the close
        states = {k: r.get(k) for k in r.scan_iter(f"{PREFIX}{keys.STATE}*")}
        for worker in stack.workers:
            worker.kill()
            worker.wait(timeout=10)
        r.delete(*r.scan_iter(f"{PREFIX}*"))
        restored = run(stack, "restore")
        said = restored.stderr.decode(errors="replace")
        assert restored.returncode == 0, said
        assert "the close of T1 was interrupted (2 ratings left)" in said, said
        assert {k: r.get(k) for k in r.scan_iter(f"{PREFIX}{keys.STATE}*")} == states
        assert ended(stack) == ["T0", "T1"]  # T0's record committed, T1's close events on the topic
        assert r.hget(keys.periods_key(PREFIX), "closing") == b"T1"
        assert r.smembers(keys.index_key(PREFIX, "T1")) == {b"C/blitz", b"D/blitz"}  # A and B hold none
        assert r.smembers(keys.index_key(PREFIX, "T2")) == {b"A/blitz", b"B/blitz"}
        stack.start_worker(**tornelo(stack))
    else:  # the quiet window's way: finish the close in progress, mark nothing
        finished = run(stack, "close-period", "--due")
        said = finished.stderr.decode(errors="replace")
        assert finished.returncode == 0, said
        assert "close-period: T1 closed" in said and "marked none; 2 ratings closed, 2 found closed already" in said
        assert ended(stack) == ["T0", "T1"] and r.hget(keys.periods_key(PREFIX), "closing") is None
    follower = start_follower(stack, log)
    wait_closed(stack, "T1", logs=log)

    expected, _ = rate(stack.tmp, "tornelo", seed, [*t0, close_line("T0"), *t1, close_line("T1"), *later])
    values = first_copies(await published(stack, len(expected)))
    assert per_key(values) == per_key(expected)
    a = [json.loads(v)["event_id"] for v in per_key(values)["A/blitz"]]
    assert a[-2:] == ["period/T1/A/blitz", "g9/A"]
    await wait_follower_committed(stack, 2)  # T1's record read again: nothing more to do, committed
    assert leftovers(stack) == {"outboxes": [], "ended_indexes": [], "closing": None}
    assert r.smembers(keys.indexed_key(PREFIX)) == {b"T2"}


def pairs(tournament: str, players: int, prefix: str = "p", start: int = 0) -> list[bytes]:
    """One game for each two of `players` unrated players: each rating holds one entry of it."""
    return [
        game(
            f"{tournament}-{i}",
            f"{prefix}{i}",
            f"{prefix}{i + 1}",
            ("1-0", "0-1", "1/2-1/2")[i % 3],
            tournament,
            i % 60,
        )
        for i in range(start, start + players, 2)
    ]


@pytest.mark.parametrize(
    ("said", "delay"),
    [
        ("waiting for the workers", 0.0),  # in the drain (no worker runs yet)
        ("marked closed", 0.0),  # right after the mark
        ('"step": "chunk"', 0.0),  # a chunk closed and published, others left
    ],
    ids=["draining", "marked", "closing"],
)
@pytest.mark.timeout(300)
async def test_a_follower_killed_anywhere_finishes_the_close_when_it_reads_the_record_again(
    stack: Stack, said: str, delay: float
) -> None:
    """The follower SIGKILLed at a step of a close of 1,200 ratings (three chunks), then started
    again: it finishes the close and commits; a finished close read again (its end published
    twice) publishes nothing: per rating, `rate`'s events (a kill may repeat an event it had sent
    but not acknowledged in Redis: copies are byte-identical)."""
    await stack.create_topics(games=1, ratings=4)
    await create_ends_topic(stack)
    t1 = pairs("T1", 1200)
    t2 = pairs("T2", 20, "q")
    await stack.produce([*t1, *t2])
    await publish_ends(stack, "T1", "T2")
    log = stack.tmp / "follower.log"
    follower = start_follower(stack, log)
    if said == "waiting for the workers":
        assert kill_when(follower, log, said, delay), log.read_text()
        stack.start_worker(**tornelo(stack))
    else:
        stack.start_worker(**tornelo(stack))
        assert kill_when(follower, log, said, delay), log.read_text()
    start_follower(stack, log)
    wait_closed(stack, "T2", timeout=120, logs=log)
    await wait_follower_committed(stack, 2)
    await publish_ends(stack, "T1")  # read again: ended, nothing to do
    await wait_follower_committed(stack, 3)

    no_seed = seed_file(stack.tmp / "seed.csv")
    expected, _ = rate(stack.tmp, "tornelo", no_seed, [*t1, *t2, close_line("T1"), close_line("T2")])
    values = first_copies(await published(stack, len(expected)))  # a kill may repeat what it had in flight
    assert per_key(values) == per_key(expected)
    assert ended(stack) == ["T1", "T2"]
    assert leftovers(stack) == {"outboxes": [], "ended_indexes": [], "closing": None}


def metric(port: int, name: str) -> float | None:
    """A sample of the follower's /metrics (its first series of `name`), None if absent."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            text = response.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


@pytest.mark.timeout(300)
async def test_the_follower_waits_past_its_drain_timeout_dead_letters_a_bad_end_and_goes_on(stack: Stack) -> None:
    """No worker runs: the follower's drain passes RATING_CLOSE_DRAIN_TIMEOUT_SECONDS, says so,
    exports how long it has waited, and keeps waiting (it never skips an end); once a worker
    runs, it closes the tournament. A bad end record before it is dead-lettered with a bad game's
    error kind and headers, and the follower goes on."""
    await stack.create_topics(games=1, ratings=4)
    await create_ends_topic(stack)
    games = pairs("T1", 6)
    await stack.produce(games)
    await publish_raw(
        stack, b'{"event_id":"bad-1","tournament_id":"no spaces allowed","finished_at":"2026-12-01T00:00:00Z"}'
    )
    await publish_ends(stack, "T1")
    port = free_port()
    log = stack.tmp / "follower.log"
    follower = start_follower(stack, log, close_drain_timeout_seconds=1, metrics_port=port)
    deadline = time.monotonic() + 60
    while (waited := metric(port, "rating_close_drain_waiting_seconds")) in (None, 0.0):
        assert time.monotonic() < deadline and follower.poll() is None, log.read_text()
        time.sleep(0.2)
    assert waited is not None and waited > 1.0
    time.sleep(2)
    assert follower.poll() is None  # still waiting, not exited
    assert ended(stack) == []
    assert "drain past RATING_CLOSE_DRAIN_TIMEOUT_SECONDS=1" in log.read_text()
    assert (metric(port, "rating_close_drain_waiting_seconds") or 0) > waited

    stack.start_worker(**tornelo(stack))
    wait_closed(stack, "T1", logs=log)
    assert metric(port, "rating_close_drain_waiting_seconds") == 0.0
    assert metric(port, "rating_close_ends_read_total") == 2.0
    letters = await read_topic(stack.broker.bootstrap, stack.dlq_topic, 1, timeout=30)
    assert len(letters) == 1
    headers = letters[0].headers
    assert headers["error.kind"] == "invalid_schema" and headers["source.topic"] == ends_topic(stack)
    assert "tournament_id" in headers["error.message"]


@pytest.mark.timeout(300)
async def test_an_operator_close_waits_for_the_follower_and_no_wait_does_not(stack: Stack) -> None:
    """`close-period T` publishes the end record (`operator/T/{unix_ms}`) and waits until the
    follower closed it; with no follower it exits 1 past --timeout saying what is pending (the
    record stays: a follower started later closes it); `--no-wait` returns once it is acknowledged."""
    await stack.create_topics(games=1, ratings=4)
    await create_ends_topic(stack)
    await stack.produce([*pairs("T1", 4), *pairs("T2", 4, "q")])
    stack.start_worker(**tornelo(stack))
    late = run(stack, "close-period", "T1", "--timeout", "2")
    said = late.stderr.decode(errors="replace")
    assert late.returncode == 1, said
    assert "T1 was not closed within --timeout 2 s: not marked ended yet" in said, said
    assert "offset 0 of" in said, said
    quick = run(stack, "close-period", "T2", "--no-wait")
    assert quick.returncode == 0, quick.stderr.decode(errors="replace")
    assert "the end of T2 published (operator/T2/" in quick.stderr.decode()
    assert ended(stack) == []

    log = stack.tmp / "follower.log"
    start_follower(stack, log)
    wait_closed(stack, "T2", logs=log)
    assert ended(stack) == ["T1", "T2"]  # in the order of their records
    waited = run(stack, "close-period", "T3")  # a tournament with no recorded game: only marked
    assert waited.returncode == 0, waited.stderr.decode(errors="replace")
    assert waited.stderr.decode().rstrip().endswith("close-period: T3 closed")
    records = await read_topic(stack.broker.bootstrap, ends_topic(stack), 3, timeout=30)
    values = [json.loads(r.value or b"") for r in records]
    assert [v["tournament_id"] for v in values] == ["T1", "T2", "T3"]
    for v in values:
        _, tournament, unix_ms = v["event_id"].split("/")
        assert v["event_id"].startswith("operator/") and tournament == v["tournament_id"] and int(unix_ms) > 0
        assert v["finished_at"].endswith("Z")
    status = run(stack, "close-period", "--status")
    assert "ended: 3, in the order they were marked\n  T1\n  T2\n  T3\n" in status.stdout.decode()


@pytest.mark.timeout(120)
async def test_a_command_started_with_other_parameters_than_the_prefix_recorded_stops_at_start(stack: Stack) -> None:
    """The first command that writes records tornelo's K and bonus factor; the worker, the
    follower and an operator's close started with other values stop at start (status 2, one
    line with both), writing nothing; the same values spelled otherwise are the same."""
    await stack.create_topics(games=1, ratings=4)
    await create_ends_topic(stack)
    seed = seed_file(stack.tmp / "seed.csv", "A,blitz,2000,40,")
    assert run(stack, "import", str(seed)).returncode == 0
    r = stack.redis_client()
    recorded = r.get(keys.parameters_key(PREFIX))
    defaults = b'RATING_TORNELO_K={"rapid": [20, 10], "blitz": [20, 10], "bullet": [10, 5]}'
    assert recorded == defaults + b" RATING_TORNELO_BONUS_FACTOR=1.00"
    before = sorted(r.scan_iter(f"{PREFIX}*"))
    other_k = '{"rapid": [30, 10], "blitz": [20, 10], "bullet": [10, 5]}'
    for args, settings in (
        (["run"], {"tornelo_k": other_k}),
        (["close-period", "--follow"], {"tornelo_bonus_factor": "0.5"}),
        (["close-period", "T1", "--no-wait"], {"tornelo_bonus_factor": "2"}),
    ):
        refused = run(stack, *args, timeout=60, **settings)
        said = refused.stderr.decode(errors="replace")
        assert refused.returncode == 2, (args, said)
        line = said.strip().splitlines()[-1]
        assert line.startswith("rating-worker: error: RATING_TORNELO_K="), line
        assert "RATING_TORNELO_BONUS_FACTOR=1.00 were recorded" in line and "this command was started with" in line, (
            line
        )
    assert sorted(r.scan_iter(f"{PREFIX}*")) == before
    same = run(
        stack,
        "close-period",
        "--status",
        tornelo_bonus_factor="1",
        tornelo_k='{"bullet":[10,5],"blitz":[20,10],"rapid":[20,10]}',
    )
    assert same.returncode == 0, same.stderr.decode(errors="replace")
