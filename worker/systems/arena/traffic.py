"""The arena's traffic generator: established and new players, matchmaking, results; the base
of every other system's generator (their packages' `traffic` modules).

Deterministic for a given random seed. It feeds the bundled sample, the benchmarks and the
tests; the embedded demo uses the same generator for its live stream.

The model: every player has a hidden strength; matchmaking pairs players of similar
strength, often the same opponents again; results follow the Elo expectation with ~15%
draws. Most games are rated, in the arena's time controls (blitz the most popular); a few
are casual, in other time controls, forfeited or aborted.
"""

import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from worker.rules.categories import RATED_TIME_CONTROLS, Category

_CATEGORY_WEIGHTS = {Category.BLITZ: 0.55, Category.RAPID: 0.25, Category.BULLET: 0.20}
_CONTROLS = {c: [tc for tc, cat in RATED_TIME_CONTROLS.items() if cat is c] for c in Category}
_UNRATED_CONTROLS = [(240, 0), (420, 5), (1800, 30), (90, 0)]
_TERMINATIONS = ["checkmate", "resignation", "timeout", "resignation", "checkmate", "disconnection"]
_DRAWS = ["draw_agreement", "repetition", "stalemate", "insufficient_material", "fifty_moves"]
DRAW_RATE = 0.15
REMATCH_RATE = 0.3  # players often play the same opponent again


@dataclass
class Player:
    player_id: str
    strength: float  # hidden playing strength, on the rating scale
    established: bool  # seeded with a rating from a previous system
    recent: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SeedLine:
    player_id: str
    category: str
    rating: str
    rated_games: int
    extra: tuple[str, ...] = ()  # the system's own fields (glicko2: deviation, volatility)


class ArenaSimulation:
    categories: tuple[str, ...] = tuple(Category)
    seed_header = "player_id,category,rating,rated_games"

    def __init__(self, players: int, seed: int = 1, established_share: float = 0.6) -> None:
        self.rng = random.Random(seed)
        self.players = [
            Player(f"p{i:05d}", self.rng.gauss(1450, 300), self.rng.random() < established_share)
            for i in range(players)
        ]
        self.by_strength = sorted(self.players, key=lambda p: p.strength)
        self.rank = {p.player_id: i for i, p in enumerate(self.by_strength)}
        self.by_id = {p.player_id: p for p in self.players}
        self.clock = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
        self.count = 0

    def seed_csv(self) -> str:
        rows = [",".join([s.player_id, s.category, s.rating, str(s.rated_games), *s.extra]) for s in self.seed_lines()]
        return "\n".join([self.seed_header, *rows]) + "\n"

    def seed_lines(self) -> list[SeedLine]:
        """Established players' ratings, near their strength, in every category: for each player
        the fields of all his rows (`_player_seed_fields`), then a row per category (`_seed_line`)."""
        lines: list[SeedLine] = []
        for p in self.players:
            if not p.established:
                continue
            fields = self._player_seed_fields()
            lines.extend(self._seed_line(p, category, fields) for category in self.categories)
        return lines

    def _player_seed_fields(self) -> tuple[str, ...]:
        """The system's fields that a player's rows share (drawn once a player): none here."""
        return ()

    def _seed_line(self, player: Player, category: str, player_fields: tuple[str, ...]) -> SeedLine:
        """One row: a rating with two decimals, at least 1000.00."""
        rating = max(1000.0, self._near_strength(player))
        return SeedLine(player.player_id, category, f"{rating:.2f}", self._seeded_games(), self._seed_extra())

    def _near_strength(self, player: Player) -> float:
        """A rating near the player's strength."""
        return player.strength + self.rng.gauss(0, 60)

    def _seed_extra(self) -> tuple[str, ...]:
        return ()

    def _seeded_games(self) -> int:
        return self.rng.randrange(0, 200)

    def _opponent(self, player: Player) -> Player:
        if player.recent and self.rng.random() < REMATCH_RATE:
            return self.by_id[self.rng.choice(player.recent)]
        i = self.rank[player.player_id]
        lo, hi = max(0, i - 8), min(len(self.by_strength), i + 9)
        candidates = [p for p in self.by_strength[lo:hi] if p is not player]
        return self.rng.choice(candidates)

    def game(self) -> dict[str, object]:
        """The next finished game, as the arena publishes it."""
        rng = self.rng
        self.count += 1
        self.clock += self._step()
        white, black = self._pair()
        white.recent = [*white.recent[-4:], black.player_id]
        black.recent = [*black.recent[-4:], white.player_id]
        base, increment = self._time_control()
        rated = rng.random() > 0.05
        base, increment = self._casual_control(base, increment)
        expected = 1 / (1 + 10 ** ((black.strength - white.strength) / 400))
        roll = rng.random()
        if roll < DRAW_RATE:
            result, termination = "1/2-1/2", rng.choice(_DRAWS)
        else:
            white_wins = rng.random() < expected
            result, termination = ("1-0" if white_wins else "0-1"), rng.choice(_TERMINATIONS)
        special = rng.random()
        if special < 0.01:
            termination = "forfeit"
        elif special < 0.02:
            termination = "aborted"
        extra = self._extra(termination, result)
        return {
            "event_id": f"evt-{self.count:09d}",
            "game_id": f"g{self.count:09d}",
            "finished_at": self.clock.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "rated": rated,
            "time_control": {"base_seconds": base, "increment_seconds": increment},
            "white_id": white.player_id,
            "black_id": black.player_id,
            "result": result,
            "termination": termination,
            **extra,
        }

    def _pair(self) -> tuple[Player, Player]:
        """White and black of the next game: anyone, against a player of similar strength."""
        white = self.rng.choice(self.players)
        return white, self._opponent(white)

    def _step(self) -> timedelta:
        """The time between two games of the arena: a busy site's."""
        return timedelta(milliseconds=self.rng.randrange(50, 2000))

    def _time_control(self) -> tuple[int, int]:
        """One of the arena's rated controls, by the categories' popularity."""
        category = self.rng.choices(list(_CATEGORY_WEIGHTS), weights=list(_CATEGORY_WEIGHTS.values()))[0]
        return self.rng.choice(_CONTROLS[category])

    def _casual_control(self, base: int, increment: int) -> tuple[int, int]:
        """A few games in a control the arena does not rate."""
        return self.rng.choice(_UNRATED_CONTROLS) if self.rng.random() < 0.03 else (base, increment)

    def _extra(self, termination: str, result: str) -> dict[str, object]:
        """Fields beside v1's: none in the arena's games."""
        return {}

    def game_lines(self, games: int, bad_share: float = 0.0, redelivery_share: float = 0.0) -> Iterator[bytes]:
        """JSON lines of `games` games, with some bad lines and redeliveries mixed in if asked."""
        previous: list[bytes] = []
        for _ in range(games):
            line = json.dumps(self.game(), separators=(",", ":")).encode()
            yield line
            previous = [*previous[-20:], line]
            if self.rng.random() < redelivery_share:
                yield self.rng.choice(previous)
            if self.rng.random() < bad_share:
                yield self._bad_line(line)
            yield from self._controls()

    def _controls(self) -> Sequence[bytes]:
        """Control lines due after the game just made: none in the arena's stream."""
        return ()

    def _bad_line(self, good: bytes) -> bytes:
        kind = self.rng.randrange(5)
        if kind == 0:
            return b"\xff\xfe not utf-8"
        if kind == 1:
            return good[: len(good) // 2]  # truncated JSON
        if kind == 2:
            return good.replace(b'"rated":true', b'"rated":1').replace(b'"rated":false', b'"rated":0')
        if kind == 3:
            return good.replace(b'"result":"', b'"result":"x')
        # the same game_id with other facts: a conflicting duplicate
        return (
            good.replace(b'"rated":true', b'"rated":false')
            if b'"rated":true' in good
            else good.replace(b'"rated":false', b'"rated":true')
        )


def timestamp(instant: datetime) -> str:
    """A `finished_at` as the arena writes it: milliseconds, `Z`."""
    return instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")
