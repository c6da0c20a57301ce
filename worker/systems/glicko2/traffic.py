"""`glicko2`'s traffic generator: the arena's games (`worker.systems.arena.traffic`, the platform's
players and matchmaking) spread over days, so that deviations grow between games."""

from datetime import UTC, datetime, timedelta

from worker.systems.arena.traffic import ArenaSimulation


class Glicko2Simulation(ArenaSimulation):
    """The arena's games as `glicko2` reads them (the arena's input topic), spread over months so
    that deviations grow between a player's games (each plays about every DAYS_BETWEEN days), from
    2024 on and never later than the moment each is made (the future check refuses a game finishing
    more than an hour after its record's timestamp): a long stream, such as the demo's, catches up
    with the present and goes on there. Seeded players come with their deviation and volatility."""

    DAYS_BETWEEN = 3.0
    seed_header = "player_id,category,rating,rated_games,deviation,volatility"

    def __init__(self, players: int, seed: int = 1, established_share: float = 0.6) -> None:
        super().__init__(players, seed, established_share)
        self.clock = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
        self.mean_step = self.DAYS_BETWEEN * 86400 / max(1.0, players / 2)  # seconds between two games

    def _step(self) -> timedelta:
        step = timedelta(seconds=self.rng.uniform(0, 2 * self.mean_step))
        return min(step, max(timedelta(0), datetime.now(UTC) - self.clock))

    def _seed_extra(self) -> tuple[str, ...]:
        return f"{self.rng.uniform(50, 150):.2f}", f"{self.rng.uniform(0.05, 0.07):.6f}"
