"""Games, and the writes of the store protocol the engine makes of them, for the tests of the stores
and the pipeline; and the keys the arena gives games on its input topic.

The writes are computed by the real engine from the states given (their seqs are the ones read),
as a worker plans them; the stores then check them.
"""

import json
from collections.abc import Mapping

from schemas.game_finished import GameFinished
from worker.engine.engine import Engine, SeedRow, Update, Verdict
from worker.rules.categories import Category
from worker.rules.hundredths import Hundredths, Points
from worker.store.protocol import StateWrite, Write
from worker.systems.arena.state import UNSEEN, RatingState
from worker.systems.registry import ARENA

BLITZ = Category.BLITZ
ENGINE = Engine(ARENA, training_rating=Points(1200))


def rating(player: str) -> str:
    """The key of the player's blitz rating."""
    return f"{player}/{BLITZ}"


def make_game(game_id: str, white: str, black: str, result: str = "1-0", rated: bool = True) -> GameFinished:
    """A blitz game (3+0) that ended by checkmate."""
    return GameFinished.model_validate_json(
        json.dumps(
            {
                "event_id": f"ev-{game_id}",
                "game_id": game_id,
                "finished_at": "2026-11-29T21:44:51Z",
                "rated": rated,
                "time_control": {"base_seconds": 180, "increment_seconds": 0},  # 3+0: blitz
                "white_id": white,
                "black_id": black,
                "result": result,
                "termination": "checkmate",
            }
        )
    )


def seed_write(
    player: str, hundredths: int, current: RatingState = UNSEEN
) -> tuple[Write[RatingState], Update[RatingState]]:
    """The write of an imported rating over `current` (forced), as the importer makes it."""
    outcome = ENGINE.seed(SeedRow(player, BLITZ, Hundredths(hundredths), 40), current, force=True)
    assert outcome.update is not None
    u = outcome.update
    return Write("", b"", ((u.key, current.seq),), (StateWrite(u.key, u.state, u.payload),)), u


def game_write(
    game: GameFinished, states: Mapping[str, RatingState]
) -> tuple[Write[RatingState], tuple[Update[RatingState], ...]]:
    """The write of `game` computed on `states` (the seqs it read are theirs)."""
    ratings = ENGINE.ratings_read(game)
    assert ratings is not None
    outcome = ENGINE.apply(game, {r: states.get(r, UNSEEN) for r in ratings}, None)
    assert outcome.verdict is Verdict.APPLIED, outcome
    reads = tuple((r, states.get(r, UNSEEN).seq) for r in ratings)
    return Write(game.game_id, outcome.digest, reads, outcome.updates), outcome.updates


def keyed(lines: list[bytes]) -> list[bytes | None]:
    """Keyed by game id, as the arena does: one player's games land in many partitions."""
    return [json.loads(line)["game_id"].encode() for line in lines]
