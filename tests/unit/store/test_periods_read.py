"""Which marks a batch of a system whose calendar is kept by its marks (tornelo) asks for beside
its states' own (`worker.store.schedule.periods_read`): its games' tournaments, its closes'
periods and a rebuilt state's open tournaments (the switch-over's check that none has ended since
the rebuild reads them)."""

from schemas.game_finished import GameFinished
from schemas.tornelo_game import TorneloGameFinished
from worker.engine.engine import Engine
from worker.rules.hundredths import Hundredths, Points
from worker.store.schedule import CloseItem, Item, SeedItem, periods_read
from worker.systems.registry import BY_NAME
from worker.systems.tornelo.rules import Entry, TorneloRules, TorneloState


def tornelo_game(game_id: str, tournament: str | None) -> TorneloGameFinished:
    return TorneloGameFinished.model_validate(
        {
            "event_id": f"e-{game_id}",
            "game_id": game_id,
            "white_id": "a",
            "black_id": "b",
            "result": "1-0",
            "termination": "checkmate",
            "rated": True,
            "time_control": {"base_seconds": 180, "increment_seconds": 0},
            "finished_at": "2026-11-10T12:00:00Z",
            "tournament_id": tournament,
        }
    )


def test_a_batch_asks_for_its_tournaments_closes_and_rebuilt_states_open_tournaments() -> None:
    engine = Engine(BY_NAME["tornelo"], Points(1200))
    rebuilt = TorneloState(Hundredths(150000), 30, 4, pending=(Entry("T7", 1), Entry("T8", 2)))
    row = TorneloRules().row_of("c", "blitz", rebuilt)
    seeding = TorneloRules().row_of("d", "blitz", TorneloState(Hundredths(150000), 30, 0))
    batch: list[Item] = [
        tornelo_game("g1", "T1"),
        tornelo_game("g2", None),
        CloseItem("T3", "a/blitz"),
        SeedItem(row, force=True, whole=True),
        SeedItem(seeding, force=False),  # a seeding row keeps the state's own entries: read with it
        tornelo_game("g3", "T1"),
    ]
    assert periods_read(engine, batch) == ["T1", "T3", "T7", "T8"]


def test_a_system_without_periods_asks_for_no_mark_and_fides_games_for_none() -> None:
    """fide's calendar is one value every batch reads whole: its games name no period to read
    (its closes' periods are asked for, and its store, keeping no marks, reads none)."""
    game = GameFinished.model_validate_json(tornelo_game("g1", "T1").model_dump_json())
    assert periods_read(Engine(BY_NAME["arena"], Points(1200)), [game]) == []
    assert periods_read(Engine(BY_NAME["fide"], Points(1200)), [game]) == []
