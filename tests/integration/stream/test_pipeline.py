"""A batch's way through the store when another process records one of its games first.

Copies of one game in a batch are decided against each other: the first copy is planned as
applied, the later ones as its duplicates (same facts) or conflicts (other facts). If the
first copy then does not apply (another process recorded the game meanwhile), every later
copy is planned again with it, against the record that won, never kept with a verdict that
was decided against a plan that no longer holds.
"""

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence

import pytest
from redis.asyncio import Redis

from schemas.game_finished import GameFinished
from tests.support.backends import RedisService
from tests.support.games import ENGINE
from worker.engine.engine import GameOutcome, SeedOutcome, SeedRow, SeedVerdict, Verdict, facts_digest
from worker.rules.categories import Category
from worker.rules.hundredths import Hundredths
from worker.store import keys
from worker.store.protocol import Claimed, Watermark, Write
from worker.store.redis_store import RedisStore
from worker.store.schedule import Item, SeedItem
from worker.stream.pipeline import Pipeline
from worker.stream.publisher import Publisher
from worker.systems.arena.codec import RATING_STATES
from worker.systems.arena.state import RatingState

pytestmark = pytest.mark.integration

PREFIX = "test:"
# Nothing these tests run publishes an event: the publisher is never called.
NO_PUBLISHER = Publisher(None, "unused", 1.0)


def unrated_game(game_id: str, result: str) -> GameFinished:
    """A game that changes no rating (rated: false): only its idempotency record is written."""
    return GameFinished.model_validate_json(
        json.dumps(
            {
                "event_id": f"ev-{game_id}-{result}",
                "game_id": game_id,
                "finished_at": "2026-11-29T21:44:51Z",
                "rated": False,
                "time_control": {"base_seconds": 180, "increment_seconds": 0},
                "white_id": "w",
                "black_id": "b",
                "result": result,
                "termination": "checkmate",
            }
        )
    )


class Overtaken(RedisStore[RatingState]):
    """A store whose first apply is overtaken: another process records a game just before it."""

    def __init__(self, redis: Redis, before_first_apply: Callable[[], Awaitable[None]]) -> None:
        super().__init__(redis, PREFIX, "ours", 60, 3600, codec=RATING_STATES)
        self.before: Callable[[], Awaitable[None]] | None = before_first_apply

    async def apply(
        self,
        items: Sequence[Write[RatingState]],
        flush: Iterable[str] = (),
        marks: Sequence[Watermark] = (),
        calendar_version: int | None = None,
    ) -> tuple[list[bool], Claimed]:
        if self.before is not None:
            before, self.before = self.before, None
            await before()
        return await super().apply(items, flush, marks, calendar_version)


@pytest.fixture
async def r(redis_server: RedisService) -> AsyncIterator[Redis]:
    """A client of the test's Redis."""
    client = Redis.from_url(redis_server.url)
    yield client
    await client.aclose()


async def verdicts(r: Redis, winner: GameFinished, batch: list[Item]) -> list[Verdict]:
    other = RedisStore(r, PREFIX, "theirs", 60, 3600, codec=RATING_STATES)

    async def record_winner() -> None:
        applied, _ = await other.apply([Write(winner.game_id, facts_digest(winner), (), ())])
        assert applied == [True]

    # No event is published: unrated games change no rating (the publisher is never called).
    pipeline = Pipeline(ENGINE, Overtaken(r, record_winner), NO_PUBLISHER, hold_seconds=60)
    planned, stats = await pipeline.run(batch)
    assert stats.attempts == 2  # the overtaken copies were planned again
    return [p.outcome.verdict for p in planned if isinstance(p.outcome, GameOutcome)]


async def test_a_later_copy_conflicting_with_the_winner_is_a_conflict_not_a_duplicate(r: Redis) -> None:
    # Both copies of ours say 1-0; the game was recorded by another process as 0-1 first.
    ours = unrated_game("g1", "1-0")
    verdict = await verdicts(r, unrated_game("g1", "0-1"), [ours, ours])
    assert verdict == [Verdict.CONFLICT, Verdict.CONFLICT]


async def test_a_later_copy_matching_the_winner_is_a_duplicate_not_a_conflict(r: Redis) -> None:
    # Our first copy says 1-0, our second 0-1; the game was recorded as 0-1 first.
    first, second = unrated_game("g1", "1-0"), unrated_game("g1", "0-1")
    verdict = await verdicts(r, second, [first, second])
    assert verdict == [Verdict.CONFLICT, Verdict.DUPLICATE]


async def test_copies_of_a_game_nobody_overtook_keep_their_verdicts(r: Redis) -> None:
    # The control: another game is recorded meanwhile; our copies are decided against each other.
    first, second = unrated_game("g1", "1-0"), unrated_game("g1", "0-1")
    other = RedisStore(r, PREFIX, "theirs", 60, 3600, codec=RATING_STATES)
    elsewhere = unrated_game("g2", "1-0")

    async def record_elsewhere() -> None:
        await other.apply([Write(elsewhere.game_id, facts_digest(elsewhere), (), ())])

    pipeline = Pipeline(ENGINE, Overtaken(r, record_elsewhere), NO_PUBLISHER, hold_seconds=60)
    planned, stats = await pipeline.run([first, first, second])
    assert stats.attempts == 1
    got = [p.outcome.verdict for p in planned if isinstance(p.outcome, GameOutcome)]
    assert got == [Verdict.SKIPPED, Verdict.DUPLICATE, Verdict.CONFLICT]


async def test_a_seed_row_expecting_a_seq_is_imported_only_over_that_seq(r: Redis) -> None:
    """The switch-over's check-and-set: a rating a worker changed since it was compared moves."""
    pipeline = Pipeline(
        ENGINE, RedisStore(r, PREFIX, "ours", 60, 3600, codec=RATING_STATES), NO_PUBLISHER, hold_seconds=60
    )
    row = SeedRow("a", Category.BLITZ, Hundredths(180000), 40)
    # An import that publishes nothing: the store holds the seeded state (seq 1) directly.
    await r.set(keys.state_key(PREFIX, row.key), b"1|150000|10|")
    later = SeedRow("a", Category.BLITZ, Hundredths(190000), 41)
    planned, _ = await pipeline.run([SeedItem(row, True, expected_seq=0), SeedItem(later, True, 2)])
    got = [p.outcome.verdict for p in planned if isinstance(p.outcome, SeedOutcome)]
    stored = await r.get(keys.state_key(PREFIX, row.key))
    assert stored is None or isinstance(stored, bytes)
    assert got == [SeedVerdict.MOVED, SeedVerdict.MOVED]
    assert stored == b"1|150000|10|"  # nothing written
