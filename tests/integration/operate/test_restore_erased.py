"""`rating-worker restore` after an erasure: after a key's tombstone only a chain that starts again
at seq 1 is restored; any other event of that key (a late copy of an event of the erased rating)
is set aside, counted with its reason and its key in the report."""

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest
import redis

from schemas.game_finished import GameFinished
from tests.support import commands
from tests.support.games import ENGINE, make_game, rating, seed_write
from tests.support.kafka import produce, read_topic
from tests.support.stack import Stack
from worker.engine.engine import Update, Verdict
from worker.systems.arena.state import UNSEEN, RatingState
from worker.systems.registry import BY_NAME

pytestmark = pytest.mark.integration

ALICE, BOB = rating("alice"), rating("bob")
TOMBSTONE = None


@dataclass(frozen=True)
class History:
    """Alice's and Bob's events as the workers published them: Alice imported and two games
    with Bob (her seq 1-3), then, once erased, two games of hers from scratch (her new seq 1-2)."""

    old: dict[int, Update[RatingState]]  # Alice's events before the erasure, by seq
    new: dict[int, Update[RatingState]]  # hers after it, by seq
    bob: list[Update[RatingState]]  # Bob's, in order


def history() -> History:
    states: dict[str, RatingState] = {}
    old: dict[int, Update[RatingState]] = {}
    new: dict[int, Update[RatingState]] = {}
    bob: list[Update[RatingState]] = []

    def keep(update: Update[RatingState], alice: dict[int, Update[RatingState]]) -> None:
        states[update.key] = update.state
        if update.key == ALICE:
            alice[update.state.seq] = update
        else:
            bob.append(update)

    for player, hundredths in (("alice", 180000), ("bob", 170000)):
        keep(seed_write(player, hundredths)[1], old)
    for game_id, result in (("g1", "1-0"), ("g2", "0-1")):
        played(make_game(game_id, "alice", "bob", result), states, lambda u: keep(u, old))
    del states[ALICE]  # erased: her next game starts her afresh, unrated, at seq 1
    for game_id in ("g3", "g4"):
        played(make_game(game_id, "alice", "bob", "1-0"), states, lambda u: keep(u, new))
    assert sorted(old) == [1, 2, 3] and sorted(new) == [1, 2], (old, new)
    assert new[1].state.rating is None  # a newcomer again
    return History(old, new, bob)


def played(game: GameFinished, states: dict[str, RatingState], keep: Callable[[Update[RatingState]], None]) -> None:
    """The engine's updates of `game` over `states`, as a worker applies it."""
    ratings = ENGINE.ratings_read(game)
    assert ratings is not None
    outcome = ENGINE.apply(game, {r: states.get(r, UNSEEN) for r in ratings}, None)
    assert outcome.verdict is Verdict.APPLIED, outcome
    for update in outcome.updates:
        keep(update)


async def restored_from(stack: Stack, records: Sequence[tuple[bytes, bytes | None]]) -> tuple[redis.Redis, str]:
    """Produce `records` (key, value) on the stack's ratings topic, in order, then run `restore`
    on an empty Redis: the Redis and what the command printed."""
    await stack.create_topics(games=1, ratings=1)  # one partition: the records' order is the topic's
    for key, value in records:  # one at a time: each is acknowledged before the next is sent
        await produce(stack.broker.bootstrap, stack.ratings_topic, [value], [key])  # type: ignore[list-item]
    assert len(await read_topic(stack.broker.bootstrap, stack.ratings_topic, len(records), idle=0.3)) == len(records)
    done = commands.run(
        [sys.executable, "-m", "worker", "restore"], env=stack.env(), capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return stack.redis_client(), done.stderr.decode()


def alice(update: Update[RatingState]) -> tuple[bytes, bytes]:
    return ALICE.encode(), update.payload


def before_erasure(h: History) -> list[tuple[bytes, bytes | None]]:
    """Everything published up to the erasure: both imports, then g1 and g2, then her tombstone."""
    bobs = [(BOB.encode(), u.payload) for u in h.bob if u.event.game_id in (None, "g1", "g2")]
    return [alice(h.old[1]), bobs[0], alice(h.old[2]), bobs[1], alice(h.old[3]), bobs[2], (ALICE.encode(), TOMBSTONE)]


def stored(r: redis.Redis, key: str) -> bytes | None:
    value = r.get(f"rating:s:{key}")
    assert value is None or isinstance(value, bytes)
    return value


def encoded(state: RatingState) -> bytes:
    return BY_NAME["arena"].codec.encode(state)


async def test_a_late_copy_after_the_tombstone_does_not_bring_the_erased_rating_back(stack: Stack) -> None:
    h = history()
    r, report = await restored_from(stack, [*before_erasure(h), alice(h.old[3])])
    assert stored(r, ALICE) is None
    assert stored(r, BOB) == encoded(h.bob[2].state)  # his state after g2
    assert "set aside: 1 events after their key's tombstone, before any seq 1 (not restored): alice/blitz" in report
    assert "1 events set aside after tombstones" in report
    assert "the store is trusted" in report


async def test_a_new_chain_from_seq_1_after_the_tombstone_is_restored(stack: Stack) -> None:
    h = history()
    r, report = await restored_from(stack, [*before_erasure(h), alice(h.new[1]), alice(h.new[2])])
    assert stored(r, ALICE) == encoded(h.new[2].state)
    assert stored(r, ALICE) != encoded(h.old[3].state)
    assert "set aside" not in report.replace("0 events set aside", "")


async def test_a_late_old_copy_after_the_new_seq_1_is_set_aside(stack: Stack) -> None:
    h = history()
    r, report = await restored_from(stack, [*before_erasure(h), alice(h.new[1]), alice(h.old[3])])
    assert stored(r, ALICE) == encoded(h.new[1].state)
    assert (
        "set aside: 1 events after their key's tombstone, off the chain restarted at seq 1 (not restored): "
        "alice/blitz" in report
    )
    assert "1 events set aside after tombstones" in report


async def test_a_copy_inside_the_new_chain_is_a_copy_like_any(stack: Stack) -> None:
    # A copy of the new seq 1 after seq 2 is not set aside: the state stays seq 2's.
    h = history()
    records = [*before_erasure(h), alice(h.new[1]), alice(h.new[2]), alice(h.new[1])]
    r, report = await restored_from(stack, records)
    assert stored(r, ALICE) == encoded(h.new[2].state)
    assert "0 events set aside after tombstones" in report
