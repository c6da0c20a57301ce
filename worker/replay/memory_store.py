"""Ratings and idempotency records held in memory: the store of the offline replay.

Memory grows with the number of ratings and of distinct games only. A game is remembered by
a 16-byte digest of its id (a collision among 10^9 games has probability ~10^-21) mapped to
its 8-byte facts digest, packed as Python ints, which are smaller than bytes objects.
"""

import hashlib

from schemas.game_finished import GameFinished
from worker.engine.engine import RESTORED, Engine, GameOutcome, SeedOutcome, SeedRow, Verdict
from worker.rules.state import UNSEEN, RatingState

_RESTORED = -1  # a game recorded without its facts (see engine.RESTORED)


def _digest(recorded: int) -> bytes:
    return RESTORED if recorded == _RESTORED else recorded.to_bytes(8)


def _game_key(game_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(game_id.encode(), digest_size=16).digest())


class MemoryStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.states: dict[str, RatingState] = {}
        self.games: dict[int, int] = {}

    def apply(self, game: GameFinished) -> GameOutcome:
        """Apply one game, keeping what the engine returns (the streaming worker does the same in Redis)."""
        game_key = _game_key(game.game_id)
        recorded = self.games.get(game_key)
        known = None if recorded is None else _digest(recorded)
        keys = self.engine.ratings_read(game)
        states = {} if keys is None else {k: self.states.get(k, UNSEEN) for k in keys}
        outcome = self.engine.apply(game, states, known)
        if outcome.verdict in (Verdict.APPLIED, Verdict.SKIPPED):
            self.games[game_key] = int.from_bytes(outcome.digest)
        for update in outcome.updates:
            self.states[update.key] = update.state
        return outcome

    def record(self, game_id: str) -> bytes | None:
        """The game's idempotency record (its facts digest), if it was applied or skipped."""
        recorded = self.games.get(_game_key(game_id))
        return None if recorded is None else _digest(recorded)

    def remember(self, game_id: str, digest: bytes) -> None:
        """Record a game as done elsewhere (its facts digest, or `RESTORED` for unknown facts)."""
        self.games[_game_key(game_id)] = int.from_bytes(digest) if digest != RESTORED else _RESTORED

    def seed(self, row: SeedRow, force: bool = False) -> SeedOutcome:
        outcome = self.engine.seed(row, self.states.get(row.key, UNSEEN), force)
        if outcome.update is not None:
            self.states[outcome.update.key] = outcome.update.state
        return outcome
