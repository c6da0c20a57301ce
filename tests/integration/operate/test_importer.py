"""`rating-worker import SEED.csv` against a real broker and a real Redis, through the real command.

Contract, "Seeding established ratings": one `imported` event per row, rows equal to the
state skipped, a rating with other state refused unless forced, a bad file refused whole.
"""

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.asyncio import Redis

from schemas.game_finished import GameFinished
from tests.support.kafka import Record, read_topic
from tests.support.stack import Stack
from worker.engine.engine import Engine
from worker.replay.seed_file import read_seed_file
from worker.rules.hundredths import Hundredths, Points
from worker.store import keys
from worker.store.protocol import StateWrite, Write
from worker.store.redis_store import RedisStore
from worker.store.schedule import plan
from worker.systems.arena.codec import RATING_STATES, decode_state
from worker.systems.arena.state import UNSEEN, RatingState
from worker.systems.registry import ARENA

pytestmark = pytest.mark.integration

PREFIX = "rating:"  # RATING_REDIS_KEY_PREFIX's default, which the stack's commands use
HEADER = "player_id,category,rating,rated_games"
ROWS = [
    ("p1", "blitz", "1800.00", 40),
    ("p1", "rapid", "1750.5", 3),
    ("p2", "blitz", "2105.27", 0),
    ("p2", "bullet", "1000.00", 152),
    ("p3", "rapid", "1523.04", 12),
    ("p4", "bullet", "1999.99", 31),
]


@pytest.fixture
async def stack(stack: Stack) -> Stack:
    """The test's stack, its topics created (the default partitions: 1 games, 4 ratings, 1 dead letters)."""
    await stack.create_topics()
    return stack


def seed_file(stack: Stack, name: str, rows: list[tuple[str, str, str, int]], extra: str = "") -> Path:
    path = stack.tmp / name
    lines = [HEADER, *(f"{p},{c},{r},{n}" for p, c, r, n in rows)]
    path.write_text("\n".join(lines) + "\n" + extra, encoding="utf-8")
    return path


def hundredths(text: str) -> int:
    whole, _, frac = text.partition(".")
    return int(whole) * 100 + int((frac + "00")[:2])


def key(row: tuple[str, str, str, int]) -> str:
    return f"{row[0]}/{row[1]}"


async def events(stack: Stack, expect: int, timeout: float = 30) -> list[dict[str, Any]]:
    """The ratings topic, decoded, in offset order per partition; checks every record's key."""
    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, expect, timeout=timeout, idle=1.0)
    return [_decoded(r) for r in sorted(records, key=lambda r: (r.partition, r.offset))]


def _decoded(record: Record) -> dict[str, Any]:
    assert record.value is not None
    event: dict[str, Any] = json.loads(record.value)
    assert record.key == f"{event['player_id']}/{event['category']}".encode()
    return event


def redis_dump(r: redis.Redis) -> dict[bytes, Any]:
    """Every key of the database and its value (strings, lists and hashes), to compare before and after;
    but where the sweep of expired records stands, which moves with the clock."""
    out: dict[bytes, Any] = {}
    for k in r.scan_iter("*"):
        kind = r.type(k)
        out[k] = r.lrange(k, 0, -1) if kind == b"list" else r.hgetall(k) if kind == b"hash" else r.get(k)
        if k == keys.store_key(PREFIX).encode():
            out[k] = {f: v for f, v in out[k].items() if not f.startswith(b"sweep_")}
    return out


def state(r: redis.Redis, rating: str) -> RatingState | None:
    value = r.get(keys.state_key(PREFIX, rating))
    assert value is None or isinstance(value, bytes)  # the client does not decode responses
    return None if value is None else decode_state(value)


def assert_clean_outboxes(r: redis.Redis) -> None:
    """Everything written was published and acknowledged: no outbox and no lease remains."""
    assert list(r.scan_iter(f"{PREFIX}{keys.OUTBOX}*")) == []
    assert list(r.scan_iter(f"{PREFIX}{keys.LEASE}*")) == []


async def test_import_publishes_one_imported_event_per_row_and_a_rerun_nothing(stack: Stack) -> None:
    r = stack.redis_client()
    seed = seed_file(stack, "seed.csv", ROWS)
    done = stack.import_seed(seed)
    assert done.returncode == 0, done.stderr.decode()
    assert f"import: {len(ROWS)} rows: imported {len(ROWS)}".encode() in done.stderr
    published = await events(stack, len(ROWS))
    assert len(published) == len(ROWS)
    by_key = {f"{e['player_id']}/{e['category']}": e for e in published}
    assert set(by_key) == {key(row) for row in ROWS}
    for row in ROWS:
        e = by_key[key(row)]
        assert e["kind"] == "imported"
        assert e["event_id"] == f"import/{row[0]}/{row[1]}/1"
        assert e["seq"] == 1
        assert e["rating_before"] is None and e["delta"] is None
        assert hundredths(str(e["rating_after"])) == hundredths(row[2])
        assert e["display_before"] == 1200
        assert e["game_id"] is None and e["finished_at"] is None and e["k_factor"] is None
        assert e["state"] == {
            "status": "rated",
            "rating": e["rating_after"],
            "rated_games": row[3],
            "qualifying": [],
            "seq": 1,
        }
        assert state(r, key(row)) == RatingState(Hundredths(hundredths(row[2])), row[3], (), 1)
    assert_clean_outboxes(r)
    before = redis_dump(r)

    again = stack.import_seed(seed)
    assert again.returncode == 0, again.stderr.decode()
    assert f"import: {len(ROWS)} rows: unchanged {len(ROWS)}".encode() in again.stderr
    assert b"refused" not in again.stderr
    assert len(await events(stack, len(ROWS))) == len(ROWS)  # nothing new published
    assert redis_dump(r) == before


async def test_a_row_differing_from_the_state_is_refused_unless_forced(stack: Stack) -> None:
    r = stack.redis_client()
    done = stack.import_seed(seed_file(stack, "first.csv", ROWS[:3]))
    assert done.returncode == 0, done.stderr.decode()
    assert len(await events(stack, 3)) == 3
    # p1/blitz differs (rating), p1/rapid too (count), p2/blitz equals, p9/rapid is new.
    changed = [
        ("p1", "blitz", "1850.25", 40),
        ("p1", "rapid", "1750.50", 4),
        ROWS[2],
        ("p9", "rapid", "1600.00", 5),
    ]
    second = seed_file(stack, "second.csv", changed)
    old_p1 = state(r, "p1/blitz"), state(r, "p1/rapid")

    refused = stack.import_seed(second)
    assert refused.returncode == 1, refused.stderr.decode()
    stderr = refused.stderr.decode()
    assert "refused: p1/blitz already has state" in stderr
    assert "refused: p1/rapid already has state" in stderr
    assert "p2/blitz" not in stderr
    # The log and the summary say the same.
    assert '"message": "4 of 4 rows done: imported 1, refused 2, unchanged 1"' in stderr
    assert "import: 4 rows: imported 1, refused 2, unchanged 1" in stderr
    # The refused ratings are unchanged; the new one was imported (the refusal is per rating).
    assert (state(r, "p1/blitz"), state(r, "p1/rapid")) == old_p1
    assert state(r, "p9/rapid") == RatingState(Hundredths(160000), 5, (), 1)
    published = await events(stack, 4)
    first_ids = {f"import/{p}/{c}/1" for p, c, _, _ in ROWS[:3]}
    assert sorted(e["event_id"] for e in published) == sorted([*first_ids, "import/p9/rapid/1"])
    assert_clean_outboxes(r)

    forced = stack.import_seed(second, "--force")
    assert forced.returncode == 0, forced.stderr.decode()
    assert b"refused" not in forced.stderr
    published = await events(stack, 6)
    assert len(published) == 6
    new = {e["event_id"]: e for e in published if e["event_id"] not in {*first_ids, "import/p9/rapid/1"}}
    assert set(new) == {"import/p1/blitz/2", "import/p1/rapid/2"}
    blitz, rapid = new["import/p1/blitz/2"], new["import/p1/rapid/2"]
    assert (blitz["seq"], blitz["kind"]) == (2, "imported")
    assert (blitz["rating_before"], blitz["rating_after"], blitz["delta"]) == (1800.0, 1850.25, 50.25)
    assert blitz["display_before"] == 1800 and blitz["display_after"] == 1850
    assert (rapid["rating_before"], rapid["rating_after"], rapid["delta"]) == (1750.5, 1750.5, 0.0)
    assert rapid["state"]["rated_games"] == 4
    assert state(r, "p1/blitz") == RatingState(Hundredths(185025), 40, (), 2)
    assert state(r, "p1/rapid") == RatingState(Hundredths(175050), 4, (), 2)
    assert state(r, "p9/rapid") == RatingState(Hundredths(160000), 5, (), 1)  # equal rows stay skipped with --force
    assert state(r, "p2/blitz") == RatingState(Hundredths(210527), 0, (), 1)
    assert_clean_outboxes(r)


async def test_a_rating_with_qualifying_games_has_state_and_is_refused_unless_forced(stack: Stack) -> None:
    r = stack.redis_client()
    assert stack.import_seed(seed_file(stack, "rated.csv", [("r1", "blitz", "1800.00", 40)])).returncode == 0
    # u has one qualifying game (a draw against r1), written by a worker's store and acknowledged.
    client = Redis.from_url(stack.redis.url)
    try:
        store = RedisStore(client, PREFIX, "worker", lease_seconds=5, retention_seconds=3600, codec=RATING_STATES)
        snapshot = await store.read(["u/blitz", "r1/blitz"], [])
        game = GameFinished.model_validate(
            {
                "event_id": "e1",
                "game_id": "g1",
                "finished_at": "2026-11-29T21:44:51Z",
                "rated": True,
                "time_control": {"base_seconds": 180, "increment_seconds": 0},
                "white_id": "u",
                "black_id": "r1",
                "result": "1/2-1/2",
                "termination": "draw_agreement",
            }
        )
        planned = plan(Engine(ARENA, Points(1200)), [game], snapshot)
        assert planned[0].write is not None
        applied, claimed = await store.apply([planned[0].write])
        assert applied == [True]
        await store.ack({k: head for k, (head,) in claimed.outboxes.items()})
    finally:
        await client.aclose()
    qualifying = state(r, "u/blitz")
    assert qualifying is not None and qualifying.seq == 1 and len(qualifying.qualifying) == 1

    path = seed_file(stack, "u.csv", [("u", "blitz", "1500.00", 0)])
    refused = stack.import_seed(path)
    assert refused.returncode == 1, refused.stderr.decode()
    assert "refused: u/blitz already has state" in refused.stderr.decode()
    assert state(r, "u/blitz") == qualifying
    assert len(await events(stack, 1)) == 1  # only r1's import

    forced = stack.import_seed(path, "--force")
    assert forced.returncode == 0, forced.stderr.decode()
    imported = [e for e in await events(stack, 2) if e["player_id"] == "u"]
    assert len(imported) == 1
    e = imported[0]
    assert (e["event_id"], e["kind"], e["seq"]) == ("import/u/blitz/2", "imported", 2)
    assert (e["rating_before"], e["rating_after"], e["delta"]) == (None, 1500.0, None)
    assert e["display_before"] == 1200 and e["display_after"] == 1500
    assert e["state"] == {"status": "rated", "rating": 1500.0, "rated_games": 0, "qualifying": [], "seq": 2}
    assert state(r, "u/blitz") == RatingState(Hundredths(150000), 0, (), 2)
    assert_clean_outboxes(r)


BAD_FILES = {
    "rating below 1000.00": ("p5,blitz,999.99,3\n", ":8:"),
    "three decimals": ("p5,blitz,1500.001,3\n", ":8:"),
    "negative count": ("p5,blitz,1500,-1\n", ":8:"),
    "bad category": ("p5,classical,1500,3\n", ":8:"),
    "bad id": ("p/5,blitz,1500,3\n", ":8:"),
    "too few fields": ("p5,blitz,1500\n", ":8:"),
    "repeated rating": ("p1,blitz,1900.00,41\n", "seeded twice"),
}


@pytest.mark.parametrize("bad", list(BAD_FILES), ids=list(BAD_FILES))
async def test_a_bad_file_is_refused_whole_and_writes_nothing(stack: Stack, bad: str) -> None:
    r = stack.redis_client()
    line, message = BAD_FILES[bad]
    # Good rows first (new ratings and forced changes), the bad one last: nothing is written.
    path = seed_file(stack, "bad.csv", ROWS, extra=line)
    for args in ((), ("--force",)):
        done = stack.import_seed(path, *args)
        assert done.returncode == 2, done.stderr.decode()
        stderr = done.stderr.decode()
        assert stderr.startswith("rating-worker: error: ") and str(path) in stderr, stderr
        assert message in stderr, stderr
        assert r.dbsize() == 0
    # Same over existing state: not a key changes, nothing is published.
    assert stack.import_seed(seed_file(stack, "good.csv", ROWS[:2])).returncode == 0
    before = redis_dump(r)
    assert stack.import_seed(path, "--force").returncode == 2
    assert redis_dump(r) == before
    assert len(await events(stack, 2)) == 2


async def test_a_rerun_after_a_partial_import_imports_just_the_rest(stack: Stack) -> None:
    r = stack.redis_client()
    rows = [(f"q{n:02d}", category, f"{1500 + n}.{n:02d}", n) for n in range(10) for category in ("blitz", "rapid")]
    half = len(rows) // 2
    first = stack.import_seed(seed_file(stack, "half.csv", rows[:half]))
    assert first.returncode == 0, first.stderr.decode()
    assert len(await events(stack, half)) == half
    full = stack.import_seed(seed_file(stack, "full.csv", rows))
    assert full.returncode == 0, full.stderr.decode()
    assert f"import: {len(rows)} rows: imported {len(rows) - half}, unchanged {half}".encode() in full.stderr
    published = await events(stack, len(rows))
    assert len(published) == len(rows)
    assert sorted(e["event_id"] for e in published) == sorted(f"import/{p}/{c}/1" for p, c, _, _ in rows)
    for p, c, rating, n in rows:
        assert state(r, f"{p}/{c}") == RatingState(Hundredths(hundredths(rating)), n, (), 1)
    assert_clean_outboxes(r)


async def test_a_rerun_after_a_stop_before_publication_publishes_the_pending_events(stack: Stack) -> None:
    """An import stopped after its atomic write but before publishing (killed, Kafka down, Ctrl-C)
    leaves the imported events in the outboxes. Its re-run finds the rows equal to the state
    (skipped), and must still publish them: every output event is published at least once.
    """
    r = stack.redis_client()
    rows = ROWS[:2]
    path = seed_file(stack, "seed.csv", rows)
    # What the stopped import wrote: its rows applied through the store, its lease since expired.
    await _apply_like_a_stopped_import(stack, path)
    pending = {key(row): r.lrange(keys.outbox_key(PREFIX, key(row)), 0, -1) for row in rows}
    assert all(len(v) == 1 for v in pending.values())
    assert list(r.scan_iter(f"{PREFIX}{keys.LEASE}*")) == []

    done = stack.import_seed(path)
    assert done.returncode == 0, done.stderr.decode()
    published = await events(stack, len(rows), timeout=5)
    assert sorted(e["event_id"] for e in published) == sorted(f"import/{p}/{c}/1" for p, c, _, _ in rows), (
        "the imported events left in the outboxes were never published: " + done.stderr.decode()
    )
    assert_clean_outboxes(r)


async def _apply_like_a_stopped_import(stack: Stack, path: Path) -> None:
    engine = Engine(ARENA, training_rating=Points(1200))
    client = Redis.from_url(stack.redis.url)
    try:
        store = RedisStore(
            client, PREFIX, "stopped-import", lease_seconds=0.2, retention_seconds=3600, codec=RATING_STATES
        )
        writes = []
        for row in read_seed_file(path, ARENA.rules):
            outcome = engine.seed(row, UNSEEN)
            assert outcome.update is not None
            u = outcome.update
            writes.append(Write("", b"", ((u.key, 0),), (StateWrite(u.key, u.state, u.payload),)))
        applied, _ = await store.apply(writes)
        assert all(applied)
        await asyncio.sleep(0.4)  # the stopped process's lease expires
    finally:
        await client.aclose()
