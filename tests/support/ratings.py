"""A synchronous harness around the engine for its unit tests: states and records in dicts.

The engine is pure; this keeps what it returns, game after game, as every store does, without
the store protocol's batches (the stores themselves are tested against their contract).
"""

from schemas.game_finished import GameFinished
from worker.engine.engine import Engine, GameOutcome, SeedOutcome, SeedRow, Verdict
from worker.rules.state import UNSEEN, RatingState


class Ratings:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.states: dict[str, RatingState] = {}
        self.games: dict[str, bytes] = {}

    def apply(self, game: GameFinished) -> GameOutcome:
        keys = self.engine.ratings_read(game)
        states = {} if keys is None else {k: self.states.get(k, UNSEEN) for k in keys}
        outcome = self.engine.apply(game, states, self.games.get(game.game_id))
        if outcome.verdict in (Verdict.APPLIED, Verdict.SKIPPED):
            self.games[game.game_id] = outcome.digest
        for update in outcome.updates:
            self.states[update.key] = update.state
        return outcome

    def seed(self, row: SeedRow, force: bool = False) -> SeedOutcome:
        outcome = self.engine.seed(row, self.states.get(row.key, UNSEEN), force)
        if outcome.update is not None:
            self.states[outcome.update.key] = outcome.update.state
        return outcome
