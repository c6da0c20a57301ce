"""`uscf-cc`'s traffic generator: the games of the correspondence topic, days per move, forfeits of
both kinds (`forfeit_kind` ordinary, absent or special), and newcomers who start unrated (only
established players are seeded, with their game credits). It extends the arena's
(`worker.systems.arena.traffic`, the platform's players and matchmaking)."""

from worker.systems.arena.traffic import ArenaSimulation


class CorrespondenceSimulation(ArenaSimulation):
    """The correspondence games of the platform (`uscf-cc`'s input): one category, any control
    (days per move), forfeits of both kinds, and established players seeded with their game
    credits (at least one; fewer than 25 is a provisional rating) while the others start unrated."""

    categories = ("correspondence",)

    def _seeded_games(self) -> int:
        return self.rng.randrange(1, 120)

    def _time_control(self) -> tuple[int, int]:
        return self.rng.choice(_CORRESPONDENCE_CONTROLS)

    def _casual_control(self, base: int, increment: int) -> tuple[int, int]:
        return base, increment  # every control is a correspondence control

    def _extra(self, termination: str, result: str) -> dict[str, object]:
        if termination != "forfeit":
            return {}
        if result != "1/2-1/2" and self.rng.random() < SPECIAL_FORFEIT_SHARE:
            return {"forfeit_kind": "special"}
        return self.rng.choice([{}, {"forfeit_kind": "ordinary"}])  # absent means ordinary


# Correspondence controls: days per move (base) and days added per move, in seconds.
_DAY = 24 * 3600


_CORRESPONDENCE_CONTROLS = [(3 * _DAY, 0), (5 * _DAY, 0), (7 * _DAY, 0), (2 * _DAY, _DAY)]


SPECIAL_FORFEIT_SHARE = 0.3  # of the forfeits: a win over a quitter (`forfeit_kind` special)
