"""The demo of `tornelo` (`rating-worker demo --system tornelo`): tournaments of the arena's
players, each closed when its end is read, as the service closes it.

In the service no game record ends a tournament: the platform publishes its end on the tournament
topic (RATING_TOPIC_TOURNAMENTS) once every game of it is acknowledged, and `close-period
--follow`, one long-running replica beside the workers, reads the ends in order and closes each
(drain, mark, close, publish: docs/systems/tornelo.md). So the demo:

1. creates the tournament topic (one partition) beside the others;
2. feeds the workers tornelo's traffic (`DemoTournaments`: overlapping tournaments of several
   sizes, games outside any, late games, a few bad records and redeliveries) through
   `worker.embedded.tournament_feed`, which publishes each tournament's end only once the broker
   has acknowledged its games, in the order they end;
3. runs the close follower in its own process (`worker.operate.follow.follow`, what `close-period
   --follow` runs), until stopped, and says each tournament it closes in one line: how many
   ratings its close closed, how long after its end record was acknowledged.
"""

import re
import time
from collections.abc import Callable

from schemas.tournament_finished import TournamentFinished
from worker.embedded.tournament_feed import PublishedEnd
from worker.operate import follow
from worker.operate.close_period import CloseReport
from worker.settings import WorkerSettings
from worker.systems.tornelo.traffic import TorneloSimulation

# A tournament's players: from a quarter of the largest size to the largest (at most half the players).
LARGEST = 64

# The follower's line (its `say`) that the demo shows: it started.
_FOLLOWING = re.compile(r"close-period: following .*")


class DemoTournaments(TorneloSimulation):
    """tornelo's traffic with tournaments of several sizes: each of a quarter of `tournament_size` to
    all of it, drawn as it starts (never more at once than the largest would allow, so a new one
    always finds its players)."""

    def __init__(self, players: int, seed: int) -> None:
        super().__init__(players, seed, tournament_size=LARGEST)
        self._largest = self.tournament_size

    def _start(self) -> None:
        self.tournament_size = self.rng.randint(max(2, self._largest // 4), self._largest)
        try:
            super()._start()
        finally:
            self.tournament_size = self._largest


class TournamentCloser:
    """The demo's `close-period --follow` (step 3 of the module's docstring); each tournament it
    closes told to `say` in one line."""

    def __init__(self, settings: WorkerSettings, say: Callable[[str], None]) -> None:
        self.settings = settings
        self.say = say
        self.closed = 0
        self.latest: str | None = None
        self._published: dict[str, float] = {}  # ends acknowledged, not closed yet -> when

    def plan(self, sim: TorneloSimulation, rate: float) -> str:
        """What the demo does with the tournaments, in one line."""
        return (
            f"tournaments of {max(2, sim.tournament_size // 4)} to {sim.tournament_size} players, up to "
            f"{sim.running_at_most} at once, {sim.ROUNDS[0]}-{sim.ROUNDS[1]} Swiss rounds, at {rate:g} games/s; "
            f"each end published on {self.settings.topic_tournaments} once the broker has acknowledged every "
            "game of it; `close-period --follow` (in the demo's process) closes each"
        )

    def status(self, running: int, ended: int) -> str:
        """Where the tournaments stand: running, ended (their end published or waiting), closed."""
        latest = f" (latest {self.latest})" if self.latest else ""
        return f"tournaments: {running} running, {ended} ended, {self.closed} closed{latest}"

    def published(self, end: PublishedEnd) -> None:
        """An end record acknowledged (the feed's `published`)."""
        self._published[end.tournament_id] = end.at

    async def run(self) -> None:
        """The follower, until cancelled."""
        await follow.follow(self.settings, self.heard, closed=self.told)

    def heard(self, line: str) -> None:
        """A line of the follower (its `say`): only its start is told (its closes come to `told`)."""
        if _FOLLOWING.fullmatch(line):
            self.say(line.replace("close-period:", "close-period --follow:", 1))

    def told(self, end: TournamentFinished, report: CloseReport) -> None:
        """An end the follower took: told in one line if its close finished now (an end read again
        finds its tournament closed already)."""
        tournament = end.tournament_id
        if tournament not in report.finished:
            return
        at = self._published.pop(tournament, None)
        after = "" if at is None else f", {time.monotonic() - at:.1f} s after its end record was acknowledged"
        self.closed += 1
        self.latest = tournament
        ratings = report.closed + report.by_games
        self.say(f"close-period --follow: {tournament} closed: {ratings} ratings{after}")
