"""The second entry point of the rules: a rating system that changes a rating once per rating period.

A per-period system (`fide`: a period is a calendar month in UTC; `tornelo`: a tournament) is a
`RatingSystem` whose counted games are mostly *recorded*: added to both players' states in the
game's period, changing no rating (kind `period_game`). When the period **closes**, every rating
with recorded games of it changes once (`close`). What is closed so far is the deployment's
**calendar**, a value of the system's own type (`fide`: the latest closed month; `tornelo`: the
ended tournaments in the order they were marked), which the caller keeps and passes in: the
rules never hold it.

The system says, for a game, in which period it is recorded given the calendar
(`recorded_in`: `fide` the month of its `finished_at`, a late game the oldest open month;
`tornelo` its tournament unless ended, else None: rated at once as a one-game event by
`rate_game`), what recording does to both states (`record`), which periods a state holds
(`pending`) and which of those a calendar has closed, in the order they close (`closing`),
which periods a close of P closes (`to_mark`: `fide` every open month up to P with recorded
games, then P; `tornelo` P unless ended) and the calendar once one is marked (`marked`), and
what closing a period does to one rating (`close`). `fide` counts a game held before its
month's list existed with the opponent's list rating, which it reads from his state: a lookup
of any rating's state is passed in.

The engine (`worker.engine.engine`) owns the rest, the same for every such system: the close
events (event ids, `seq`, null game fields, encoding), their order, and the rule that a rating
still holding games of a closed period is closed before anything else happens to it.
"""

from collections.abc import Callable, Collection
from typing import Any, Protocol, runtime_checkable

from typing_extensions import TypeVar  # a TypeVar with a default (PEP 696)

from schemas.close_line import CloseLine
from schemas.game_finished import GameFinished
from worker.rules.interface import Change, Rated, RatingSystem, S

C = TypeVar("C", default=Any)  # a system's calendar: what is closed

# A calendar where the code holds any system's (the engine, the stores): opaque to it, the
# system's own type (`PeriodSystem`'s C), None for a system that rates game by game.
Calendar = object

# The state of any rating, by its key `{player_id}/{category}` (the system's unseen state for a
# rating never seen).
Lookup = Callable[[str], S]


@runtime_checkable
class PeriodSystem(RatingSystem[S], Protocol[S, C]):
    @property
    def opening(self) -> C: ...  # the calendar of a deployment that has closed nothing

    @property
    def close_line(self) -> type[CloseLine]: ...  # the model of `rate`'s close lines (its period's syntax)

    def recorded_in(self, game: GameFinished, calendar: C) -> str | None:
        """The period a counted game is recorded in, or None if it is rated at once (`rate_game`)."""
        ...

    def periods_of(self, game: GameFinished) -> tuple[str, ...]:
        """The periods whose marks a game's computation reads beside those its players' states hold
        (`tornelo`: its tournament; `fide`: none, its calendar is one value every batch reads)."""
        ...

    def record(self, game: GameFinished, category: str, period: str, calendar: C, white: S, black: S) -> Rated[S]:
        """Both players' `period_game` changes: the game added to their entries of `period`."""
        ...

    def pending(self, state: S) -> tuple[str, ...]:
        """The periods of the state's entries (its recorded games not yet closed)."""
        ...

    def closing(self, state: S, calendar: C) -> tuple[str, ...]:
        """The periods of the state's entries that `calendar` has closed, in the order they close."""
        ...

    def to_mark(self, calendar: C, period: str, recorded: Collection[str]) -> tuple[str, ...]:
        """The periods a close of `period` marks closed, in order, given the periods with
        recorded games (`recorded`); empty when it closes nothing."""
        ...

    def marked(self, calendar: C, period: str) -> C:
        """The calendar once `period` is marked closed."""
        ...

    def close(self, period: str, category: str, state: S, lookup: Lookup[S]) -> Change[S]:
        """What closing `period` does to a rating that has an entry of it (pure; `lookup` gives
        other ratings' states, for `fide`'s held games)."""
        ...

    def latest_due(self, now: int, grace_seconds: int) -> str | None:
        """The latest period due to close at `now` (unix seconds), its end `grace_seconds` past
        (`fide`: the month before the one `now - grace_seconds` falls in); None if none is due by
        the clock (`tornelo`: a tournament closes when its end is read)."""
        ...

    def latest_closed(self, calendar: C) -> str | None:
        """The period the calendar closed last (`fide`: L; `tornelo`: the tournament marked ended
        last); None if it has closed none."""
        ...

    def closed_through(self, state: S) -> str | None:
        """The latest period whose close reached this rating, as its state shows it (`fide`:
        `closed_period`); None where it shows none (`tornelo`: its ends are on their own topic)."""
        ...

    def opponents(self, state: S, period: str) -> tuple[str, ...]:
        """The players whose states the close of `period` reads for this rating (`fide`: the
        opponents of its held games of `period`; `close`'s `lookup` is asked for no other)."""
        ...

    def seedable(self, state: S) -> bool:
        """Whether a seeding row may replace this state (`fide`: not while it has games not yet
        closed, forced or not: they were counted with its list rating)."""
        ...
