"""The commands with RATING_SYSTEM=uscf-cc against a real broker, Redis and worker: `topics` makes
the system's topics (its input topic too) and `check` passes them; `replay-dead-letters` puts a
record back on the topic it came from, and a game parked as too large is applied once after the
limit is raised; `erase` forgets a correspondence rating (and refuses a category of another
system); `rebuild` and `switch-over` publish a rebuilt rating that differs, and unrate a live
rating the rebuild has no state for (`rating_after` null); a key prefix owned by one system
stops the other's commands at start."""

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from schemas.rating_changed_v2 import CcRatingChanged
from tests.support import commands
from tests.support.contract import VALID_GAME
from tests.support.kafka import read_topic
from tests.support.stack import Stack

pytestmark = pytest.mark.integration

CC = {"system": "uscf-cc"}
PREFIX = "rating-uscf-cc:"
SEED_ROWS = "player_id,category,rating,rated_games\nann,correspondence,1600.00,40\nbob,correspondence,1400,10\n"


def run(stack: Stack, *args: str, **settings: object) -> subprocess.CompletedProcess[str]:
    return commands.run(
        [sys.executable, "-m", "worker", *args],
        env=stack.env(log_level="error", command_retry_seconds=5, **{**CC, **settings}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def game(game_id: str, white: str = "ann", black: str = "bob", **extra: object) -> bytes:
    return json.dumps(
        {**VALID_GAME, "event_id": f"e-{game_id}", "game_id": game_id, **extra}
        | {
            "white_id": white,
            "black_id": black,
        }
    ).encode()


def seed(stack: Stack) -> Path:
    path = stack.tmp / "seed.csv"
    path.write_text(SEED_ROWS)
    done = run(stack, "import", str(path))
    assert done.returncode == 0, done.stderr
    return path


async def events(stack: Stack, at_least: int) -> list[dict[str, object]]:
    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, at_least)
    return [json.loads(r.value) for r in sorted(records, key=lambda r: (r.partition, r.offset)) if r.value]


async def test_topics_makes_the_systems_topics_and_check_passes_them(stack: Stack) -> None:
    done = run(stack, "topics", "--replication", "1", partitions=2)
    assert done.returncode == 0, done.stderr
    assert f"created {stack.games_topic}, {stack.ratings_topic}, {stack.dlq_topic}" in done.stderr
    checked = run(stack, "check", partitions=2)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert all(line.startswith("ok") for line in checked.stdout.splitlines()), checked.stdout
    assert f"ok       redis key prefix: {PREFIX} is not another system's" in checked.stdout.splitlines()
    # Another system's prefix: check says so (fatal) and claims nothing.
    r = stack.redis_client()
    r.set(f"{PREFIX}system", "arena")
    refused = run(stack, "check", partitions=2)
    assert refused.returncode == 1
    assert f"redis key prefix: RATING_REDIS_KEY_PREFIX={PREFIX} belongs to the rating system arena" in refused.stdout


async def test_a_dead_letter_goes_back_to_its_topic_and_a_large_game_is_applied_once(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    seed(stack)
    large = game("g-large", termination="forfeit", forfeit_kind="special", note=" " * 2000)
    bad = game("g-bad", termination="forfeit", forfeit_kind="Special")
    producer = AIOKafkaProducer(bootstrap_servers=stack.broker.bootstrap, acks="all")
    await producer.start()
    try:
        for value in (large, bad):
            await (await producer.send(stack.games_topic, value, key=b"k"))
    finally:
        await producer.stop()
    worker = stack.start_worker(max_message_bytes=1000, **CC)
    await stack.wait_committed({0: 2})
    letters = await read_topic(stack.broker.bootstrap, stack.dlq_topic, 2)
    assert [r.headers["error.kind"] for r in letters] == ["too_large", "invalid_schema"]
    assert {r.headers["source.topic"] for r in letters} == {stack.games_topic}
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    stack.start_worker(**CC)  # the limit raised

    dry = run(stack, "replay-dead-letters")
    assert dry.stdout.splitlines() == ["invalid_schema: 1", "too_large: 1"]
    applied = run(stack, "replay-dead-letters", "--kind", "too_large", "--apply")
    assert applied.returncode == 0, applied.stderr
    assert f"replayed 1 to {stack.games_topic}" in applied.stderr
    await stack.wait_committed({0: 3})
    won = [e for e in await events(stack, 3) if e["game_id"] == "g-large"]
    # A special forfeit: the winner only, 3.20 (K 16), no credit (docs/systems/uscf-cc.md, "Rules and
    # readings": 20 % of what a win over an equally rated opponent gives).
    assert [(e["player_id"], e["kind"], e["rating_after"], e["state"]) for e in won] == [
        ("ann", "forfeit_win", 1603.2, {"rating": 1603.2, "rated_games": 40, "seq": 2})
    ]
    assert run(stack, "replay-dead-letters", "--kind", "too_large", "--apply").returncode == 0
    await stack.wait_committed({0: 4})
    assert len([e for e in await events(stack, 3) if e["game_id"] == "g-large"]) == 1  # a duplicate now


async def test_erase_forgets_a_correspondence_rating(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    seed(stack)
    r = stack.redis_client()
    assert r.exists(f"{PREFIX}s:ann/correspondence")
    wrong = run(stack, "erase", "ann", "--category", "blitz")
    assert wrong.returncode == 2
    assert wrong.stderr == "rating-worker: error: --category blitz: uscf-cc rates correspondence only\n"
    done = run(stack, "erase", "ann")
    assert done.returncode == 0, done.stderr
    assert f"tombstones published for ann/correspondence on {stack.ratings_topic}" in done.stderr
    assert not r.exists(f"{PREFIX}s:ann/correspondence") and r.exists(f"{PREFIX}s:bob/correspondence")
    records = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 3)
    last = {rec.key: rec.value for rec in sorted(records, key=lambda rec: (rec.partition, rec.offset))}
    assert last[b"ann/correspondence"] is None and last[b"bob/correspondence"] is not None


async def test_switch_over_publishes_a_rebuilt_rating_that_differs_an_unrated_one_too(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    path = seed(stack)
    lines = [game("g1"), game("g2", "cat", "ann", result="0-1"), game("g3", "bob", "dan", result="1/2-1/2")]
    await stack.produce(lines)
    worker = stack.start_worker(**CC)
    await stack.wait_committed({0: 3})
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    before = await events(stack, 8)

    built = run(stack, "rebuild", "--seed", str(path))
    assert built.returncode == 0, built.stderr
    assert "0 differ from the live ones" in built.stderr
    rebuild = "rating-uscf-cc-rebuild:"  # uscf-cc's default rebuild prefix
    r = stack.redis_client()
    rebuilt = {k.decode().removeprefix(f"{rebuild}s:"): r.get(k) for k in r.scan_iter(f"{rebuild}s:*")}
    live = {k.decode().removeprefix(f"{PREFIX}s:"): r.get(k) for k in r.scan_iter(f"{PREFIX}s:*")}
    assert sorted(rebuilt) == sorted(live) == [f"{p}/correspondence" for p in ("ann", "bob", "cat", "dan")]
    # As if the live states had been computed by an older rule: cat's rating differs, and zed
    # holds a rating the corrected rules never give him (the rebuild has no state for him).
    r.set(f"{PREFIX}s:cat/correspondence", b"1|123456|1")
    r.set(f"{PREFIX}s:zed/correspondence", b"1|150000|3")

    switched = run(stack, "switch-over")
    assert switched.returncode == 0, switched.stderr
    assert "2 imported events published" in switched.stderr
    new = [e for e in await events(stack, len(before) + 2) if e not in before]
    assert [(e["player_id"], e["kind"], e["seq"]) for e in new] == [("cat", "imported", 2), ("zed", "imported", 2)]
    cat, zed = new
    # cat lost to ann (1608.00 after g1): his first rating 1208.00, his performance against a rated
    # player (docs/systems/uscf-cc.md, "Rules and readings").
    assert (cat["rating_before"], cat["rating_after"], cat["delta"]) == (1234.56, 1208.0, -26.56)
    assert (zed["rating_before"], zed["rating_after"], zed["delta"]) == (1500.0, None, None)
    assert zed["state"] == {"rating": None, "rated_games": 0, "seq": 2}
    assert zed["display_after"] == 1200  # the training rating, shown while unrated
    for e in new:
        CcRatingChanged.model_validate(e)
    assert r.get(f"{PREFIX}s:zed/correspondence") == b"2||0"
    assert r.get(f"{PREFIX}s:cat/correspondence") == b"2|120800|1"


async def test_a_prefix_owned_by_one_system_stops_the_others_commands_at_start(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    shared = {"redis_key_prefix": "shared:"}
    path = stack.tmp / "seed.csv"
    path.write_text(SEED_ROWS)
    assert run(stack, "import", str(path), **shared).returncode == 0  # uscf-cc claims it
    r = stack.redis_client()
    assert r.get("shared:system") == b"uscf-cc"
    before = {k: r.dump(k) for k in r.scan_iter("*")}
    arena_seed = Path(__file__).resolve().parents[3] / "samples/seed.csv"
    refused = (
        "rating-worker: error: RATING_REDIS_KEY_PREFIX=shared: belongs to the rating system uscf-cc "
        "(shared:system), not arena: each deployment needs a prefix of its own\n"
    )
    for command in (("run",), ("import", str(arena_seed)), ("restore",), ("erase", "ann"), ("records", "compact")):
        done = run(stack, *command, system="arena", **shared)
        assert (done.returncode, done.stderr) == (2, refused), command
    assert {k: r.dump(k) for k in r.scan_iter("*")} == before  # nothing written
    assert len(await events(stack, 2)) == 2  # nothing produced beyond uscf-cc's import
    assert await stack.committed(1) == {0: 0}  # no worker joined the group
