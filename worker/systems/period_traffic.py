"""What the per-period systems' traffic generators share (`fide`'s and `tornelo`'s, in their
packages): the arena's games (`worker.systems.arena.traffic`) with the close lines of `rate`'s
input file among them (`{"control":"close","period":P}`), deterministic for a random seed.
"""

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from worker.systems.arena.traffic import ArenaSimulation


def control_line(period: str, control: str = "close") -> bytes:
    return json.dumps({"control": control, "period": period}, separators=(",", ":")).encode()


class PeriodSimulation(ArenaSimulation):
    """What the streams of the per-period systems share: close lines queued while a game is made
    and written after its line (never redelivered), a bad control line now and then among the bad
    lines, and games never dated later than the moment they are made (as Glicko2Simulation's)."""

    BAD_CONTROL_SHARE = 0.2  # of the bad lines: a control line that is not a valid close

    def __init__(self, players: int, seed: int = 1, established_share: float = 0.6) -> None:
        super().__init__(players, seed, established_share)
        self._due: list[bytes] = []

    def _controls(self) -> Sequence[bytes]:
        if not self._due:
            return ()
        due, self._due = self._due, []
        return due

    def _capped(self, step: timedelta) -> timedelta:
        """`step`, or less: the clock never passes the present."""
        return min(step, max(timedelta(0), datetime.now(UTC) - self.clock))

    def _some_period(self) -> str:
        raise NotImplementedError

    def _bad_line(self, good: bytes) -> bytes:
        if self.rng.random() < self.BAD_CONTROL_SHARE:
            return control_line(self._some_period(), self.rng.choice(("stop", "Close", "open")))
        return super()._bad_line(good)


def month_index(instant: datetime) -> int:
    return instant.year * 12 + instant.month - 1


def month_period(month: int) -> str:
    return f"{month // 12:04d}-{month % 12 + 1:02d}"


def month_start(month: int) -> datetime:
    return datetime(month // 12, month % 12 + 1, 1, tzinfo=UTC)
