"""The demo of `fide` (`rating-worker demo --system fide`): months of games in fast-forward, each
closed as the service closes it.

In the service no input record closes a month: `rating-worker close-period --due` does, from a
CronJob, once the month's end plus RATING_PERIOD_GRACE_SECONDS has passed (docs/systems/fide.md,
"Closing months in the service"). A demo of a few minutes dated by the wall clock would show no
close at all (its games are of the current month, due at its end), so the demo's games run
faster than the calendar and their months are closed by the games' clock instead:

1. Before the seeding (`--init` is refused once a rating has state), `close-period --init` sets
   the month before the first games' as the latest closed one: their month's games are counted
   at once, not held until the month before it closes.
2. The games are fide's traffic (`FideSimulation`) without its close lines (in the service a
   close is the command; the workers would dead-letter the line). They start on the first day
   of the month MONTHS_BACK months before the present's, a month of them every `month_seconds`
   at the demo's rate, and catch up with the present, where they are dated as they are made.
3. Every CHECK_SECONDS, the latest month due by the games' clock (its end plus the grace
   passed), if not closed yet, is closed by `close-period MONTH`: the command's own steps (drain,
   mark, close, publish), in the demo's process. The games' clock never passes the wall clock, so
   such a month is due for the command too; once the games are live, this is `--due` itself,
   which does nothing until the current month is due.
"""

import asyncio
import json
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta

from worker.operate import close_period as closing
from worker.settings import WorkerSettings
from worker.systems.fide.traffic import FideSimulation
from worker.systems.period_traffic import month_index, month_period, month_start

MONTHS_BACK = 12  # a year of months, as fide's `sample` streams cover
MONTH = timedelta(days=365.25 / 12)  # the mean month, for the games' pace
MONTH_SECONDS = 20.0  # the default: at 200 games/s, 4,000 games a month, a close every 20 s
# Each check compares two instants in memory (Redis and Kafka are touched only by a close): a
# second is well under a month at any pace a terminal can follow.
CHECK_SECONDS = 1.0


class FastMonths(FideSimulation):
    """fide's games from `start` on, a mean `step_seconds` of the games' clock apart, never dated
    later than the moment they are made."""

    def __init__(self, players: int, seed: int, start: datetime, step_seconds: float) -> None:
        self.START = start  # read by FideSimulation's constructor: the clock starts there
        super().__init__(players, seed)
        self._fast_step = step_seconds

    def _step(self) -> timedelta:
        return self._capped(timedelta(seconds=self.rng.uniform(0, 2 * self._fast_step)))


def fast_months(players: int, seed: int, rate: float, month_seconds: float, now: datetime) -> FastMonths:
    """The demo's games: from MONTHS_BACK months before `now`'s, a month every `month_seconds` at `rate`."""
    start = month_start(month_index(now) - MONTHS_BACK)
    return FastMonths(players, seed, start, MONTH.total_seconds() / (rate * month_seconds))


def without_close_lines(lines: Iterable[bytes]) -> Iterator[bytes]:
    """The stream with `rate`'s close lines left out (a bad control line, such as `"control":"stop"`,
    stays: the workers dead-letter it, as they would in the service)."""
    for line in lines:
        if line.startswith(b'{"control"'):
            try:
                if json.loads(line).get("control") == "close":
                    continue
            except ValueError:
                pass
        yield line


class MonthCloser:
    """The demo's `close-period`: the steps 1 and 3 of the module's docstring. Each close is told to
    `say` in one line."""

    def __init__(self, settings: WorkerSettings, games: FastMonths, say: Callable[[str], None]) -> None:
        self.settings = settings
        self.games = games
        self.say = say
        self.latest = month_period(month_index(games.START) - 1)  # the latest month closed
        self.closing: str | None = None

    async def init(self) -> None:
        """Step 1: `close-period --init` the month before the first games' (before any seeding)."""
        await closing.init(self.settings, self.latest)

    def plan(self, month_seconds: float, rate: float) -> str:
        """What the demo does with the months, in one line."""
        return (
            f"close-period --init {self.latest} (the month before the first games'); games from "
            f"{month_period(month_index(self.games.START))}, a month every {month_seconds:g} s at {rate:g} games/s "
            f"until they reach the present; close-period MONTH once the games' clock is past its end plus "
            f"RATING_PERIOD_GRACE_SECONDS={self.settings.period_grace_seconds}, as the hourly "
            "`close-period --due` of a deployment does by the wall clock"
        )

    def status(self) -> str:
        """Where the months stand: the games' month, the latest closed, a close running."""
        running = f", closing {self.closing}" if self.closing else ""
        return f"games of {month_period(month_index(self.games.clock))}, {self.latest} closed{running}"

    async def run(self) -> None:
        """Step 3, until cancelled."""
        periods = self.settings.spec().periods
        assert periods is not None
        while True:
            await asyncio.sleep(CHECK_SECONDS)
            due = periods.latest_due(int(self.games.clock.timestamp()), self.settings.period_grace_seconds)
            if due is not None and due > self.latest:
                await self._close(due)

    async def _close(self, month: str) -> None:
        self.closing = month
        started = time.monotonic()
        try:
            report = await closing.close_period(self.settings, month, False, lambda _: None)
        except (closing.CloseRefused, closing.DrainTimedOut) as e:
            self.say(f"close-period {month}: not closed: {e}")  # the next check tries again
            return
        finally:
            self.closing = None
        self.latest = month
        self.say(
            f"close-period {month}: marked {', '.join(report.marked) or 'none'}; {report.closed} ratings closed, "
            f"{report.by_games} closed already by their next game; {time.monotonic() - started:.1f} s "
            f"(drain {report.drain_seconds:.1f} s)"
        )
