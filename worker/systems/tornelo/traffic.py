"""`tornelo`'s traffic generator: tournaments of the arena's players, with their ends as `rate`'s
close lines (the shared machinery: `worker.systems.period_traffic`)."""

from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from worker.systems.arena.traffic import Player, SeedLine
from worker.systems.period_traffic import PeriodSimulation, control_line


@dataclass
class Tournament:
    tournament_id: str
    players: list[Player]
    control: tuple[int, int]  # one time control for all its games
    rounds_left: int  # rounds not paired yet
    points: dict[str, float]
    pairings: list[tuple[Player, Player]] = field(default_factory=list)  # the round's games to play, last first


class TorneloSimulation(PeriodSimulation):
    """The arena's games as `tornelo` reads them, most of them in tournaments (`tournament_id`), with
    the close lines of `rate`'s input.

    Up to RUNNING tournaments run at once (as many as the players fill, at least two), each of
    `tournament_size` players (at most half the players) of neighbouring strength, none in more
    than two at a time, for 5-9 Swiss rounds (paired by points, colours drawn), at one time control
    of the arena's. A game is one of a running tournament's next pairing (the tournament drawn at
    random, so they advance side by side), or, FREE_SHARE of them, a game of the arena's outside
    any tournament (no `tournament_id`, or null one time in four). A tournament's last game is
    followed by its close and a new tournament starts, so they end one after another. After
    LATE_SHARE of the closes, one game of the ended tournament comes within LATE_WITHIN games
    (a late game), and after RECLOSE_SHARE of them the tournament ended before is closed again (it
    does nothing). Seeded players have whole ratings, 0, a few or many games and now and then a K
    modifier; the others start unrated."""

    seed_header = "player_id,category,rating,rated_games,k_modifier"
    START = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
    FREE_SHARE = 0.15
    RUNNING = 8  # enough to mix several tournaments' rounds in the stream
    ROUNDS = (5, 9)
    LATE_SHARE = 0.3
    LATE_WITHIN = 40
    RECLOSE_SHARE = 0.15
    NULL_SHARE = 0.25  # of the games outside tournaments: `"tournament_id": null` rather than no key

    def __init__(self, players: int, seed: int = 1, established_share: float = 0.6, tournament_size: int = 100) -> None:
        if tournament_size < 2:
            raise ValueError(f"a tournament needs at least 2 players, not {tournament_size}")
        super().__init__(players, seed, established_share)
        self.clock = self.START
        self.tournament_size = max(2, min(tournament_size, players // 2))
        # With at most players // size running, a new tournament always finds its players among
        # those in fewer than two.
        self.running_at_most = min(self.RUNNING, max(2, players // self.tournament_size))
        self._running: list[Tournament] = []
        self._busy: dict[str, int] = {}  # the running tournaments of each player: 1 or 2
        self._started = 0
        self._late: deque[tuple[int, Tournament]] = deque()  # (the game at which it is due, ended tournament)
        self._last_ended: str | None = None
        self._current: Tournament | None = None  # the tournament of the game being made
        self._paired: tuple[str, str] = ("", "")

    def _step(self) -> timedelta:
        return self._capped(super()._step())

    def _pair(self) -> tuple[Player, Player]:
        rng = self.rng
        self._current = None
        if self._late and self._late[0][0] <= self.count:
            tournament = self._late.popleft()[1]
            white, black = rng.sample(tournament.players, 2)
        else:
            if len(self._running) < self.running_at_most:
                self._start()
            if not self._running or rng.random() < self.FREE_SHARE:
                return super()._pair()
            tournament = self._running[rng.randrange(len(self._running))]
            if not tournament.pairings:
                self._pair_round(tournament)
            white, black = tournament.pairings.pop()
            if not tournament.pairings and not tournament.rounds_left:
                self._end(tournament)
        self._current = tournament
        self._paired = (white.player_id, black.player_id)
        return white, black

    def _start(self) -> None:
        """A new tournament: players of neighbouring strength that are in fewer than two."""
        n = len(self.by_strength)
        first = self.rng.randrange(n)
        chosen: list[Player] = []
        for i in range(n):
            player = self.by_strength[(first + i) % n]
            if self._busy.get(player.player_id, 0) < 2:
                chosen.append(player)
                if len(chosen) == self.tournament_size:
                    break
        else:
            return
        for player in chosen:
            self._busy[player.player_id] = self._busy.get(player.player_id, 0) + 1
        self._started += 1
        control = super()._time_control()
        rounds = self.rng.randint(*self.ROUNDS)
        points = {p.player_id: 0.0 for p in chosen}
        self._running.append(Tournament(f"t{self._started:06d}", chosen, control, rounds, points))

    def _pair_round(self, tournament: Tournament) -> None:
        """The next Swiss round: by points (ties in random order), neighbours paired, colours drawn."""
        order = tournament.players.copy()
        self.rng.shuffle(order)
        order.sort(key=lambda p: tournament.points[p.player_id], reverse=True)
        pairs = [(order[i], order[i + 1]) for i in range(0, len(order) - 1, 2)]
        tournament.pairings = [(a, b) if self.rng.random() < 0.5 else (b, a) for a, b in reversed(pairs)]
        tournament.rounds_left -= 1

    def _end(self, tournament: Tournament) -> None:
        """Its close after its last game; now and then a close of the one ended before, a late game."""
        rng = self.rng
        self._running.remove(tournament)
        for player in tournament.players:
            self._busy[player.player_id] -= 1
        self._due.append(control_line(tournament.tournament_id))
        if self._last_ended is not None and rng.random() < self.RECLOSE_SHARE:
            self._due.append(control_line(self._last_ended))  # ended already: does nothing
        self._last_ended = tournament.tournament_id
        if rng.random() < self.LATE_SHARE:
            due = self.count + rng.randint(1, self.LATE_WITHIN)
            self._late.append((max(due, self._late[-1][0]) if self._late else due, tournament))

    def _time_control(self) -> tuple[int, int]:
        return super()._time_control() if self._current is None else self._current.control

    def _casual_control(self, base: int, increment: int) -> tuple[int, int]:
        return super()._casual_control(base, increment) if self._current is None else (base, increment)

    def _extra(self, termination: str, result: str) -> dict[str, object]:
        tournament = self._current
        if tournament is None:
            return {"tournament_id": None} if self.rng.random() < self.NULL_SHARE else {}
        white, black = self._paired
        white_points = 1.0 if result == "1-0" else 0.5 if result == "1/2-1/2" else 0.0
        tournament.points[white] += white_points
        tournament.points[black] += 1.0 - white_points
        return {"tournament_id": tournament.tournament_id}

    def _some_period(self) -> str:
        return self._last_ended or "t000001"

    def _seed_line(self, player: Player, category: str, player_fields: tuple[str, ...]) -> SeedLine:
        """Its games first, then a whole rating of at least 100 (at most 2700 under 20 games), a K modifier."""
        games = self._seeded_games()
        rating = max(100, round(self._near_strength(player)))
        if games < 20:
            rating = min(rating, 2700)  # a provisional rating's range
        return SeedLine(player.player_id, category, str(rating), games, (self._k_modifier(),))

    def _seeded_games(self) -> int:
        roll = self.rng.random()
        if roll < 0.1:
            return 0  # an initial rating (an arbiter's)
        return self.rng.randrange(1, 20) if roll < 0.35 else self.rng.randrange(20, 200)

    def _k_modifier(self) -> str:
        """Empty (1.00) mostly; sometimes 0.10-3.00, written as short as it goes (`1.5`, `2`)."""
        if self.rng.random() < 0.85:
            return ""
        hundredths = self.rng.randint(10, 300)
        return f"{hundredths // 100}.{hundredths % 100:02d}".rstrip("0").rstrip(".")
