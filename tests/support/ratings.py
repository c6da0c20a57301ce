"""A synchronous harness around the engine for its unit tests: states and records in dicts.

The engine is pure; this keeps what it returns, game after game, as every store does, without
the store protocol's batches (the stores themselves are tested against their contract). It
holds any system's states: a rating never seen is the system's own `unseen` state.

For a per-period system (`fide`, `tornelo`) it also keeps what the store keeps beside the states:
the calendar (what is closed) and the index of the ratings with recorded games of each period,
and closes periods as `rate`'s close lines do (`close`), or partly, as the service may
(`close_some`: a period marked, some of its ratings closed at once, the others left to be closed
by their next game or by `finish`): the steps of `worker.replay.closes.close_period`, kept
synchronous here over dicts (the store's own are tested through that module).
"""

from collections.abc import Callable
from typing import Generic

from schemas.game_finished import GameFinished
from worker.engine.engine import Engine, GameOutcome, SeedOutcome, SeedRow, Update, Verdict
from worker.rules.interface import S


class Ratings(Generic[S]):
    def __init__(self, engine: Engine[S]) -> None:
        self.engine = engine
        self.states: dict[str, S] = {}
        self.games: dict[str, bytes] = {}
        periods = engine.periods
        self.calendar: object = None if periods is None else periods.opening
        self.index: dict[str, set[str]] = {}  # period -> ratings with recorded games of it
        self.in_progress: str | None = None  # a period marked whose close is not finished

    def state(self, key: str) -> S:
        return self.states.get(key, self.engine.rules.unseen)

    def apply(self, game: GameFinished) -> GameOutcome[S]:
        keys = self.engine.ratings_read(game)
        states = {} if keys is None else {k: self.state(k) for k in keys}
        outcome = self.engine.apply(game, states, self.games.get(game.game_id), None, self.calendar, self.state)
        if outcome.verdict in (Verdict.APPLIED, Verdict.SKIPPED):
            self.games[game.game_id] = outcome.digest
        for update in outcome.updates:
            self._keep(update)
        return outcome

    def seed(self, row: SeedRow, force: bool = False) -> SeedOutcome[S]:
        outcome = self.engine.seed(row, self.state(row.key), force, self.calendar)
        if outcome.update is not None:
            self._keep(outcome.update)
        return outcome

    def close(self, period: str) -> list[Update[S]]:
        """A close line of `rate`: every period it marks closed, each rating in order."""
        return self.close_some(period, lambda key: True)

    def close_some(self, period: str, take: Callable[[str], bool]) -> list[Update[S]]:
        """A close of `period` that closes at once only the ratings `take` accepts of the last
        period it marks (the service's close in progress: the others are closed by their next
        game, or by `finish`). A close still in progress is finished first, and every period
        marked before the last is closed whole: a period is marked only once the one before it is
        closed."""
        updates = self.finish()
        marks = self.engine.marks(self.calendar, period, self.index.keys())
        for i, marked in enumerate(marks):
            self.calendar = self.engine.marked(self.calendar, marked)
            self.in_progress = marked
            last = i == len(marks) - 1
            for key in self.engine.close_order(self.index.get(marked, ())):
                if not last or take(key):
                    updates.extend(self._close(marked, key))
            if not last:
                self.finish()
        return updates

    def finish(self) -> list[Update[S]]:
        """The rest of the close in progress, if any: its ratings not closed yet, in order."""
        if self.in_progress is None:
            return []
        period, self.in_progress = self.in_progress, None
        updates: list[Update[S]] = []
        for key in self.engine.close_order(self.index.pop(period, ())):
            updates.extend(self._close(period, key))
        return updates

    def _close(self, period: str, key: str) -> list[Update[S]]:
        update = self.engine.close(period, key, self.state(key), self.state).update
        if update is None:  # closed already (by its next game)
            return []
        self._keep(update)
        return [update]

    def _keep(self, update: Update[S]) -> None:
        self.states[update.key] = update.state
        periods = self.engine.periods
        if periods is not None:
            for period in periods.pending(update.state):
                self.index.setdefault(period, set()).add(update.key)
