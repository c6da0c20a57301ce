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
  nothing;
- a bootstrap from history (`rebuild --closed-through`, `switch-over` with no worker, workers
  from the rebuild's offsets) gives `rate`'s states, and later games continue as in `rate`;
- closes SIGKILLed at each step and run again, and two at once, publish `rate`'s events;
- an erased player held in others' games reads as unrated at their close; a rating holding
  games not closed yet is not imported, forced or not.
"""

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from redis.asyncio import Redis

from tests.support.closes import (
    FIDE,
    PREFIX,
    close_line,
    close_period,
    closed,
    command,
    fide_game,
    first_copies,
    kill_when,
    killed_close_store,
    leftovers,
    published,
    seed_file,
    segments,
    start_close,
)
from tests.support.stack import Stack
from tests.support.systems import per_key, rate, seeded
from worker.embedded.traffic import traffic
from worker.rules.finished_at import month_of
from worker.rules.instants import instant
from worker.store import keys
from worker.systems.registry import BY_NAME

pytestmark = pytest.mark.integration


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


@pytest.mark.parametrize("wiped", [False, True], ids=["as-left", "restored-after-a-wipe"])
@pytest.mark.timeout(300)
async def test_a_game_after_a_mark_closes_its_players_first_and_close_period_finishes_the_close(
    stack: Stack, wiped: bool
) -> None:
    """November marked, as a killed close leaves it; a game of December closes A and B first; then
    (`restored-after-a-wipe`) Redis loses everything and `restore` gives back the states, the
    latest closed month, the close in progress and the index; `close-period` finishes the close:
    per rating, `rate`'s events with the close line where the mark fell."""
    await stack.create_topics(games=1, ratings=4)
    seed = stack.tmp / "seed.csv"
    seed_file(seed, "A,blitz,2000,40,,", "B,blitz,1900,40,,", "C,blitz,2100,40,,", "D,blitz,2450,40,,")
    assert stack.import_seed(seed, system="fide").returncode == 0

    november = [
        fide_game("g1", "A", "B", "1-0", "2026-11-03T10:00:00Z"),
        fide_game("g2", "C", "A", "1/2-1/2", "2026-11-04T10:00:00Z"),
        fide_game("g3", "A", "D", "0-1", "2026-11-05T10:00:00Z"),
        fide_game("g4", "B", "C", "1-0", "2026-11-06T10:00:00Z"),
    ]
    later = [fide_game("g9", "A", "B", "1-0", "2026-12-01T09:00:00Z")]
    stack.start_worker(**FIDE)
    await stack.produce(november)
    await stack.wait_committed(await stack.end_offsets(len(november)), timeout=60)

    # November marked closed, as a close-period killed right after its mark leaves it.
    client = Redis.from_url(stack.redis.url)
    try:
        store = killed_close_store(client)
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
    if wiped:  # Redis lost everything in the middle of the close
        r = stack.redis_client()
        states = {k: r.get(k) for k in r.scan_iter(f"{PREFIX}{keys.STATE}*")}
        for worker in stack.workers:
            worker.kill()
            worker.wait(timeout=10)
        r.delete(*r.scan_iter(f"{PREFIX}*"))
        restored = command(stack, "restore")
        said = restored.stderr.decode(errors="replace")
        assert restored.returncode == 0, said
        assert "the close of 2026-11 was interrupted" in said, said
        assert {k: r.get(k) for k in r.scan_iter(f"{PREFIX}{keys.STATE}*")} == states
        assert closed(stack) == "2026-11" and leftovers(stack)["closing"] == b"2026-11"
        assert r.smembers(keys.index_key(PREFIX, "2026-11")) == {b"C/blitz", b"D/blitz"}  # A and B hold none
        stack.start_worker(**FIDE)
    done = close_period(stack, "2026-11")  # finishes the close in progress: C and D
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    report = done.stderr.decode()
    found = 0 if wiped else 2  # the index a restore rebuilds holds only the ratings still to close
    assert f"marked none; 2 ratings closed, {found} found closed already" in report, report

    november_closes = close_line("2026-11")
    expected, _ = rate(stack.tmp, "fide", seed, [*november, november_closes, *later])
    values = await published(stack, len(expected))
    assert per_key(values) == per_key(expected)
    a = [json.loads(v)["event_id"] for v in per_key(values)["A/blitz"]]
    assert a[-2:] == ["period/2026-11/A/blitz", "g9/A"]
    assert leftovers(stack) == {"outboxes": [], "indexes": [b"2026-12"], "closing": None}


@pytest.mark.timeout(200)
async def test_close_period_refuses_what_it_must_and_a_drain_past_its_timeout_marks_nothing(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=4)
    seed = stack.tmp / "seed.csv"
    seed_file(seed, "A,blitz,2000,40,,")

    for args, named in (
        (["2099-01"], "2099-01 is not due yet"),
        (["9999-12", "--force"], "'9999-12' is not a period that can be closed"),
        (["2026-13"], "'2026-13' is not a period that can be closed"),
        ([], "exactly one of PERIOD, --due, --init MONTH, --status and --follow"),
        (["2026-10", "--due"], "exactly one of"),
        (["--follow"], "has no end records to follow"),
        (["2026-10", "--no-wait"], "--no-wait and --timeout go with TOURNAMENT_ID"),
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


def without_seq(event: dict[str, Any]) -> dict[str, Any]:
    """An event as it compares across a bootstrap: a rating's seq counts its changes since its
    imported event there, since its first event in `rate`."""
    state = {k: v for k, v in event["state"].items() if k != "seq"}
    return {**{k: v for k, v in event.items() if k not in ("seq", "event_id", "state")}, "state": state}


@pytest.mark.timeout(400)
async def test_a_bootstrap_from_history_gives_rates_states_and_later_games_continue_as_in_rate(
    stack: Stack,
) -> None:
    """A new deployment with months of history: `rebuild --closed-through`, `switch-over` (no
    worker running), then workers from the rebuild's offsets, later games and a close: every
    rating as `rate` on the history (each month closed after its own games) and the later lines."""
    await stack.create_topics(games=1, ratings=4)  # one partition: the workers apply the games in `rate`'s order
    sim = traffic(BY_NAME["fide"])(40, seed=11)
    seed = stack.tmp / "seed.csv"
    seed.write_text(sim.seed_csv())
    games = [line for line in sim.game_lines(400) if b'"control"' not in line]
    history, later = games[:250], games[250:]
    later.insert(5, history[-1])  # a late copy of a game of the history: a duplicate (its record copied)
    history_months = sorted({month_of(json.loads(line)["finished_at"]) for line in history})
    assert len(history_months) >= 4, history_months
    through = history_months[-2]  # the last month of the history stays open
    await stack.produce(history)
    await stack.end_offsets(len(history))

    rebuilt = command(stack, "rebuild", "--seed", str(seed), "--closed-through", through)
    assert rebuilt.returncode == 0, rebuilt.stderr.decode(errors="replace")
    assert f"periods closed through {through}" in rebuilt.stderr.decode()
    switched = command(stack, "switch-over")
    said = switched.stderr.decode(errors="replace")
    assert switched.returncode == 0, said
    assert "no worker has applied a game: a bootstrap" in said
    assert "keys of the rebuild's idempotency records copied" in said
    assert f"the live calendar set to the rebuild's: {through} closed" in said
    assert f"the workers start from the rebuild's offsets (partition 0 at {len(history)})" in said
    assert closed(stack) == through

    # `rate` on the history in the rebuild's order, each month closed right after its games.
    def ordered(line: bytes) -> tuple[tuple[int, str], str]:
        game = json.loads(line)
        return instant(game["finished_at"]), game["game_id"]

    file: list[bytes] = []
    for line in sorted(history, key=ordered):
        month = month_of(json.loads(line)["finished_at"])
        if file and month != month_of(json.loads(file[-1])["finished_at"]) and file_month_closes(file, through):
            file.append(close_line(month_of(json.loads(file[-1])["finished_at"])))
        file.append(line)
    file.append(close_line(through))
    at_bootstrap, letters = rate(stack.tmp, "fide", seed, file)
    assert not letters
    final_month = month_of(json.loads(later[-1])["finished_at"])
    expected, letters = rate(stack.tmp, "fide", seed, [*file, *later, close_line(final_month)])
    assert not letters
    assert expected[: len(at_bootstrap)] == at_bootstrap  # `rate` is deterministic: its later lines follow

    imported = await published(stack, len(per_key(at_bootstrap)))
    last_state = {k: without_seq(json.loads(v[-1]))["state"] for k, v in per_key(at_bootstrap).items()}
    assert {k: without_seq(json.loads(v[-1]))["state"] for k, v in per_key(imported).items()} == last_state
    assert {json.loads(v)["kind"] for v in imported} == {"imported"}

    stack.start_worker(**FIDE)
    await stack.produce(later)
    await stack.wait_committed(await stack.end_offsets(len(history) + len(later)), timeout=120)
    done = close_period(stack, final_month)
    assert done.returncode == 0, done.stderr.decode(errors="replace") + stack.logs()[-3000:]
    values = await published(stack, len(imported) + len(expected) - len(at_bootstrap))
    since = {
        k: [without_seq(e) for e in map(json.loads, vs) if e["kind"] != "imported"] for k, vs in per_key(values).items()
    }
    assert {k: v for k, v in since.items() if v} == {
        k: [without_seq(json.loads(v)) for v in vs] for k, vs in per_key(expected[len(at_bootstrap) :]).items()
    }
    assert leftovers(stack)["outboxes"] == []


def file_month_closes(file: list[bytes], through: str) -> bool:
    """Whether the month of the file's last game is one the bootstrap closes (up to `through`)."""
    return month_of(json.loads(file[-1])["finished_at"]) <= through


@pytest.mark.timeout(500)
async def test_closes_killed_at_any_step_and_run_again_or_run_two_at_once_publish_what_rate_writes(
    stack: Stack,
) -> None:
    """Each close is SIGKILLed at another step (starting, draining, right after its mark, while it
    closes and publishes) and run again, and some run twice at once: per rating, exactly `rate`'s
    events (copies of an event only byte-identical), nothing left in an outbox, an index or in
    progress."""
    await stack.create_topics(games=1, ratings=4)
    sim, seed = seeded(stack, "fide", 60, seed=5)
    lines = list(sim.game_lines(700))
    stack.start_worker(**FIDE)
    steps = [(None, 0.0), (None, 0.3), ("marked closed", 0.0), ("ratings to close", 0.0), ("ratings to close", 0.05)]
    killed, doubled = 0, 0
    rng = random.Random(5)
    for n, (games, month) in enumerate(segments(lines)):
        if games:
            await stack.produce(games)
        if month is None:
            continue
        if n % 4 == 3:  # two closes at once
            logs = [stack.tmp / f"close-{n}-{i}.log" for i in (0, 1)]
            both = [start_close(stack, log, month) for log in logs]
            statuses = [p.wait(timeout=120) for p in both]
            assert statuses == [0, 0], [log.read_text(errors="replace") for log in logs]
            doubled += 1
            continue
        log = stack.tmp / f"close-{n}.log"
        said, delay = steps[n % len(steps)]
        killed += kill_when(start_close(stack, log, month), log, said, delay * rng.random())
        again = close_period(stack, month)
        assert again.returncode == 0, again.stderr.decode(errors="replace") + log.read_text(errors="replace")
    assert killed >= 5 and doubled >= 3, (killed, doubled)
    end = await stack.end_offsets(sum(len(g) for g, _ in segments(lines)))
    await stack.wait_committed(end, timeout=120)

    expected, letters = rate(stack.tmp, "fide", seed, lines)
    assert not letters
    values = first_copies(await published(stack, len(expected)))
    assert per_key(values) == per_key(expected)
    assert leftovers(stack)["outboxes"] == [] and leftovers(stack)["closing"] is None


@pytest.mark.timeout(200)
async def test_an_erased_player_held_in_others_games_reads_as_unrated_at_their_close(stack: Stack) -> None:
    """B is erased while A holds a game against him (no month closed yet: held): at November's
    close, A's game against B is not rated, as against an unrated opponent; his game against C is."""
    await stack.create_topics(games=1, ratings=4)
    seed = stack.tmp / "seed.csv"
    seed_file(seed, "A,blitz,2000,40,,", "B,blitz,1900,40,,", "C,blitz,2100,40,,")
    assert stack.import_seed(seed, system="fide").returncode == 0
    games = [
        fide_game("g1", "A", "B", "1-0", "2026-11-03T10:00:00Z"),
        fide_game("g2", "A", "C", "1-0", "2026-11-04T10:00:00Z"),
    ]
    stack.start_worker(**FIDE)
    await stack.produce(games)
    await stack.wait_committed(await stack.end_offsets(len(games)), timeout=60)
    # A holds November's games: seeding him is refused, forced or not (they were counted with his rating).
    row = stack.tmp / "a.csv"
    seed_file(row, "A,blitz,2050,40,,")
    refused = command(stack, "import", str(row), "--force")
    assert refused.returncode == 1, refused.stderr.decode(errors="replace")
    assert "refused: A/blitz holds games of a period not closed yet" in refused.stderr.decode()
    erased = command(stack, "erase", "B")
    assert erased.returncode == 0, erased.stderr.decode(errors="replace")
    done = close_period(stack, "2026-11")
    assert done.returncode == 0, done.stderr.decode(errors="replace")

    november_closes = close_line("2026-11")
    without_b, _ = rate(stack.tmp, "fide", seed, [games[1], november_closes])  # as if A had never met B
    with_b, _ = rate(stack.tmp, "fide", seed, [*games, november_closes])
    values = [json.loads(v) for v in await published(stack, 10)]
    close_of = {e["player_id"]: e for e in values if e["event_id"].startswith("period/2026-11/")}
    assert set(close_of) == {"A", "C"}  # B is gone: nothing of his is published again

    def rated(events: list[bytes], player: str) -> tuple[object, object]:
        event = next(e for e in map(json.loads, events) if e["event_id"] == f"period/2026-11/{player}/blitz")
        return event["rating_after"], event["detail"]

    assert (close_of["A"]["rating_after"], close_of["A"]["detail"]) == rated(without_b, "A")
    assert rated(with_b, "A") != rated(without_b, "A")  # the game against B would have counted
    assert (close_of["C"]["rating_after"], close_of["C"]["detail"]) == rated(with_b, "C")


@pytest.mark.timeout(300)
async def test_a_close_of_more_ratings_than_a_chunk_closes_them_several_chunks_at_once_as_rate(stack: Stack) -> None:
    """1,600 ratings with games of November, held (no month closed before): the close takes them in
    chunks of 500, several at once, each rating's held games counted with opponents' list ratings
    that other chunks are closing meanwhile; per rating, `rate`'s events."""
    await stack.create_topics(games=1, ratings=4)
    rng = random.Random(17)
    players = [f"p{n:04d}" for n in range(1600)]
    seed = stack.tmp / "seed.csv"
    rows = [f"{p},blitz,{rng.randrange(1400, 2500)},{rng.randrange(0, 80)},," for p in players]
    seed_file(seed, *rows)
    assert stack.import_seed(seed, system="fide").returncode == 0
    rng.shuffle(players)
    results = ("1-0", "0-1", "1/2-1/2")
    games = [
        fide_game(
            f"g{n}",
            players[n],
            players[(n + 1) % len(players)],
            rng.choice(results),
            f"2026-11-{n % 28 + 1:02d}T12:00:00Z",
        )
        for n in range(len(players))
    ]  # each player in two games, his opponents' ratings in other chunks
    stack.start_worker(**FIDE)
    await stack.produce(games)
    await stack.wait_committed(await stack.end_offsets(len(games)), timeout=120)
    done = close_period(stack, "2026-11")
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert "1600 ratings to close" in done.stderr.decode()

    expected, letters = rate(stack.tmp, "fide", seed, [*games, close_line("2026-11")])
    assert not letters
    assert per_key(await published(stack, len(expected))) == per_key(expected)
    assert leftovers(stack) == {"outboxes": [], "indexes": [], "closing": None}


@pytest.mark.timeout(200)
async def test_a_bootstrap_is_refused_once_a_worker_has_applied_records_to_the_prefix(stack: Stack) -> None:
    """No state under the prefix (its states deleted), but its watermarks show a worker applied
    records to it: a bootstrap would set a start point the workers have passed, so `switch-over`
    refuses and writes nothing."""
    await stack.create_topics(games=1, ratings=4)
    games = [fide_game("g1", "A", "B", "1-0", "2026-10-03T10:00:00Z")]
    await stack.produce(games)
    rebuilt = command(stack, "rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr.decode(errors="replace")
    stack.start_worker(**FIDE)
    await stack.produce([b"not json"])  # dead-lettered: the watermark passes it too
    await stack.wait_committed(await stack.end_offsets(2), timeout=60)
    r = stack.redis_client()
    r.delete(*r.scan_iter(f"{PREFIX}{keys.STATE}*"))  # the states gone, the watermarks left
    for worker in stack.workers:
        worker.kill()
        worker.wait(timeout=10)
    refused = command(stack, "switch-over")
    said = refused.stderr.decode(errors="replace")
    assert refused.returncode == 1, said
    assert "the live prefix has no state but workers have applied games to it" in said.strip().splitlines()[-1]
    assert not list(r.scan_iter(f"{PREFIX}{keys.STATE}*"))
