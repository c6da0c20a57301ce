"""A synchronous harness around the engine for its unit tests: states and records in dicts.

The engine is pure; this keeps what it returns, game after game, as every store does, without
the store protocol's batches (the stores themselves are tested against their contract). It
holds any system's states: a rating never seen is the system's own `unseen` state.
"""

from typing import Generic

from schemas.game_finished import GameFinished
from worker.engine.engine import Engine, GameOutcome, SeedOutcome, SeedRow, Verdict
from worker.rules.system import S


class Ratings(Generic[S]):
    def __init__(self, engine: Engine[S]) -> None:
        self.engine = engine
        self.states: dict[str, S] = {}
        self.games: dict[str, bytes] = {}

    def apply(self, game: GameFinished) -> GameOutcome[S]:
        keys = self.engine.ratings_read(game)
        unseen = self.engine.rules.unseen
        states = {} if keys is None else {k: self.states.get(k, unseen) for k in keys}
        outcome = self.engine.apply(game, states, self.games.get(game.game_id))
        if outcome.verdict in (Verdict.APPLIED, Verdict.SKIPPED):
            self.games[game.game_id] = outcome.digest
        for update in outcome.updates:
            self.states[update.key] = update.state
        return outcome

    def seed(self, row: SeedRow, force: bool = False) -> SeedOutcome[S]:
        outcome = self.engine.seed(row, self.states.get(row.key, self.engine.rules.unseen), force)
        if outcome.update is not None:
            self.states[outcome.update.key] = outcome.update.state
        return outcome
