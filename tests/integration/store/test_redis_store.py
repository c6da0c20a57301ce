"""The Redis store against a real redis-server: check-and-set, taint, idempotency records, leases.

Two `RedisStore` instances with different tokens on one server play two worker processes.
Writes come from the real engine (seeded ratings and games) or are made by hand.
"""

import asyncio
import json
import time
from collections.abc import AsyncIterator, Mapping

import pytest
from redis.asyncio import Redis

from schemas.game_finished import GameFinished
from tests.support import records
from tests.support.backends import RedisService
from tests.support.games import ENGINE, game_write, make_game, rating, seed_write
from worker.engine.engine import Verdict, facts_digest
from worker.rules.hundredths import Hundredths
from worker.store import keys
from worker.store import records as store_records
from worker.store.protocol import Write
from worker.store.redis_store import RedisStore
from worker.store.schedule import plan
from worker.systems.arena.codec import RATING_STATES, decode_state, encode_state
from worker.systems.arena.state import UNSEEN, QualifyingGame, RatingState

pytestmark = pytest.mark.integration

PREFIX = "test:"
RETENTION = 3600  # seconds
# A crashed holder's lease expires after this (seconds), in the lease test.
SHORT_LEASE = 0.3


@pytest.fixture
async def r(redis_server: RedisService) -> AsyncIterator[Redis]:
    """A client of the test's Redis."""
    client = Redis.from_url(redis_server.url)
    yield client
    await client.aclose()


def make_store(
    r: Redis, token: str, lease_seconds: float = 60.0, retention_seconds: int = RETENTION
) -> RedisStore[RatingState]:
    return RedisStore(r, PREFIX, token, lease_seconds, retention_seconds, codec=RATING_STATES)


async def seed_all(store: RedisStore[RatingState], players: Mapping[str, int]) -> dict[str, RatingState]:
    """Seed rated players (and acknowledge their events); return their states."""
    made = [seed_write(p, h) for p, h in players.items()]
    applied, claimed = await store.apply([w for w, _ in made])
    assert all(applied)
    await store.ack({k: head for k, (head,) in claimed.outboxes.items()})
    return {u.key: u.state for _, u in made}


def as_bytes(value: bytes | str) -> bytes:
    assert isinstance(value, bytes)  # the client does not decode responses
    return value


async def recorded(r: Redis, game_id: str) -> bytes | None:
    """A game's compact record's facts digest, read where the documented layout puts it."""
    key, field = records.address(PREFIX, game_id)
    value = await r.hget(key, field)
    return None if value is None else records.split(as_bytes(value))[0]


def record_only(game: GameFinished) -> Write[RatingState]:
    """The write of a game that changes no rating (between unrated players: skipped): its record."""
    return Write(game.game_id, facts_digest(game), (), ())


async def compact_record(r: Redis, game_id: str) -> tuple[bytes, int]:
    key, field = records.address(PREFIX, game_id)
    value = await r.hget(key, field)
    assert value is not None, f"{game_id} has no compact record"
    return records.split(as_bytes(value))


async def outbox(r: Redis, key: str) -> list[bytes]:
    return [as_bytes(v) for v in await r.lrange(keys.outbox_key(PREFIX, key), 0, -1)]


async def lease_holder(r: Redis, key: str) -> bytes | None:
    value = await r.get(keys.lease_key(PREFIX, key))
    return None if value is None else as_bytes(value)


async def stored_state(r: Redis, key: str) -> RatingState | None:
    value = await r.get(keys.state_key(PREFIX, key))
    return None if value is None else decode_state(as_bytes(value))


# --- apply: state, outbox, idempotency record, claimed outboxes --------------------------------


async def test_apply_writes_states_outboxes_and_records_and_returns_the_claimed_outboxes(r: Redis) -> None:
    store = make_store(r, "A")
    seed_a, ua = seed_write("a", 180000)
    seed_b, ub = seed_write("b", 170050)
    game = make_game("g1", "a", "b", "1/2-1/2")
    g1, updates = game_write(game, {ua.key: ua.state, ub.key: ub.state})
    applied, claimed = await store.apply([seed_a, seed_b, g1])
    assert applied == [True, True, True]
    # The claimed outboxes are the touched ratings', each in write (seq) order.
    by_key = {u.key: u for u in updates}
    assert claimed.outboxes == {
        rating("a"): [ua.payload, by_key[rating("a")].payload],
        rating("b"): [ub.payload, by_key[rating("b")].payload],
    }
    assert claimed.blocked == []
    assert [json.loads(e)["seq"] for e in claimed.outboxes[rating("a")]] == [1, 2]
    # States: the engine's, encoded; seq 2 after the seed and the game.
    for u in updates:
        assert await r.get(keys.state_key(PREFIX, u.key)) == encode_state(u.state)
        assert await stored_state(r, u.key) == u.state
        assert u.state.seq == 2
        assert await outbox(r, u.key) == claimed.outboxes[u.key]
        assert await lease_holder(r, u.key) == b"A"
        assert 0 < await r.pttl(keys.lease_key(PREFIX, u.key)) <= 60_000
    # The game is recorded with its facts digest until the first whole hour after the retention,
    # in the compact layout only (no release before this one wrote to the store); seeds record nothing.
    digest, hour = await compact_record(r, "g1")
    assert digest == facts_digest(game) and hour in records.expiry_hours(RETENTION)
    assert await r.keys(f"{PREFIX}{keys.RECORDS}*") == [records.address(PREFIX, "g1")[0].encode()]
    assert await r.keys(f"{PREFIX}{keys.GAME}*") == []
    assert await r.hmget(keys.store_key(PREFIX), ["records", "record_bits"]) == [b"compact", b"18"]


async def test_the_default_30_day_retention_expires_a_record_after_720_hours_and_one(r: Redis) -> None:
    retention = 30 * 24 * 3600  # WorkerSettings' default
    store = make_store(r, "A", retention_seconds=retention)
    game = make_game("g-unrated", "a", "b", rated=False)  # skipped: recorded, nothing else
    outcome = ENGINE.apply(game, {}, None)
    assert outcome.verdict is Verdict.SKIPPED
    applied, claimed = await store.apply([Write(game.game_id, outcome.digest, (), ())])
    assert applied == [True]
    assert claimed.outboxes == {} and claimed.blocked == []
    _, hour = await compact_record(r, "g-unrated")
    assert hour - int(time.time() // 3600) in (720 + 1, 720)  # 720 unless the hour turned since the write
    # A skipped game writes its record only (and the store's write counters: the shared one and
    # the process's own).
    bucket, _ = records.address(PREFIX, "g-unrated")
    assert sorted(await r.keys("*")) == sorted(
        k.encode() for k in (bucket, keys.store_key(PREFIX), f"{PREFIX}{keys.SEEN}A")
    )


# --- check-and-set and taint -------------------------------------------------------------------


async def test_a_stale_item_is_not_applied_and_taints_later_items_reading_its_ratings(r: Redis) -> None:
    a_store, b_store = make_store(r, "A"), make_store(r, "B")
    players = {"a": 180000, "b": 170000, "c": 160000, "d": 150000, "e": 140000, "x": 175000}
    await seed_all(a_store, players)
    snapshot = await a_store.read([rating(p) for p in players], [])
    states = snapshot.states
    # Process B changes a's state after A read it.
    bx, _ = game_write(make_game("gB", "x", "a"), states)
    applied, _ = await b_store.apply([bx])
    assert applied == [True]
    a_after_b = await stored_state(r, rating("a"))
    # A's batch, computed on its (now stale) snapshot:
    g1, _ = game_write(make_game("g1", "a", "b"), states)  # reads a: stale
    g2, _ = game_write(make_game("g2", "c", "b"), states)  # reads b at its real seq, but b is tainted by g1
    g3, u3 = game_write(make_game("g3", "d", "e"), states)  # unrelated
    applied, claimed = await a_store.apply([g1, g2, g3])
    assert applied == [False, False, True]
    # Nothing of g1 or g2 was written: states, outboxes and records untouched.
    assert await stored_state(r, rating("a")) == a_after_b
    for p in ("b", "c"):
        assert await stored_state(r, rating(p)) == states[rating(p)]
        assert await outbox(r, rating(p)) == []
    assert await r.keys(f"{PREFIX}{keys.GAME}*") == []
    assert await recorded(r, "g1") is None and await recorded(r, "g2") is None
    # g3 was applied, and only its ratings were claimed.
    for u in u3:
        assert await stored_state(r, u.key) == u.state
    assert await recorded(r, "g3") == facts_digest(make_game("g3", "d", "e"))
    assert claimed.outboxes == {u.key: [u.payload] for u in u3}
    assert claimed.blocked == []


async def test_without_the_failed_item_the_tainted_one_alone_is_applied(r: Redis) -> None:
    """Control for the taint test: g2's seqs are right, so only the taint held it back."""
    store = make_store(r, "A")
    states = await seed_all(store, {"b": 170000, "c": 160000})
    g2, u2 = game_write(make_game("g2", "c", "b"), states)
    applied, _ = await store.apply([g2])
    assert applied == [True]
    for u in u2:
        assert await stored_state(r, u.key) == u.state


async def test_a_batch_planned_in_order_applies_every_item_and_a_replan_after_a_conflict_succeeds(r: Redis) -> None:
    a_store, b_store = make_store(r, "A"), make_store(r, "B")
    await seed_all(a_store, {"a": 180000, "b": 170000, "c": 160000})
    games = [make_game("g1", "a", "b"), make_game("g2", "b", "c"), make_game("g3", "c", "a", "0-1")]
    ratings = sorted({rating(p) for p in "abc"})
    snapshot = await a_store.read(ratings, [g.game_id for g in games])
    # Another process rates b in between: every game of A's batch reads b, or a rating g1 or g2 wrote.
    other, _ = game_write(make_game("gB", "b", "c", "0-1"), snapshot.states)
    applied, by_b = await b_store.apply([other])
    assert applied == [True]
    await b_store.ack({k: head for k, (head,) in by_b.outboxes.items()})  # B published them
    planned = plan(ENGINE, games, snapshot)
    writes = [p.write for p in planned if p.write is not None]
    applied, _ = await a_store.apply(writes)
    assert applied == [False, False, False]
    # Re-read and re-plan, as the pipeline does: now all three apply, each seeing the one before.
    snapshot = await a_store.read(ratings, [g.game_id for g in games])
    assert snapshot.records == {}
    planned = plan(ENGINE, games, snapshot)
    applied, claimed = await a_store.apply([p.write for p in planned if p.write is not None])
    assert applied == [True, True, True]
    for key in ratings:
        events = [json.loads(e) for e in claimed.outboxes[key]]
        seqs = [e["seq"] for e in events]
        assert seqs == sorted(seqs) and seqs[-1] == (await stored_state(r, key) or UNSEEN).seq


async def test_a_recorded_game_is_not_applied_again(r: Redis) -> None:
    store = make_store(r, "A")
    states = await seed_all(store, {"a": 180000, "b": 170000})
    game = make_game("g1", "a", "b")
    g1, updates = game_write(game, states)
    assert (await store.apply([g1]))[0] == [True]
    await store.ack({u.key: u.payload for u in updates})
    # The same game again, computed on the current states (so the seqs check out): refused.
    now = {u.key: u.state for u in updates}
    again, _ = game_write(game, now)
    applied, claimed = await store.apply([again])
    assert applied == [False]
    assert claimed.outboxes == {} and claimed.blocked == []
    for u in updates:
        assert await stored_state(r, u.key) == u.state
        assert await outbox(r, u.key) == []
    # Under another game id, the same write is applied: only the record refused it.
    other = Write("g2", again.digest, again.reads, again.writes)
    assert (await store.apply([other]))[0] == [True]
    # A recorded skipped game (no reads, no writes) is refused as well.
    skipped: Write[RatingState] = Write(
        "g-unrated", facts_digest(make_game("g-unrated", "a", "b", rated=False)), (), ()
    )
    assert (await store.apply([skipped]))[0] == [True]
    assert (await store.apply([skipped]))[0] == [False]


# --- the records' layouts (worker.store.records) ----------------------------------------------------


async def test_a_store_an_earlier_release_wrote_gets_records_in_both_layouts(r: Redis) -> None:
    """Workers of the release before (legacy keys only) may still run beside this one."""
    await r.hset(keys.store_key(PREFIX), "writes", 7)  # what every apply of an earlier release leaves
    store = make_store(r, "A")
    game = make_game("g1", "a", "b")
    assert (await store.apply([record_only(game)]))[0] == [True]
    assert await r.hget(keys.store_key(PREFIX), "records") == b"both"
    assert await recorded(r, "g1") == facts_digest(game)
    # The legacy record, as the earlier release reads it: the digest in hex, expiring after the retention.
    assert await r.get(keys.game_key(PREFIX, "g1")) == facts_digest(game).hex().encode()
    assert RETENTION * 1000 - 10_000 < await r.pttl(keys.game_key(PREFIX, "g1")) <= RETENTION * 1000
    # Flipped once every worker runs this release: the next game is recorded compactly only.
    await store_records.set_layout(r, PREFIX, "compact")
    assert (await store.apply([record_only(make_game("g2", "c", "d"))]))[0] == [True]
    assert await recorded(r, "g2") is not None and not await r.exists(keys.game_key(PREFIX, "g2"))


async def test_a_legacy_record_refuses_its_game_and_reads_back_as_its_digest(r: Redis) -> None:
    """A game an earlier release applied (its legacy key only) is found by this one."""
    store = make_store(r, "A")
    game = make_game("g1", "a", "b")
    await r.set(keys.game_key(PREFIX, "g1"), facts_digest(game).hex(), px=RETENTION * 1000)
    restored = make_game("g-restored", "a", "b")
    await r.set(keys.game_key(PREFIX, "g-restored"), "", px=RETENTION * 1000)  # RESTORED: no facts
    snapshot = await store.read([], ["g1", "g-restored", "g-new"])
    assert snapshot.records == {"g1": facts_digest(game), "g-restored": b""}
    assert (await store.apply([record_only(game), record_only(restored)]))[0] == [False, False]
    assert await recorded(r, "g1") is None  # refused: nothing written


async def test_records_of_128_character_ids_take_the_same_room_as_short_ones(r: Redis) -> None:
    store = make_store(r, "A")
    ids = ["g", "x" * 128]
    assert (await store.apply([Write(game_id, bytes(8), (), ()) for game_id in ids]))[0] == [True, True]
    stored = {}
    for key in await r.keys(f"{PREFIX}{keys.RECORDS}*"):
        stored.update(await r.hgetall(key))
    # Each record is 10 bytes of the id's hash and 8 of digest + 3 of expiry hour, whatever the id.
    assert sorted(len(f) for f in stored) == [10, 10]
    assert sorted(len(v) for v in stored.values()) == [11, 11]
    assert (await store.read([], ids)).records == {g: bytes(8) for g in ids}


async def test_the_sweep_deletes_expired_records_and_keeps_live_ones(r: Redis) -> None:
    # 16 buckets and a pass that started 12 hours ago: every bucket is due at the next call.
    await r.hset(
        keys.store_key(PREFIX),
        mapping={"records": "compact", "record_bits": 4, "sweep_next": 0, "sweep_pass": int(time.time()) - 12 * 3600},
    )
    hour = int(time.time() // 3600)
    expired = {f"old-{n}": records.value(bytes(8), hour) for n in range(40)}  # expired this hour
    live = {f"new-{n}": records.value(bytes(8), hour + 2) for n in range(40)}  # live whatever the hour turns to
    for game_id, v in {**expired, **live}.items():
        key, field = records.address(PREFIX, game_id, bits=4)
        await r.hset(key, field, v)
    store = make_store(r, "A")
    assert await store.check()  # the health check's call sweeps, as every script call does
    found = await store.read([], [*expired, *live])
    assert set(found.records) == set(live)
    assert await r.hmget(keys.store_key(PREFIX), ["sweep_next"]) == [b"0"]  # the pass ended; a new one began
    # A pass that has just begun sweeps nothing yet: its buckets are due over the next 12 hours.
    key, field = records.address(PREFIX, "old-0", bits=4)
    await r.hset(key, field, records.value(bytes(8), hour))
    assert await store.check()
    assert set((await store.read([], ["old-0"])).records) == {"old-0"}


async def test_remember_keeps_existing_records_when_asked_and_lookup_reads_both_layouts(r: Redis) -> None:
    await r.set(keys.game_key(PREFIX, "legacy"), "ab" * 8)
    assert await store_records.remember(r, PREFIX, [("g1", b"\x01" * 8), ("g2", b"")], RETENTION * 1000, True) == 2
    assert await store_records.remember(r, PREFIX, [("g1", b"\x02" * 8), ("g3", b"")], RETENTION * 1000, True) == 1
    assert await store_records.lookup(r, PREFIX, ["g1", "g2", "g3", "legacy", "none"]) == {
        "g1": b"\x01" * 8,
        "g2": b"",
        "g3": b"",
        "legacy": b"\xab" * 8,
    }
    assert await store_records.remember(r, PREFIX, [("g1", b"\x02" * 8)], RETENTION * 1000, False) == 1
    assert await store_records.lookup(r, PREFIX, ["g1"]) == {"g1": b"\x02" * 8}
    assert await store_records.layout(r, PREFIX) == ("compact", 18)


# --- publication leases --------------------------------------------------------------------------


async def test_a_held_lease_blocks_other_processes_until_acknowledged(r: Redis) -> None:
    a_store, b_store = make_store(r, "A"), make_store(r, "B")
    key = rating("a")
    write, ua = seed_write("a", 180000)
    applied, claimed = await a_store.apply([write])
    assert applied == [True] and claimed.outboxes == {key: [ua.payload]}
    assert await lease_holder(r, key) == b"A"
    # B cannot claim it while A holds the lease.
    claimed_b = await b_store.claim([key])
    assert claimed_b.outboxes == {} and claimed_b.blocked == [key]
    # B can still write the rating (the state is not leased); its event waits in the outbox.
    forced, ub = seed_write("a", 190000, ua.state)
    applied, claimed_b = await b_store.apply([forced])
    assert applied == [True]
    assert claimed_b.outboxes == {} and claimed_b.blocked == [key]
    assert await outbox(r, key) == [ua.payload, ub.payload]
    # A acknowledges what it claimed (1 event): that one is removed, and the lease released.
    await a_store.ack({key: ua.payload})
    assert await outbox(r, key) == [ub.payload]
    assert await lease_holder(r, key) is None
    # Now B claims what is left.
    claimed_b = await b_store.claim([key])
    assert claimed_b.outboxes == {key: [ub.payload]} and claimed_b.blocked == []
    assert await lease_holder(r, key) == b"B"
    # A's ack for a lease it no longer holds removes nothing, even the head (and leaves B's lease).
    await a_store.ack({key: ub.payload})
    assert await outbox(r, key) == [ub.payload]
    assert await lease_holder(r, key) == b"B"
    await b_store.ack({key: ub.payload})
    assert await outbox(r, key) == []
    assert await lease_holder(r, key) is None
    # An empty outbox is neither claimed nor blocked, and takes no lease.
    claimed_a = await a_store.claim([key])
    assert claimed_a.outboxes == {} and claimed_a.blocked == []
    assert await lease_holder(r, key) is None


async def test_the_holder_renews_its_own_lease_and_claims_through_flush(r: Redis) -> None:
    store = make_store(r, "A", lease_seconds=2.0)
    key = rating("a")
    write, ua = seed_write("a", 180000)
    await store.apply([write])
    await r.pexpire(keys.lease_key(PREFIX, key), 100)
    claimed = await store.apply([], flush=[key, rating("nobody")])  # a flush of an empty outbox is ignored
    assert claimed[0] == []
    assert claimed[1].outboxes == {key: [ua.payload]} and claimed[1].blocked == []
    assert 1000 < await r.pttl(keys.lease_key(PREFIX, key)) <= 2000


async def test_an_ack_between_rounds_keeps_and_renews_the_lease(r: Redis) -> None:
    store = make_store(r, "A", lease_seconds=2.0)
    key = rating("a")
    first, u1 = seed_write("a", 180000)
    second, u2 = seed_write("a", 190000, u1.state)
    _, claimed = await store.apply([first, second])
    assert claimed.outboxes == {key: [u1.payload, u2.payload]}
    await r.pexpire(keys.lease_key(PREFIX, key), 100)
    # Round 1 acknowledged: its event is dropped at once, the lease kept (and renewed) for round 2.
    await store.ack({key: u1.payload}, keep={key})
    assert await outbox(r, key) == [u2.payload]
    assert await lease_holder(r, key) == b"A"
    assert 1000 < await r.pttl(keys.lease_key(PREFIX, key)) <= 2000
    # The same ack again (its first reply was lost, so the pipeline retries it) drops nothing:
    # the head is now round 2's event, which was not sent yet.
    await store.ack({key: u1.payload}, keep={key})
    assert await outbox(r, key) == [u2.payload]
    await store.ack({key: u2.payload})
    assert await outbox(r, key) == []
    assert await lease_holder(r, key) is None


async def test_a_lease_expires_after_the_lease_time(r: Redis) -> None:
    a_store = make_store(r, "A", lease_seconds=SHORT_LEASE)
    b_store = make_store(r, "B", lease_seconds=SHORT_LEASE)
    key = rating("a")
    write, ua = seed_write("a", 180000)
    await a_store.apply([write])
    assert 0 < await r.pttl(keys.lease_key(PREFIX, key)) <= SHORT_LEASE * 1000
    assert (await b_store.claim([key])).blocked == [key]
    await asyncio.sleep(SHORT_LEASE + 0.2)  # A "froze" past its lease
    assert await lease_holder(r, key) is None
    claimed = await b_store.claim([key])
    assert claimed.outboxes == {key: [ua.payload]} and claimed.blocked == []
    # A wakes up and acknowledges: B's lease stands, nothing is removed.
    await a_store.ack({key: ua.payload})
    assert await outbox(r, key) == [ua.payload]
    assert await lease_holder(r, key) == b"B"


# --- read ----------------------------------------------------------------------------------------


async def test_read_returns_states_outbox_lengths_and_records(r: Redis) -> None:
    store = make_store(r, "A")
    states = await seed_all(store, {"a": 180000, "b": 170000})
    game = make_game("g1", "a", "b")
    g1, updates = game_write(game, states)
    await store.apply([g1])  # not acknowledged: one event in each outbox
    wanted = [rating("a"), rating("b"), rating("nobody")]
    snapshot = await store.read(wanted, ["g1", "g-unknown"])
    assert snapshot.states == {
        rating("a"): updates[0].state,
        rating("b"): updates[1].state,
        rating("nobody"): UNSEEN,
    }
    assert snapshot.states[rating("nobody")] is UNSEEN
    assert snapshot.unconfirmed == {rating("a"): 1, rating("b"): 1, rating("nobody"): 0}
    assert snapshot.records == {"g1": facts_digest(game)}
    # Reading nothing is fine too.
    empty = await store.read([], [])
    assert empty.states == {} and empty.unconfirmed == {} and empty.records == {}


# --- state codec ---------------------------------------------------------------------------------

QUALIFYING = RatingState(
    None,
    0,
    (
        QualifyingGame("g-1", "opp.1", Hundredths(180012), Hundredths(100)),
        QualifyingGame("g_2", "OPP-2", Hundredths(100000), Hundredths(50)),
        QualifyingGame("g3", "o3", Hundredths(249999), Hundredths(0)),
    ),
    7,
)


@pytest.mark.parametrize(
    "state",
    [
        UNSEEN,
        QUALIFYING,
        RatingState(None, 0, (QualifyingGame("g", "o", Hundredths(150000), Hundredths(50)),), 1),
        RatingState(Hundredths(180050), 31, (), 12),
        RatingState(Hundredths(100000), 0, (), 1),
        RatingState(None, 0, (), 9),  # lost its rating
    ],
    ids=["unseen", "qualifying", "one-qualifying", "rated", "floor", "lost"],
)
def test_state_codec_round_trips(state: RatingState) -> None:
    encoded = encode_state(state)
    assert decode_state(encoded) == state
    assert encoded.startswith(f"{state.seq}|".encode())  # the seq the script matches comes first


async def test_qualifying_games_written_by_the_engine_read_back_from_redis(r: Redis) -> None:
    store = make_store(r, "A")
    states = await seed_all(store, {"a": 180000, "b": 170050, "c": 160025})
    for n, (opponent, result) in enumerate([("a", "1-0"), ("b", "1/2-1/2"), ("c", "0-1")]):
        snapshot = await store.read([rating("u"), rating(opponent)], [])
        states = dict(snapshot.states)
        write, _ = game_write(make_game(f"q{n}", "u", opponent, result), states)
        assert (await store.apply([write]))[0] == [True]
    u = await stored_state(r, rating("u"))
    assert u == RatingState(
        None,
        0,
        (
            QualifyingGame("q0", "a", Hundredths(180000), Hundredths(100)),
            QualifyingGame("q1", "b", Hundredths(170050), Hundredths(50)),
            QualifyingGame("q2", "c", Hundredths(160025), Hundredths(0)),
        ),
        3,
    )
    # The last event's state is the same state (the changelog can rebuild it).
    last = json.loads((await outbox(r, rating("u")))[-1])
    assert last["kind"] == "qualifying_game" and last["seq"] == 3 and len(last["state"]["qualifying"]) == 3
