"""A per-period system's late game (its own period closed when it is applied) is told apart by the
engine, the same for every such system, so that the workers count it
(`rating_period_games_late_total`) without knowing any system's periods."""

import json
from typing import Any

from schemas.system_game import SystemGameFinished
from schemas.tornelo_game import TorneloGameFinished
from tests.support.contract import VALID_GAME
from tests.support.ratings import Ratings
from worker.engine.engine import Engine, SeedVerdict, Verdict
from worker.rules.hundredths import Hundredths, Points
from worker.systems.fide.rules import Entry, FideState
from worker.systems.fide.rules import parse_seed_row as fide_row
from worker.systems.registry import FIDE, TORNELO
from worker.systems.tornelo.rules import parse_seed_row as tornelo_row


def fide_game(game_id: str, finished_at: str) -> SystemGameFinished:
    value = {**VALID_GAME, "game_id": game_id, "white_id": "A", "black_id": "B", "finished_at": finished_at}
    return SystemGameFinished.model_validate_json(json.dumps(value))


def tornelo_game(game_id: str, tournament: str) -> TorneloGameFinished:
    value: dict[str, Any] = {
        **VALID_GAME,
        "game_id": game_id,
        "white_id": "A",
        "black_id": "B",
        "time_control": {"base_seconds": 900, "increment_seconds": 0},
        "tournament_id": tournament,
    }
    return TorneloGameFinished.model_validate_json(json.dumps(value))


def test_a_fide_game_of_a_closed_month_is_late_and_one_of_an_open_month_is_not() -> None:
    ratings = Ratings(Engine(FIDE, Points(1200)))
    for text in ("A,blitz,2000,40,,", "B,blitz,2000,40,,"):
        ratings.seed(fide_row(text.split(",")))
    assert not ratings.apply(fide_game("g1", "2026-10-10T12:00:00Z")).late  # nothing closed yet
    ratings.close("2026-10")
    late = ratings.apply(fide_game("g2", "2026-10-31T23:00:00Z"))  # October closed: recorded in November
    assert late.verdict is Verdict.APPLIED and late.late
    assert [json.loads(u.payload)["detail"]["period"] for u in late.updates] == ["2026-11", "2026-11"]
    assert not ratings.apply(fide_game("g3", "2026-11-01T00:00:00Z")).late
    again = ratings.apply(fide_game("g2", "2026-10-31T23:00:00Z"))  # a duplicate records nothing
    assert again.verdict is Verdict.DUPLICATE and not again.late


def test_a_tornelo_game_of_an_ended_tournament_is_late() -> None:
    ratings = Ratings(Engine(TORNELO, Points(1200)))
    for text in ("A,rapid,1800,40,", "B,rapid,1800,40,"):
        ratings.seed(tornelo_row(text.split(",")))
    assert not ratings.apply(tornelo_game("g1", "T1")).late
    ratings.close("T1")
    assert ratings.apply(tornelo_game("g2", "T1")).late  # rated at once: its tournament ended
    assert not ratings.apply(tornelo_game("g3", "T2")).late


def test_a_rebuilt_state_is_imported_whole_over_open_games_but_not_holding_a_month_closed_since() -> None:
    """A switch-over's row (`row_of`: the rebuilt state whole) is imported over a rating holding
    games not closed yet (they were counted with the rebuilt ratings), unlike a seeding row; but
    not when it holds games of a month the live calendar has closed since the rebuild."""
    engine = Engine(FIDE, Points(1200))
    rules = engine.rules
    live = FideState(Hundredths(200000), 40, 3, pending=(Entry("2026-11", 1, Hundredths(100)),))
    rebuilt = FideState(Hundredths(201000), 41, 9, pending=(Entry("2026-11", 2, Hundredths(150)),))
    row = rules.row_of("A", "blitz", rebuilt)
    assert row is not None
    assert (
        engine.seed(fide_row(["A", "blitz", "2010", "41", "", ""]), live, True, "2026-10").verdict
        is SeedVerdict.REFUSED
    )
    imported = engine.seed(row, live, True, "2026-10", whole=True)
    assert imported.verdict is SeedVerdict.IMPORTED
    assert imported.update is not None and imported.update.state == rebuilt._replace(seq=4)
    # November closed live after the rebuild: the rebuilt state would hold a closed month.
    assert engine.seed(row, live._replace(pending=()), True, "2026-11", whole=True).verdict is SeedVerdict.REFUSED
