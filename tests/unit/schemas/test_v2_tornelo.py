"""Contract v2's models for `tornelo`: the contract's example events validate through the one v2
schema, and so does an event of every kind written from the kinds table (a close or a one-game
event); events whose fields do not match their kind are refused; the seeding row, the close line
and the game input hold the contract's constraints (docs/contract-v2.md;
docs/systems/tornelo.md; examples 9, 13-16, 19 and 22, numbered as in the comments below)."""

import json
from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from schemas.close_line import TorneloCloseLine
from schemas.export import SCHEMA_DIR
from schemas.rating_changed_periods import FideRatingChanged, TorneloRatingChanged
from schemas.rating_changed_v2 import RATING_CHANGED_V2
from schemas.seed_record_tornelo import TorneloSeedRecord
from schemas.tornelo_game import TorneloGameFinished
from tests.support.contract import VALID_GAME

# The contract's tornelo example (docs/systems/tornelo.md, "State and events, with an example"): A's
# period_game in T1, then T1 ends.
A_GAME = (
    '{"event_id":"g1/A","system":"tornelo","game_id":"g1","source_event_id":"e-g1","player_id":"A",'
    '"opponent_id":"B","category":"rapid","kind":"period_game","score":1,"rating_before":1800.00,'
    '"rating_after":1800.00,"display_before":1800,"display_after":1800,"delta":0.00,"seq":2,"state":{"rating":1800.00,'
    '"rated_games":40,"seq":2,"k_modifier":1.00,"performance_sum":null,"pending":[{"tournament_id":"T1","games":1,'
    '"points":1.00,"expected":0.240253,"performance_games":1,"performance_points":1.00,"performance_sum":2400}]},'
    '"finished_at":"2026-11-10T12:00:00Z","detail":{"tournament_id":"T1","games":null,"points":null,'
    '"expected":0.240253,"k_factor":null,"k_modifier":null}}'
)
A_CLOSE = (
    '{"event_id":"period/T1/A/rapid","system":"tornelo","game_id":null,"source_event_id":null,"player_id":"A",'
    '"opponent_id":null,"category":"rapid","kind":"period_rating","score":null,"rating_before":1800.00,'
    '"rating_after":1815.00,"display_before":1800,"display_after":1815,"delta":15.00,"seq":3,"state":{"rating":1815.00,'
    '"rated_games":41,"seq":3,"k_modifier":1.00,"performance_sum":null,"pending":[]},"finished_at":null,'
    '"detail":{"tournament_id":"T1","games":1,"points":1.00,"expected":0.240253,"k_factor":20,"k_modifier":1.00}}'
)


def changed(text: str, **changes: Any) -> dict[str, Any]:
    """The event `text` with fields replaced; `state__rating` names a nested field."""
    event: dict[str, Any] = json.loads(text)
    for path, value in changes.items():
        *parents, name = path.split("__")
        target = event
        for parent in parents:
            target = target[parent]
        target[name] = value
    return event


def problems_of(refused: ValidationError) -> list[str]:
    """The problems the kind's validator lists: "... for kind 'k': a, b" -> [a, b]."""
    return str(refused.errors()[0]["msg"]).split(": ", 1)[1].split(", ")


def test_the_contracts_example_events_validate_as_tornelo_events() -> None:
    for text in (A_GAME, A_CLOSE):
        assert isinstance(RATING_CHANGED_V2.validate_json(text), TorneloRatingChanged)
    game = TorneloRatingChanged.model_validate_json(A_GAME)
    assert (game.detail.expected, game.state.pending[0].performance_sum) == (Decimal("0.240253"), 2400)
    close = TorneloRatingChanged.model_validate_json(A_CLOSE)
    assert (close.delta, close.detail.k_modifier) == (Decimal(15), Decimal(1))


def state(rating: float | None, rated_games: int, seq: int, **fields: Any) -> dict[str, Any]:
    return {
        "rating": rating,
        "rated_games": rated_games,
        "seq": seq,
        "k_modifier": fields.get("k_modifier", 1.00),
        "performance_sum": fields.get("performance_sum"),
        "pending": fields.get("pending", []),
    }


def detail(
    tournament: str | None, games: int | None = None, points: float | None = None, **rated: Any
) -> dict[str, Any]:
    fields = {"expected": None, "k_factor": None, "k_modifier": None, **rated}
    return {"tournament_id": tournament, "games": games, "points": points, **fields}


def event(base: str, player: str, kind: str, before: float | None, after: float | None, **fields: Any) -> str:
    both = before is not None and after is not None
    return json.dumps(
        changed(
            base,
            player_id=player,
            kind=kind,
            rating_before=before,
            rating_after=after,
            display_before=1200 if before is None else int(before),
            display_after=1200 if after is None else int(after),
            delta=after - before if both else None,  # type: ignore[operator]
            **fields,
        )
    )


def entry(tournament: str, games: int, points: float, expected: float, perf: tuple[int, float, int]) -> dict[str, Any]:
    performance_games, performance_points, performance_sum = perf
    return {
        "tournament_id": tournament,
        "games": games,
        "points": points,
        "expected": expected,
        "performance_games": performance_games,
        "performance_points": performance_points,
        "performance_sum": performance_sum,
    }


# One event of every kind, from the kinds table (docs/systems/tornelo.md, "State and events, with an
# example") and tornelo's worked examples (numbered as below).
HAND_WRITTEN = {
    # Example 9: unrated U's T1 (performances 1600, 1100, 1400) ends: 1367, provisional.
    "provisional_rating (a close)": event(
        A_CLOSE,
        "U",
        "provisional_rating",
        None,
        1367.00,
        event_id="period/T1/U/rapid",
        seq=4,
        state=state(1367.00, 3, 4, performance_sum=4100),
        detail=detail("T1", 3, 1.50),
    ),
    # Example 14: I, seeded 1600 with 0 games, beats E 1500 outside tournaments: 1900 from one game.
    "provisional_rating (one game)": event(
        A_GAME,
        "I",
        "provisional_rating",
        1600.00,
        1900.00,
        event_id="g2/I",
        game_id="g2",
        source_event_id="e-g2",
        opponent_id="E",
        seq=2,
        state=state(1900.00, 1, 2, performance_sum=1900),
        detail=detail(None, 1, 1.00),
    ),
    # Example 15: A 1800 beats B 1800, no tournament: rated at once.
    "period_rating (one game)": event(
        A_GAME,
        "A",
        "period_rating",
        1800.00,
        1810.00,
        seq=2,
        state=state(1810.00, 41, 2),
        detail=detail(None, 1, 1.00, expected=0.5, k_factor=20, k_modifier=1.00),
    ),
    # Example 16: game g2 of T arrives after T ended: a one-game event that names T.
    "period_rating (a late game)": event(
        A_GAME,
        "A",
        "period_rating",
        1810.00,
        1819.00,
        event_id="g2/A",
        game_id="g2",
        seq=4,
        state=state(1819.00, 42, 4),
        detail=detail("T", 1, 1.00, expected=0.528751, k_factor=20, k_modifier=1.00),
    ),
    # Example 13: P (1500, 5 games) beat only unrated U in T: nothing counted.
    "period_closed (provisional)": event(
        A_CLOSE,
        "P",
        "period_closed",
        1500.00,
        1500.00,
        event_id="period/T/P/rapid",
        seq=3,
        state=state(1500.00, 5, 3, performance_sum=7500),
        detail=detail("T", 0, 0.00),
    ),
    # Example 21: V, established by S, recorded his T game while unrated: T counts nothing.
    "period_closed (established)": event(
        A_CLOSE,
        "V",
        "period_closed",
        1500.00,
        1500.00,
        event_id="period/T/V/rapid",
        seq=23,
        state=state(1500.00, 20, 23),
        detail=detail("T", 0, 0.00),
    ),
    # Example 9: unrated U records his first T1 game (no E; a performance of 1200 + 400).
    "period_game (unrated)": event(
        A_GAME,
        "U",
        "period_game",
        None,
        None,
        event_id="g1/U",
        seq=1,
        state=state(None, 0, 1, pending=[entry("T1", 0, 0.00, 0.0, (1, 1.00, 1600))]),
        detail=detail("T1"),
    ),
    # Example 13: P, rated, against unrated U: the game has neither an E nor a performance for him.
    "period_game (against an unrated player)": event(
        A_GAME,
        "P",
        "period_game",
        1500.00,
        1500.00,
        event_id="g1/P",
        seq=2,
        state=state(1500.00, 5, 2, performance_sum=7500, pending=[entry("T1", 0, 0.00, 0.0, (0, 0.00, 0))]),
        detail=detail("T1"),
    ),
    # Example 22: seeded 1500 with 10 games: the average of 10 performances.
    "imported": event(
        A_CLOSE,
        "S",
        "imported",
        None,
        1500.00,
        event_id="import/S/rapid/1",
        seq=1,
        state=state(1500.00, 10, 1, performance_sum=15000),
        detail=detail(None),
    ),
    # Example 6: M seeded with the modifier 1.50 over his rating, established.
    "imported (a modifier)": event(
        A_CLOSE,
        "M",
        "imported",
        1815.00,
        1800.00,
        event_id="import/M/rapid/4",
        seq=4,
        state=state(1800.00, 40, 4, k_modifier=1.50),
        detail=detail(None),
    ),
}


@pytest.mark.parametrize("name", list(HAND_WRITTEN))
def test_an_event_of_every_kind_validates(name: str) -> None:
    event = RATING_CHANGED_V2.validate_json(HAND_WRITTEN[name])
    assert isinstance(event, TorneloRatingChanged)
    assert event.kind == name.split(" ", maxsplit=1)[0]


ONE_GAME = HAND_WRITTEN["period_rating (one game)"]
PROVISIONAL_CLOSE = HAND_WRITTEN["provisional_rating (a close)"]
PROVISIONAL_GAME = HAND_WRITTEN["provisional_rating (one game)"]
CLOSED = HAND_WRITTEN["period_closed (provisional)"]
UNRATED_GAME = HAND_WRITTEN["period_game (unrated)"]
IMPORTED = HAND_WRITTEN["imported"]


@pytest.mark.parametrize(
    ("text", "changes", "problem"),
    [
        # period_game: a game of an open tournament, recorded; the rating unchanged; its tournament and E.
        (
            A_GAME,
            {"rating_after": 1801.0, "state__rating": 1801.0, "delta": 1.0},
            "rating_after (differs from rating_before)",
        ),
        (A_GAME, {"rating_after": 1801.0}, "rating_after (differs from state.rating)"),
        (A_GAME, {"delta": None}, "delta"),
        (A_GAME, {"game_id": None}, "game fields"),
        (A_GAME, {"opponent_id": None}, "game fields"),
        (A_GAME, {"detail__tournament_id": None}, "detail.tournament_id"),
        (A_GAME, {"detail__tournament_id": "T2"}, "state.pending (no entry of detail.tournament_id)"),
        (A_GAME, {"detail__games": 1}, "detail.games"),
        (A_GAME, {"detail__k_factor": 20}, "detail.k_factor"),
        (A_GAME, {"detail__expected": 1.240253}, "detail.expected (one game's E: both players rated)"),
        (UNRATED_GAME, {"detail__expected": 0.5}, "detail.expected (one game's E: both players rated)"),
        (A_GAME, {"event_id": "g1/B"}, "event_id (not 'g1/A')"),
        (A_GAME, {"event_id": "period/T1/A/rapid"}, "event_id (a close makes no period_game event)"),
        (A_GAME, {"seq": 3}, "seq (differs from state.seq)"),
        # period_rating of a close: game fields null; every detail field set, its tournament the closed one.
        (A_CLOSE, {"game_id": "g1"}, "game fields"),
        (A_CLOSE, {"finished_at": "2026-11-10T12:00:00Z"}, "game fields"),
        (A_CLOSE, {"detail__tournament_id": None}, "detail.tournament_id"),
        (A_CLOSE, {"detail__k_modifier": None}, "detail.k_modifier"),
        (A_CLOSE, {"detail__k_modifier": 1.5}, "detail.k_modifier (differs from state.k_modifier)"),
        (A_CLOSE, {"detail__expected": None}, "detail.expected"),
        (A_CLOSE, {"rating_before": None, "delta": None}, "rating_before"),
        (A_CLOSE, {"delta": 15.19}, "delta"),
        (A_CLOSE, {"event_id": "period/T2/A/rapid"}, "event_id (not 'period/T1/A/rapid')"),
        (A_CLOSE, {"kind": "period_game"}, "event_id (a close makes no period_game event)"),
        (
            A_CLOSE,
            {"state__pending": [entry("T1", 1, 1.00, 0.240253, (1, 1.00, 2400))]},
            "state.pending (still holds the ended tournament)",
        ),
        # period_rating of a one-game event: game fields set (decided by the event id's form).
        (ONE_GAME, {"game_id": None, "source_event_id": None, "opponent_id": None}, "game fields"),
        (ONE_GAME, {"score": None, "finished_at": None}, "game fields"),
        (ONE_GAME, {"detail__k_factor": None}, "detail.k_factor"),
        # provisional_rating: its tournament (null for a game with none), games and points.
        (PROVISIONAL_CLOSE, {"detail__tournament_id": None}, "detail.tournament_id"),
        (PROVISIONAL_CLOSE, {"detail__k_factor": 40}, "detail.k_factor"),
        (PROVISIONAL_CLOSE, {"detail__games": None}, "detail.games"),
        (PROVISIONAL_CLOSE, {"game_id": "g1"}, "game fields"),
        (
            PROVISIONAL_CLOSE,
            {"rating_after": None, "state__rating": None, "state__performance_sum": None},
            "rating_after",
        ),
        (PROVISIONAL_GAME, {"game_id": None}, "game fields"),
        (PROVISIONAL_GAME, {"detail__expected": 0.640065}, "detail.expected"),
        (PROVISIONAL_GAME, {"event_id": "g2/E"}, "event_id (not 'g2/I')"),
        (A_CLOSE, {"kind": "provisional_rating"}, "detail.k_factor"),
        # period_closed: a close; the rating unchanged; games 0 and points 0.00.
        (CLOSED, {"detail__games": 1}, "detail.games/points (0 and 0.00: nothing counted)"),
        (CLOSED, {"detail__points": 0.5}, "detail.games/points (0 and 0.00: nothing counted)"),
        (CLOSED, {"detail__points": None}, "detail.points"),
        (CLOSED, {"detail__k_modifier": 1.0}, "detail.k_modifier"),
        (CLOSED, {"delta": None}, "delta"),
        (A_CLOSE, {"kind": "period_closed"}, "rating_after (differs from rating_before)"),
        (A_GAME, {"kind": "period_closed"}, "event_id (a game makes no period_closed event)"),
        # imported: a seeding; no detail field.
        (IMPORTED, {"detail__k_modifier": 1.0}, "detail.k_modifier"),
        (IMPORTED, {"detail__tournament_id": "T1"}, "detail.tournament_id"),
        (IMPORTED, {"event_id": "import/S/blitz/1"}, "event_id (not 'import/S/rapid/1')"),
        (IMPORTED, {"score": 1}, "game fields"),
        (IMPORTED, {"kind": "provisional_rating"}, "event_id (a seeding makes no provisional_rating event)"),
    ],
)
def test_fields_that_do_not_match_the_kind_are_refused(text: str, changes: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match="not as the contract sets them") as refused:
        TorneloRatingChanged.model_validate(changed(text, **changes))
    assert problem in problems_of(refused.value)


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        # Ratings are whole numbers, written with two decimals, never below 100.
        ({"rating_after": 1815.19, "state__rating": 1815.19, "delta": 15.19}, "whole number"),
        ({"rating_before": 1799.5, "delta": 15.5}, "whole number"),
        ({"rating_after": 99.0, "state__rating": 99.0, "delta": -1701.0}, "greater than or equal to 100"),
        # E has at most six decimals; a modifier is 0.01-10.00; K a positive integer.
        ({"detail__expected": 0.2402531}, "decimal places"),
        ({"detail__expected": -0.1}, "greater than or equal to 0"),
        ({"detail__k_modifier": 0.0, "state__k_modifier": 0.0}, "greater than or equal to 0.01"),
        ({"detail__k_modifier": 10.01, "state__k_modifier": 10.01}, "less than or equal to 10"),
        ({"detail__k_modifier": 1.005, "state__k_modifier": 1.005}, "decimal places"),
        ({"detail__k_factor": 0}, "greater than or equal to 1"),
        ({"detail__points": 0.25}, "multiple of 0.5"),
        ({"detail__tournament_id": "T/1", "event_id": "period/T/1/A/rapid"}, "pattern"),
        # The state's own rules.
        ({"state__performance_sum": 2400}, "performance_sum (an integer while rated with fewer than 20 games"),
        (
            {"rating_after": 2750.0, "state__rating": 2750.0, "delta": 950.0, "state__rated_games": 19},
            "performance_sum",
        ),
        (
            {
                "rating_after": 2750.0,
                "state__rating": 2750.0,
                "delta": 950.0,
                "state__rated_games": 19,
                "state__performance_sum": 52250,
            },
            "rating (a provisional rating is within 100-2700)",
        ),
        (
            {"state__pending": [entry("T2", 0, 0, 0, (0, 0, 0)), entry("T2", 1, 1, 0.5, (0, 0, 0))]},
            "pending (one entry per tournament)",
        ),
        ({"state__pending": [entry("T2", 1, 1.5, 0.5, (0, 0, 0))]}, "at most one a game"),
        ({"state__pending": [entry("T2", 1, 1, 1.5, (0, 0, 0))]}, "at most one a game"),
        ({"state__pending": [entry("T2", 0, 0, 0, (1, 1.5, 2400))]}, "at most one a game"),
        ({"state__pending": [entry("T2", 1, 1, 0.2402531, (0, 0, 0))]}, "decimal places"),
        ({"state__pending": [{**entry("T2", 0, 0, 0, (0, 0, 0)), "held": []}]}, "Extra inputs are not permitted"),
        ({"state__reached_2400": False}, "Extra inputs are not permitted"),
    ],
)
def test_values_outside_the_contracts_bounds_are_refused(changes: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError) as refused:
        TorneloRatingChanged.model_validate(changed(A_CLOSE, **changes))
    assert problem in str(refused.value)


def test_the_system_selects_the_shape() -> None:
    with pytest.raises(ValidationError):
        RATING_CHANGED_V2.validate_python(changed(A_CLOSE, system="fide"))  # a tornelo state is no fide state
    with pytest.raises(ValidationError):
        FideRatingChanged.model_validate_json(A_CLOSE)


def test_the_exported_schema_accepts_six_decimal_values() -> None:
    jsonschema = pytest.importorskip("jsonschema")  # the real validator: floats as a JSON consumer reads them
    schema = json.loads((SCHEMA_DIR / "arena.rating.changed.v2.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for text in (A_GAME, A_CLOSE, *HAND_WRITTEN.values()):
        assert list(validator.iter_errors(json.loads(text))) == [], text
    assert not validator.is_valid(changed(A_CLOSE, detail__k_modifier=0))


# --- seeding rows (docs/systems/tornelo.md, "Seeding rows"; example 19: refused rows) ----------


def seed(rating: Any, games: Any, modifier: Any = None) -> dict[str, Any]:
    row = {"player_id": "x", "category": "rapid", "rating": rating, "rated_games": games}
    return {**row, "k_modifier": None if modifier is None else Decimal(modifier)}


@pytest.mark.parametrize(
    "row",
    [
        seed(1600, 0),  # an arbiter's initial rating
        seed(100, 19),
        seed(2700, 19),
        seed(2750, 20),  # established: no ceiling
        seed(100, 40),
        seed(1800, 40, "0.01"),
        seed(1800, 40, "10.00"),
        seed(1800, 40, "1.5"),
    ],
)
def test_the_seeding_rows_the_contract_accepts(row: dict[str, Any]) -> None:
    record = TorneloSeedRecord.model_validate(row)
    assert (record.rating, record.rated_games, record.k_modifier) == (
        row["rating"],
        row["rated_games"],
        row["k_modifier"],
    )


@pytest.mark.parametrize(
    "row",
    [
        seed(2750, 5),  # a provisional 2750
        seed(2701, 19),
        seed(50, 5),  # a provisional 50
        seed(90, 40),  # an established 90
        seed(99, 0),
        seed(1800, 40, "0.00"),  # modifier 0.00
        seed(1800, 40, "10.01"),  # modifier 10.01
        seed(1800, 40, "1.005"),
        seed(1800.0, 40),  # an integer: digits only
        seed(Decimal(1800), 40),
        seed(1800, -1),
        seed(1800, "40"),
        {**seed(1800, 40), "category": "classical"},
        {**seed(1800, 40), "reached_2400": None},
    ],
)
def test_the_seeding_rows_the_contract_refuses(row: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        TorneloSeedRecord.model_validate(row)


def test_a_seeding_row_from_json() -> None:
    row = b'{"player_id":"x","category":"bullet","rating":%s,"rated_games":3,"k_modifier":%s}'
    assert TorneloSeedRecord.model_validate_json(row % (b"1500", b"1.50")).k_modifier == Decimal("1.5")
    assert TorneloSeedRecord.model_validate_json(row % (b"1500", b"null")).k_modifier is None
    for bad in (row % (b"1500.00", b"null"), row % (b"1500", b"0"), row % (b"2750", b"null")):
        with pytest.raises(ValidationError):
            TorneloSeedRecord.model_validate_json(bad)


# --- close lines (docs/systems/tornelo.md, "Input"; example 19: bad close lines) --------------


@pytest.mark.parametrize(
    ("line", "period"),
    [
        ('{"control":"close","period":"T1","by":"ops"}', "T1"),  # other keys are ignored
        ('{"control":"close","period":"' + "t" * 128 + '"}', "t" * 128),
    ],
)
def test_the_close_lines_the_contract_accepts(line: str, period: str) -> None:
    assert TorneloCloseLine.model_validate_json(line).period == period


@pytest.mark.parametrize(
    "line",
    [
        '{"control":"close","period":""}',
        '{"control":"close"}',
        '{"control":"close","period":"T/1"}',
        '{"control":"stop","period":"T1"}',
        '{"control":"Close","period":"T1"}',
        '{"control":"close","period":null}',
        '{"control":"close","period":1}',
        '{"control":"close","period":"' + "t" * 129 + '"}',
    ],
)
def test_the_close_lines_the_contract_refuses(line: str) -> None:
    with pytest.raises(ValidationError):
        TorneloCloseLine.model_validate_json(line)


# --- the game input's tournament_id (docs/systems/tornelo.md, "Input"; example 19: bad ids) ---


@pytest.mark.parametrize(
    ("fields", "tournament"), [({"tournament_id": "T1"}, "T1"), ({"tournament_id": None}, None), ({}, None)]
)
def test_a_game_names_its_tournament_or_none(fields: dict[str, Any], tournament: str | None) -> None:
    game = TorneloGameFinished.model_validate_json(json.dumps({**VALID_GAME, **fields}))
    assert (game.game_id, game.tournament_id) == ("g1", tournament)


@pytest.mark.parametrize(
    "fields", [{"tournament_id": "bad/id"}, {"tournament_id": 7}, {"tournament_id": ""}, {"control": "close"}]
)
def test_a_game_with_a_bad_tournament_id_or_a_control_key_is_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        TorneloGameFinished.model_validate_json(json.dumps({**VALID_GAME, **fields}))


def test_the_exported_input_schema_states_the_tournament_id() -> None:
    schema = json.loads((SCHEMA_DIR / "arena.game.finished.v1.tornelo.schema.json").read_text())
    assert "tournament_id" not in schema["required"]
    assert {"pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$", "type": "string"} in schema["properties"]["tournament_id"][
        "anyOf"
    ]
