"""The engine's per-period rules that no worked example shows on its own: an import never goes ahead of
a close (docs/contract-v2.md, "The per-period systems: `fide` and `tornelo`": a seeding row for a rating
still holding games of a closed period is refused, forced or not), fide's last month (`9999-11` closed,
then games of `9999-12`), and tornelo's calendar, whose marks append."""

import json
from typing import Any

from schemas.system_game import SystemGameFinished
from schemas.tornelo_game import TorneloGameFinished
from tests.support.contract import VALID_GAME
from tests.support.ratings import Ratings
from worker.engine.engine import Engine, SeedVerdict
from worker.rules.hundredths import Points
from worker.systems.fide.rules import parse_seed_row as fide_row
from worker.systems.registry import FIDE, TORNELO
from worker.systems.tornelo.rules import Ended, TorneloRules
from worker.systems.tornelo.rules import parse_seed_row as tornelo_row


def tornelo_game(game_id: str, white: str, black: str, tournament: str | None) -> TorneloGameFinished:
    value: dict[str, Any] = {
        **VALID_GAME,
        "game_id": game_id,
        "white_id": white,
        "black_id": black,
        "time_control": {"base_seconds": 900, "increment_seconds": 0},
        "tournament_id": tournament,
    }
    return TorneloGameFinished.model_validate_json(json.dumps(value))


def fide_game(game_id: str, finished_at: str) -> SystemGameFinished:
    value = {**VALID_GAME, "game_id": game_id, "white_id": "A", "black_id": "B", "finished_at": finished_at}
    return SystemGameFinished.model_validate_json(json.dumps(value))


def test_an_import_over_a_rating_still_holding_games_of_an_ended_tournament_is_refused_even_forced() -> None:
    """A and B play in S; S's close takes B only (in progress). A's import would change the
    rating S's close reads: refused, forced or not, until A is closed; then it goes ahead."""
    ratings = Ratings(Engine(TORNELO, Points(1200)))
    for text in ("A,rapid,1800,40,", "B,rapid,1800,40,"):
        ratings.seed(tornelo_row(text.split(",")))
    ratings.apply(tornelo_game("g1", "A", "B", "S"))
    closed = ratings.close_some("S", lambda key: key == "B/rapid")
    assert [u.key for u in closed] == ["B/rapid"]
    row = tornelo_row(["A", "rapid", "1500", "10", ""])
    assert ratings.seed(row, force=True).verdict is SeedVerdict.REFUSED
    assert ratings.seed(row).verdict is SeedVerdict.REFUSED
    assert [u.event.event_id for u in ratings.finish()] == ["period/S/A/rapid"]
    imported = ratings.seed(row, force=True)
    assert imported.verdict is SeedVerdict.IMPORTED and imported.update is not None
    assert json.loads(imported.update.payload)["rating_before"] == 1810.00  # after S's close


def test_fide_closes_9999_11_and_records_the_games_after_it_in_9999_12() -> None:
    ratings = Ratings(Engine(FIDE, Points(1200)))
    for text in ("A,blitz,2000,40,,", "B,blitz,2000,40,,"):
        ratings.seed(fide_row(text.split(",")))
    ratings.apply(fide_game("g1", "9999-11-10T12:00:00Z"))
    assert [u.event.event_id for u in ratings.close("9999-11")] == ["period/9999-11/A/blitz", "period/9999-11/B/blitz"]
    late = ratings.apply(fide_game("g2", "9999-11-30T23:00:00Z"))  # late: the oldest open month
    last = ratings.apply(fide_game("g3", "9999-12-31T23:59:59Z"))
    for outcome in (late, last):
        events = [json.loads(u.payload) for u in outcome.updates]
        assert [e["detail"]["period"] for e in events] == ["9999-12", "9999-12"]
    # Counted at once (November closed): totals, nothing held.
    assert ratings.state("A/blitz").pending[0][:2] == ("9999-12", 2)
    assert ratings.state("A/blitz").pending[0].held == ()


def test_tornelos_calendar_appends_its_marks_and_keeps_an_earlier_calendar_as_it_was() -> None:
    opening = TorneloRules().opening
    one = opening.marked("T1")
    two = one.marked("T2")
    assert list(two) == ["T1", "T2"] and list(one) == ["T1"] and list(opening) == []
    assert "T2" in two and "T2" not in one and "T1" not in opening
    assert two.marked("T1") is two  # ended already: nothing more
    branch = one.marked("T3")  # from the earlier calendar: its own record, the later one unchanged
    assert list(branch) == ["T1", "T3"] and list(two) == ["T1", "T2"]
    assert (two.place("T1"), two.place("T2")) == (0, 1)
    assert TorneloRules().opening == Ended() and one == Ended().marked("T1") and one != two
    assert TorneloRules().opening is not TorneloRules().opening  # each deployment its own record
