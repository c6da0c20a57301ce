"""`fide`'s traffic generator: the arena's games over calendar months, with `rate`'s close lines
(the months' shared machinery: `worker.systems.period_traffic`)."""

from collections import deque
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from worker.systems.arena.traffic import Player, SeedLine, timestamp
from worker.systems.period_traffic import PeriodSimulation, control_line, month_index, month_period, month_start


class FideSimulation(PeriodSimulation):
    """The arena's games as `fide` reads them (the arena's input topic, nothing added), over months
    from 2025-01, with the close lines of `rate`'s input.

    The clock spreads the games `game_lines` is asked for evenly over SPAN (a year: twelve months,
    whether the stream has 500 games or the benchmark's million; `game` alone steps as for a
    million). It never passes the present (the future check refuses a game more than an hour
    after its record).

    The stream opens with a close of the month before its first game (it closes nothing: the
    first month's games are counted at once, not held). When the clock enters a new month, the
    month before is closed 2-6 games later (those games of
    the new month are held: their list is not known yet); the 1-3 games after a close are late
    ones, dated in the last hours of the closed month (recorded in the next one); every second close
    is followed by a close of the month before, closed already (it does nothing). The current month
    stays open. Seeded players have whole ratings of at least 1400, `reached_2400` and a birth year
    (a junior now and then); the others start unrated."""

    seed_header = "player_id,category,rating,rated_games,reached_2400,birth_year"
    START = datetime(2025, 1, 1, tzinfo=UTC)
    SPAN = timedelta(days=365)

    def __init__(self, players: int, seed: int = 1, established_share: float = 0.6) -> None:
        super().__init__(players, seed, established_share)
        self.clock = self.START
        self._mean_step = self.SPAN.total_seconds() / 1_000_000  # seconds between two games
        self._month = month_index(self.clock)
        self._next_month = month_start(self._month + 1)  # compared with the clock, the cheapest test
        self._closes: deque[tuple[int, int]] = deque()  # (the game after which it is due, month)
        self._closes_made = 0
        self._late = 0  # games still to date in the month just closed
        self._late_before = self.START  # the end of that month

    def game_lines(self, games: int, bad_share: float = 0.0, redelivery_share: float = 0.0) -> Iterator[bytes]:
        """The stream, opened by a close of the month before its first game: it closes nothing
        (no game yet) and sets the latest closed month, so that the games of the first month are
        counted at once rather than held one by one."""
        self._mean_step = self.SPAN.total_seconds() / games
        yield control_line(month_period(month_index(self.START) - 1))
        yield from super().game_lines(games, bad_share, redelivery_share)

    def _step(self) -> timedelta:
        return self._capped(timedelta(seconds=self.rng.uniform(0, 2 * self._mean_step)))

    def game(self) -> dict[str, object]:
        game = super().game()
        if self.clock >= self._next_month:
            self._closes.append((self.count + self.rng.randint(2, 6), self._month))
            self._month = month_index(self.clock)
            self._next_month = month_start(self._month + 1)
        elif self._late:
            self._late -= 1
            game["finished_at"] = timestamp(self._late_before - timedelta(seconds=self.rng.uniform(1, 6 * 3600)))
        while self._closes and self._closes[0][0] <= self.count:
            self._close(self._closes.popleft()[1])
        return game

    def _close(self, month: int) -> None:
        self._due.append(control_line(month_period(month)))
        self._closes_made += 1
        if self._closes_made % 2 == 0:
            self._due.append(control_line(month_period(month - 1)))  # closed already: does nothing
        self._late = self.rng.randint(1, 3)
        self._late_before = month_start(month + 1)

    def _some_period(self) -> str:
        return month_period(self._month)

    def _player_seed_fields(self) -> tuple[str, ...]:
        """One birth year a player (empty now and then)."""
        return ("" if self.rng.random() < 0.4 else str(self.rng.randrange(1950, 2016)),)

    def _seed_line(self, player: Player, category: str, player_fields: tuple[str, ...]) -> SeedLine:
        """A whole rating of at least 1400, reached_2400, the player's birth year."""
        rating = max(1400, round(self._near_strength(player)))  # FIDE lists none lower
        extra = (self._reached_2400(rating), *player_fields)
        return SeedLine(player.player_id, category, str(rating), self._seeded_games(), extra)

    def _reached_2400(self, rating: int) -> str:
        if rating >= 2400:
            return self.rng.choice(("true", ""))  # empty: read from the rating
        if rating >= 2250 and self.rng.random() < 0.3:
            return "true"  # over 2400 once, below it now
        return self.rng.choice(("false", "false", ""))
