"""The toy system's traffic generator: the arena's games (the platform's), and a seeding file
whose header is the toy's own (`games`, not `rated_games`: no other system takes it)."""

from worker.systems.arena.traffic import ArenaSimulation


class FlatEloSimulation(ArenaSimulation):
    seed_header = "player_id,category,rating,games"
