"""Glicko-2 game by game (`glicko2`) through the real broker and Redis, seeded through `import`,
on the arena's games spread over months (`Glicko2Simulation`: dated in 2024, produced now).

- one worker on one partition publishes exactly what `rate` writes, event for event, and
  dead-letters what `rate` dead-letters;
- three workers on six partitions: every game's two events recompute from the states before it
  (`glicko2.rate` on each rating's previous event, white and black from the input), with the
  arena's exact accounting (gapless `seq`, byte-identical copies, Redis's states equal to the
  last events, every game recorded, no outbox left); `restore` after Redis lost the states gives
  back the same states;
- in neither run is any game dead-lettered as finishing in the future (docs/systems/glicko2.md,
  "Operating it": whoever produces games dates them no later than the moment they are produced);
- bad input (docs/systems/glicko2.md, "Input"): a game finishing more than
  RATING_FUTURE_ALLOWANCE_SECONDS after its record's timestamp (CreateTime) is `invalid_schema`
  with a one-line message and changes nothing, not even its idempotency record (so the same game
  produced again later is rated); one exactly at the allowance is rated; instants outside the
  years 0000-9999 in UTC and records with a `control` key are `invalid_schema`.
"""

import json
from datetime import UTC, datetime

import pytest
from aiokafka import AIOKafkaProducer

from tests.support.audit import audit, check_everything, games_of, read_store
from tests.support.contract import VALID_GAME
from tests.support.games import keyed
from tests.support.kafka import Record, read_topic
from tests.support.stack import Stack
from tests.support.systems import per_key, rate, seeded, wipe_and_restore

pytestmark = pytest.mark.integration

G2 = {"system": "glicko2"}  # the system's own names but the stack's topics and group
PREFIX = "rating-glicko2:"  # glicko2's default RATING_REDIS_KEY_PREFIX
FUTURE = "RATING_FUTURE_ALLOWANCE_SECONDS"  # named by the message of a game finishing too late


def header(record: Record, name: str) -> str:
    return record.headers[name]


def future_games(letters: list[Record]) -> list[str]:
    """The dead letters of games refused as finishing too long after their record's timestamp."""
    return [header(r, "error.message") for r in letters if FUTURE in r.headers.get("error.message", "")]


def ms(timestamp: str) -> int:
    """A whole-millisecond UTC timestamp (`...Z`) as Kafka's record timestamp."""
    return int(datetime.fromisoformat(timestamp).astimezone(UTC).timestamp() * 1000)


async def produce_at(stack: Stack, records: list[tuple[bytes, int | None]]) -> None:
    """Each value with its own CreateTime (None: the producer's clock), in order, to partition 0."""
    producer = AIOKafkaProducer(bootstrap_servers=stack.broker.bootstrap, acks="all")
    await producer.start()
    try:
        for value, timestamp_ms in records:
            await (await producer.send(stack.games_topic, value, partition=0, timestamp_ms=timestamp_ms))
    finally:
        await producer.stop()


@pytest.mark.timeout(240)
async def test_one_worker_on_one_partition_publishes_what_rate_writes(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=4)
    sim, seed = seeded(stack, "glicko2", 120, seed=5)
    lines = list(sim.game_lines(3000, bad_share=0.01, redelivery_share=0.01))
    await stack.produce(lines)
    end = await stack.end_offsets(len(lines))
    stack.start_worker(**G2)
    await stack.wait_committed(end, timeout=120)

    expected, expected_letters = rate(stack.tmp, "glicko2", seed, lines)
    published = await read_topic(stack.broker.bootstrap, stack.ratings_topic, len(expected), timeout=60)
    values = [r.value for r in sorted(published, key=lambda r: (r.partition, r.offset)) if r.value is not None]
    assert len(values) == len(expected) > 5000  # the seeding's and both players' of every counted game
    assert per_key(values) == per_key(expected)
    kinds = {json.loads(v)["kind"] for v in expected}
    assert kinds == {"imported", "rated_game"}, kinds
    # The service's output, recomputed game by game from the states before it.
    tally = audit(published, "glicko2", games_of(lines))
    assert len(tally.game_ids) > 2500
    # Deviations grew between games: some game started from an RD above its previous deviation_after.
    grown = [e for e in tally.events.values() if e.kind == "rated_game" and e.seq > 1]
    assert any(
        e.detail.deviation_before > tally.by_key[f"{e.player_id}/{e.category}"][e.seq - 2].state.deviation
        for e in grown
    )

    letters = sorted(
        await read_topic(stack.broker.bootstrap, stack.dlq_topic, len(expected_letters), timeout=30),
        key=lambda r: r.offset,
    )
    assert [header(r, "error.kind") for r in letters] == [str(letter["error_kind"]) for letter in expected_letters]
    assert len(letters) > 10
    assert not future_games(letters), future_games(letters)[:3]


@pytest.mark.timeout(300)
async def test_three_workers_on_six_partitions_account_exactly_and_restore_gives_the_states_back(
    stack: Stack,
) -> None:
    await stack.create_topics(games=6, ratings=4)
    sim, _ = seeded(stack, "glicko2", 150, seed=11)
    lines = list(sim.game_lines(6000))
    months = {json.loads(line)["finished_at"][:7] for line in lines}
    assert len(months) >= 6, months  # spread over months: deviations grow between games
    await stack.produce(lines, keyed(lines))
    end = await stack.end_offsets(len(lines))
    assert len(end) == 6
    for _ in range(3):
        stack.start_worker(**G2)
    await stack.wait_committed(end, timeout=150)
    assert all(w.poll() is None for w in stack.workers)
    letters = await read_topic(stack.broker.bootstrap, stack.dlq_topic, 0, timeout=5, idle=0.5)
    assert not future_games(letters), future_games(letters)[:3]
    tally = await check_everything(stack, lines, "glicko2")
    assert {e.kind for e in tally.events.values()} == {"imported", "rated_game"}
    assert len(tally.game_ids) > 5000

    assert (
        read_store(stack.redis.url, {json.loads(line)["game_id"] for line in lines}, "glicko2").states
        == tally.final_states()
    )
    # Redis loses the states: `restore` (the workers stopped) writes back the last event's state of each.
    wipe_and_restore(stack, "glicko2", lines, at_least=300)


T = "2026-11-29T12:00:00.000Z"  # the record timestamp of W7, the checks of finished_at


def game(game_id: str, finished_at: str, **fields: object) -> bytes:
    """A blitz game (3+0, white wins) between two players of its own, `{game_id}w` and `{game_id}b`."""
    return json.dumps(
        {
            **VALID_GAME,
            "event_id": f"e-{game_id}",
            "game_id": game_id,
            "white_id": f"{game_id}w",
            "black_id": f"{game_id}b",
            "finished_at": finished_at,
            **fields,
        }
    ).encode()


@pytest.mark.timeout(180)
async def test_a_game_finishing_after_its_records_time_and_the_allowance_is_bad_input_and_not_recorded(
    stack: Stack,
) -> None:
    await stack.create_topics(games=1, ratings=2)
    late = game("late", "2026-11-29T13:00:00.001Z")  # T + 3600.001 s
    bad: list[tuple[bytes, int | None, str]] = [
        (
            late,
            ms(T),
            f"finished_at: 2026-11-29T13:00:00.001Z is more than {FUTURE}=3600 after the record's timestamp",
        ),
        (
            game("low", "0000-01-01T00:10:00+01:00"),
            None,
            "finished_at: 0000-01-01T00:10:00+01:00 is an instant outside the years 0000-9999 in UTC",
        ),
        (
            game("high", "9999-12-31T23:30:00-01:00"),
            ms("9999-12-31T23:59:59Z") + 999,  # the years' bound only: not later than this plus the hour
            "finished_at: 9999-12-31T23:30:00-01:00 is an instant outside the years 0000-9999 in UTC",
        ),
        (
            game("ctl", "2026-11-29T12:00:00Z", control="close"),
            None,
            "value: Value error, an object with a `control` key is a control message, never a game",
        ),
        (
            b'{"control":"close","period":"2026-11"}',  # a close line of `rate` is no game either
            None,
            "value: Value error, an object with a `control` key",
        ),
    ]
    good: list[tuple[bytes, int | None]] = [
        (game("edge", "2026-11-29T13:00:00Z"), ms(T)),  # exactly T + 3600 s: valid
        (game("y0", "0000-01-01T00:00:00Z"), None),  # the first instant of the years 0000-9999
        (game("y0b", "0000-01-01T00:10:00-01:00"), None),  # 01:10 UTC on the first day
        (game("y9", "9999-12-31T23:59:60Z"), ms("9999-12-31T23:00:00Z")),  # a leap second, :59 of the last day
    ]
    records = [(value, at) for value, at, _ in bad[:3]] + good[:2] + [(value, at) for value, at, _ in bad[3:]]
    records += good[2:]
    await produce_at(stack, records)
    end = await stack.end_offsets(len(records))
    stack.start_worker(**G2)
    await stack.wait_committed(end, timeout=60)

    letters = sorted(
        await read_topic(stack.broker.bootstrap, stack.dlq_topic, len(bad), timeout=30), key=lambda r: r.offset
    )
    assert [r.value for r in letters] == [value for value, _, _ in bad]  # the bad records' bytes, in their order
    for r, (_, _, start) in zip(letters, bad, strict=True):
        message = header(r, "error.message")
        assert header(r, "error.kind") == "invalid_schema", message
        assert message.startswith(start) and "\n" not in message, message
    assert future_games(letters) == [header(letters[0], "error.message")]
    # Nothing written for them: no record, no state, no event; the valid ones are rated.
    ids = ["late", "low", "high", "ctl", "edge", "y0", "y0b", "y9"]
    stored = read_store(stack.redis.url, ids, "glicko2")
    assert stored.recorded == {"edge", "y0", "y0b", "y9"}
    rated = sorted(f"{g}{colour}/blitz" for g in ("edge", "y0", "y0b", "y9") for colour in "wb")
    assert sorted(stored.states) == rated
    published = await read_topic(stack.broker.bootstrap, stack.ratings_topic, len(rated), timeout=30)
    events = {(e["player_id"], e["game_id"]): e for e in (json.loads(r.value or b"") for r in published)}
    assert sorted(f"{p}/blitz" for p, _ in events) == rated
    # Two new players, white wins (docs/systems/glicko2.md, "State and events, with an example": alice
    # beats bob), whatever the date.
    edge_white, edge_black = events[("edgew", "edge")], events[("edgeb", "edge")]
    assert (edge_white["rating_after"], edge_white["state"]["deviation"], edge_white["state"]["volatility"]) == (
        1737.14,
        396.71,
        0.089998199,
    )
    assert edge_black["rating_after"] == 1262.86
    assert edge_white["state"]["last_rated_at"] == edge_white["finished_at"] == "2026-11-29T13:00:00Z"
    assert events[("y9w", "y9")]["state"]["last_rated_at"] == "9999-12-31T23:59:60Z"

    # The late game again, as a new record one millisecond later: exactly at the allowance now, rated.
    await produce_at(stack, [(late, ms(T) + 1)])
    await stack.wait_committed({0: end[0] + 1}, timeout=60)
    assert read_store(stack.redis.url, ["late"], "glicko2").recorded == {"late"}
    published = await read_topic(stack.broker.bootstrap, stack.ratings_topic, len(rated) + 2, timeout=30)
    mine = [json.loads(r.value or b"") for r in published if r.key in (b"latew/blitz", b"lateb/blitz")]
    assert sorted((e["player_id"], e["kind"], e["rating_after"]) for e in mine) == [
        ("lateb", "rated_game", 1262.86),
        ("latew", "rated_game", 1737.14),
    ]
    again = await read_topic(stack.broker.bootstrap, stack.dlq_topic, len(bad), timeout=10, idle=1)
    assert len(again) == len(bad)  # no new dead letter
