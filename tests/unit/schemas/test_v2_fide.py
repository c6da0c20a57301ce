"""Contract v2's models for `fide`: the contract's example events validate through the one v2
schema (`system` selects the shape), and so does an event of every kind written from the kinds
table; events whose fields do not match their kind are refused; the seeding row and the close line
hold the contract's constraints (docs/contract-v2.md; docs/systems/fide.md;
examples 5, 7, 8, 13 and 17, numbered as in the comments below)."""

import json
from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from schemas.close_line import FideCloseLine
from schemas.export import SCHEMA_DIR
from schemas.rating_changed_periods import FideRatingChanged, TorneloRatingChanged
from schemas.rating_changed_v2 import RATING_CHANGED_V2
from schemas.seed_record_fide import FideSeedRecord

# The contract's fide example (docs/systems/fide.md, "State and events, with an example"): A's period_game,
# then A's close.
A_GAME = (
    '{"event_id":"g1/A","system":"fide","game_id":"g1","source_event_id":"e-g1","player_id":"A","opponent_id":"B",'
    '"category":"blitz","kind":"period_game","score":1,"rating_before":2000.00,"rating_after":2000.00,'
    '"display_before":2000,"display_after":2000,"delta":0.00,"seq":2,"state":{"rating":2000.00,"rated_games":40,'
    '"seq":2,"reached_2400":false,"birth_year":null,"closed_period":null,"rating_before_close":null,'
    '"pending":[{"period":"2026-11","games":1,"points":1.00,"expected":0.64,"ratings":1900.00,"held":[]}],'
    '"initial":[]},"finished_at":"2026-11-10T12:00:00Z","detail":{"period":"2026-11","games":null,"points":null,'
    '"expected":null,"k_factor":null}}'
)
A_CLOSE = (
    '{"event_id":"period/2026-11/A/blitz","system":"fide","game_id":null,"source_event_id":null,"player_id":"A",'
    '"opponent_id":null,"category":"blitz","kind":"period_rating","score":null,"rating_before":2000.00,'
    '"rating_after":2007.00,"display_before":2000,"display_after":2007,"delta":7.00,"seq":3,"state":{"rating":2007.00,'
    '"rated_games":41,"seq":3,"reached_2400":false,"birth_year":null,"closed_period":"2026-11",'
    '"rating_before_close":2000.00,"pending":[],"initial":[]},"finished_at":null,"detail":{"period":"2026-11",'
    '"games":1,"points":1.00,"expected":0.64,"k_factor":20}}'
)
# The same period_game without October's close: the game is held (the contract's text under the example).
COUNTED = '"pending":[{"period":"2026-11","games":1,"points":1.00,"expected":0.64,"ratings":1900.00,"held":[]}]'
HELD = (
    '"pending":[{"period":"2026-11","games":0,"points":0.00,"expected":0.00,"ratings":0.00,'
    '"held":[{"opponent_id":"B","score":1}]}]'
)
A_GAME_HELD = A_GAME.replace(COUNTED, HELD)


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


def test_the_contracts_example_events_validate_as_fide_events() -> None:
    assert A_GAME_HELD != A_GAME
    for text in (A_GAME, A_CLOSE, A_GAME_HELD):
        assert isinstance(RATING_CHANGED_V2.validate_json(text), FideRatingChanged)
    close = FideRatingChanged.model_validate_json(A_CLOSE)
    assert (close.rating_after, close.delta, close.detail.k_factor) == (Decimal(2007), Decimal(7), 20)
    held = FideRatingChanged.model_validate_json(A_GAME_HELD).state.pending[0]
    assert (held.games, held.held[0].opponent_id, held.held[0].score) == (0, "B", Decimal(1))


def state(rating: float | None, rated_games: int, seq: int, **fields: Any) -> dict[str, Any]:
    return {
        "rating": rating,
        "rated_games": rated_games,
        "seq": seq,
        "reached_2400": fields.get("reached_2400", False),
        "birth_year": None,
        "closed_period": fields.get("closed_period"),
        "rating_before_close": fields.get("rating_before_close"),
        "pending": fields.get("pending", []),
        "initial": fields.get("initial", []),
    }


def detail(period: str | None, games: int | None = None, points: float | None = None, **rated: Any) -> dict[str, Any]:
    return {"period": period, "games": games, "points": points, "expected": None, "k_factor": None, **rated}


def close(player: str, kind: str, before: float | None, after: float | None, seq: int, **fields: Any) -> str:
    """A close event of November 2026 (game fields null), as the kinds table sets them."""
    both = before is not None and after is not None
    event = changed(
        A_CLOSE,
        event_id=f"period/2026-11/{player}/blitz",
        player_id=player,
        kind=kind,
        rating_before=before,
        rating_after=after,
        display_before=1200 if before is None else int(before),
        display_after=1200 if after is None else int(after),
        delta=after - before if both else None,  # type: ignore[operator]
        seq=seq,
        **fields,
    )
    return json.dumps(event)


# One event of every kind, from the kinds table (docs/systems/fide.md, "State and events, with an example")
# and fide's worked examples (numbered as below).
HAND_WRITTEN = {
    # Example 8: A 1405 loses to B 1405: -10 -> 1395, below 1400: lost.
    "rating_lost": close(
        "A",
        "rating_lost",
        1405.00,
        None,
        3,
        state=state(None, 0, 3, closed_period="2026-11", rating_before_close=1405.00),
        detail=detail("2026-11", 1, 0.00, expected=0.50, k_factor=20),
    ),
    # Example 7a: U's pool of 5 games, 3 points: Ru 1779, the pool emptied.
    "first_rating": close(
        "U",
        "first_rating",
        None,
        1779.00,
        6,
        state=state(1779.00, 5, 6, closed_period="2026-11"),
        detail=detail("2026-11", 5, 3.00),
    ),
    # Example 7b, November: four games pooled, no rating yet.
    "period_closed (unrated)": close(
        "U",
        "period_closed",
        None,
        None,
        5,
        state=state(
            None,
            0,
            5,
            closed_period="2026-11",
            initial=[{"period": "2026-11", "games": 4, "points": 2.00, "ratings": 6600.00}],
        ),
        detail=detail("2026-11", 4, 2.00),
    ),
    # Example 5: 2601 and 2001, 600 apart: not rated, games 0.
    "period_closed (rated)": close(
        "A",
        "period_closed",
        2601.00,
        2601.00,
        3,
        state=state(2601.00, 40, 3, reached_2400=True, closed_period="2026-11", rating_before_close=2601.00),
        detail=detail("2026-11", 0, 0.00),
    ),
    # Example 7: U records a game while unrated (held: no month is closed yet).
    "period_game (unrated)": json.dumps(
        changed(
            A_GAME_HELD,
            event_id="g1/U",
            player_id="U",
            rating_before=None,
            rating_after=None,
            display_before=1200,
            display_after=1200,
            delta=None,
            seq=1,
            state=state(None, 0, 1, pending=json.loads("{" + HELD + "}")["pending"]),
        )
    ),
    # Seeding a new rating: every detail field null.
    "imported": json.dumps(
        changed(
            A_CLOSE,
            event_id="import/A/blitz/1",
            kind="imported",
            rating_before=None,
            rating_after=2000.00,
            display_before=1200,
            display_after=2000,
            delta=None,
            seq=1,
            state=state(2000.00, 40, 1),
            detail=detail(None),
        )
    ),
    # Example 17: A seeded (forced) at 2100 after his close keeps closed_period and rating_before_close.
    "imported (over a rating)": json.dumps(
        changed(
            A_CLOSE,
            event_id="import/A/blitz/4",
            kind="imported",
            rating_after=2100.00,
            display_after=2100,
            delta=100.00,
            seq=4,
            state=state(2100.00, 40, 4, closed_period="2026-11", rating_before_close=2000.00),
            detail=detail(None),
        )
    ),
    # A switch-over of a rating that is unrated in the rebuild.
    "imported (unrated)": json.dumps(
        changed(
            A_CLOSE,
            event_id="import/U/blitz/2",
            player_id="U",
            kind="imported",
            rating_before=None,
            rating_after=None,
            display_before=1200,
            display_after=1200,
            delta=None,
            seq=2,
            state=state(None, 0, 2),
            detail=detail(None),
        )
    ),
}


@pytest.mark.parametrize("name", list(HAND_WRITTEN))
def test_an_event_of_every_kind_validates(name: str) -> None:
    event = RATING_CHANGED_V2.validate_json(HAND_WRITTEN[name])
    assert isinstance(event, FideRatingChanged)
    assert event.kind == name.split(" ", maxsplit=1)[0]


@pytest.mark.parametrize(
    ("text", "changes", "problem"),
    [
        # period_game: a game, recorded; the rating unchanged; only detail.period set.
        (
            A_GAME,
            {"rating_after": 2001.0, "state__rating": 2001.0, "delta": 1.0},
            "rating_after (differs from rating_before)",
        ),
        (A_GAME, {"rating_after": 2001.0}, "rating_after (differs from state.rating)"),
        (A_GAME, {"delta": None}, "delta"),
        (A_GAME, {"game_id": None}, "game fields"),
        (A_GAME, {"finished_at": None}, "game fields"),
        (A_GAME, {"detail__period": None}, "detail.period"),
        (A_GAME, {"detail__games": 1}, "detail.games"),
        (A_GAME, {"detail__k_factor": 20}, "detail.k_factor"),
        (A_GAME, {"detail__period": "2026-12"}, "state.pending (no entry of detail.period)"),
        (A_GAME, {"event_id": "g2/A"}, "event_id (not 'g1/A')"),
        (A_GAME, {"event_id": "period/2026-11/A/blitz"}, "event_id (a close makes no period_game event)"),
        (A_GAME, {"seq": 3}, "seq (differs from state.seq)"),
        (A_GAME, {"kind": "period_closed"}, "event_id (a game makes no period_closed event)"),
        # period_rating: a close; game fields null; every detail field set; the close in the state.
        (A_CLOSE, {"game_id": "g1"}, "game fields"),
        (A_CLOSE, {"score": 1}, "game fields"),
        (A_CLOSE, {"detail__k_factor": None}, "detail.k_factor"),
        (A_CLOSE, {"detail__expected": None}, "detail.expected"),
        (A_CLOSE, {"delta": 7.5}, "delta"),
        (A_CLOSE, {"rating_before": None, "delta": None}, "rating_before"),
        (A_CLOSE, {"event_id": "period/2026-10/A/blitz"}, "event_id (not 'period/2026-11/A/blitz')"),
        (A_CLOSE, {"event_id": "period/2026-11/A/rapid"}, "event_id (not 'period/2026-11/A/blitz')"),
        (
            A_CLOSE,
            {"state__closed_period": "2026-10"},
            "state.closed_period/rating_before_close (differ from the close)",
        ),
        (
            A_CLOSE,
            {"state__rating_before_close": 2007.0},
            "state.closed_period/rating_before_close (differ from the close)",
        ),
        (
            A_CLOSE,
            {
                "state__pending": [
                    {"period": "2026-11", "games": 0, "points": 0, "expected": 0, "ratings": 0, "held": []}
                ]
            },
            "state.pending (still holds the closed month)",
        ),
        # The other close kinds.
        (A_CLOSE, {"kind": "rating_lost"}, "rating_after"),
        (A_CLOSE, {"kind": "first_rating"}, "rating_before"),
        (A_CLOSE, {"kind": "first_rating"}, "detail.expected"),
        (A_CLOSE, {"kind": "period_closed"}, "rating_after (differs from rating_before)"),
        (A_CLOSE, {"kind": "period_closed"}, "detail.k_factor"),
        (A_CLOSE, {"kind": "imported"}, "event_id (a close makes no imported event)"),
        (HAND_WRITTEN["first_rating"], {"detail__k_factor": 40}, "detail.k_factor"),
        (HAND_WRITTEN["rating_lost"], {"detail__games": None}, "detail.games"),
        (HAND_WRITTEN["period_closed (unrated)"], {"detail__points": None}, "detail.points"),
        # imported: a seeding; no detail field; its event id names its seq.
        (HAND_WRITTEN["imported"], {"detail__period": "2026-11"}, "detail.period"),
        (HAND_WRITTEN["imported"], {"event_id": "import/A/blitz/2"}, "event_id (not 'import/A/blitz/1')"),
        (HAND_WRITTEN["imported"], {"opponent_id": "B"}, "game fields"),
        (HAND_WRITTEN["imported"], {"kind": "period_rating"}, "event_id (a seeding makes no period_rating event)"),
    ],
)
def test_fields_that_do_not_match_the_kind_are_refused(text: str, changes: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match="not as the contract sets them") as refused:
        FideRatingChanged.model_validate(changed(text, **changes))
    assert problem in problems_of(refused.value)


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        # Ratings are whole numbers, written with two decimals; below 1400 a rating is lost.
        ({"rating_after": 2007.5, "state__rating": 2007.5, "delta": 7.5}, "whole number"),
        ({"rating_before": 1999.99, "delta": 7.01}, "whole number"),
        ({"state__rating_before_close": 2000.5, "rating_before": 2000.5, "delta": 6.5}, "whole number"),
        ({"rating_after": 1399.0, "state__rating": 1399.0, "delta": -601.0}, "greater than or equal to 1400"),
        ({"detail__k_factor": 41}, "less than or equal to 40"),
        ({"detail__points": 0.75}, "multiple of 0.5"),
        ({"detail__expected": 0.645}, "decimal places"),
        ({"detail__period": "2026-13", "state__closed_period": "2026-13"}, "pattern"),
        ({"state__birth_year": 999}, "greater than or equal to 1000"),
        ({"state__reached_2400": "maybe"}, "valid boolean"),
        # The state's own rules.
        (
            {"rating_after": 2400.0, "state__rating": 2400.0, "delta": 400.0, "display_after": 2400},
            "reached_2400 (set by a rating of 2400 or more",
        ),
        ({"rating_after": None, "state__rating": None, "delta": None, "state__reached_2400": True}, "reached_2400"),
        ({"state__closed_period": None, "detail__period": None}, "rating_before_close (null while closed_period is)"),
        (
            {"state__initial": [{"period": "2026-11", "games": 4, "points": 2.0, "ratings": 6600.0}]},
            "initial (a rated player has no pool)",
        ),
        (
            {
                "state__pending": [
                    {"period": "2027-01", "games": 0, "points": 0, "expected": 0, "ratings": 0, "held": []},
                    {"period": "2026-12", "games": 0, "points": 0, "expected": 0, "ratings": 0, "held": []},
                ]
            },
            "pending (one entry per month, oldest first)",
        ),
        (
            {
                "state__pending": [
                    {"period": "2026-12", "games": 1, "points": 1.5, "expected": 0.5, "ratings": 1900, "held": []}
                ]
            },
            "at most one a game",
        ),
        (
            {
                "state__pending": [
                    {"period": "2026-12", "games": 1, "points": 1, "expected": 0.5, "ratings": 1900.5, "held": []}
                ]
            },
            "whole number",
        ),
        (
            {
                "state__pending": [
                    {
                        "period": "2026-12",
                        "games": 0,
                        "points": 0,
                        "expected": 0,
                        "ratings": 0,
                        "held": [{"opponent_id": "B", "score": 2}],
                    }
                ]
            },
            "a score is 1, 0.5 or 0",
        ),
        ({"state__pending": [{"period": "2026-12", "games": 0}]}, "Field required"),
        ({"state__pool": []}, "Extra inputs are not permitted"),
    ],
)
def test_values_outside_the_contracts_bounds_are_refused(changes: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError) as refused:
        FideRatingChanged.model_validate(changed(A_CLOSE, **changes))
    assert problem in str(refused.value)


@pytest.mark.parametrize(
    ("pool", "problem"),
    [
        (
            [{"period": "2026-11", "games": 4, "points": 2.0, "ratings": 6600.0}] * 2,
            "initial (one entry per month, oldest first)",
        ),
        ([{"period": "2026-11", "games": 1, "points": 1.5, "ratings": 1800.0}], "at most one a game"),
        ([{"period": "2026-11", "games": 0, "points": 0.0, "ratings": 0.0}], "greater than or equal to 1"),
    ],
)
def test_an_unrated_players_pool_outside_the_contract_is_refused(pool: list[dict[str, Any]], problem: str) -> None:
    unrated = HAND_WRITTEN["period_closed (unrated)"]
    assert FideRatingChanged.model_validate_json(unrated).state.initial[0].games == 4
    with pytest.raises(ValidationError) as refused:
        FideRatingChanged.model_validate(changed(unrated, state__initial=pool))
    assert problem in str(refused.value)


def test_the_system_selects_the_shape() -> None:
    with pytest.raises(ValidationError):
        RATING_CHANGED_V2.validate_python(changed(A_CLOSE, system="tornelo"))  # a fide state is no tornelo state
    with pytest.raises(ValidationError):
        TorneloRatingChanged.model_validate_json(A_CLOSE)


def test_the_exported_schema_accepts_the_events_and_refuses_a_fractional_rating() -> None:
    jsonschema = pytest.importorskip("jsonschema")  # the real validator: floats as a JSON consumer reads them
    schema = json.loads((SCHEMA_DIR / "arena.rating.changed.v2.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for text in (A_GAME, A_CLOSE, A_GAME_HELD, *HAND_WRITTEN.values()):
        assert list(validator.iter_errors(json.loads(text))) == [], text
    assert not validator.is_valid(changed(A_CLOSE, rating_after=2007.5, state__rating=2007.5, delta=7.5))


# --- seeding rows ---------------------------------------------------------------------------


def seed(rating: Any = 1800, games: Any = 40, reached: Any = None, birth_year: Any = None) -> dict[str, Any]:
    return {
        "player_id": "x",
        "category": "blitz",
        "rating": rating,
        "rated_games": games,
        "reached_2400": reached,
        "birth_year": birth_year,
    }


@pytest.mark.parametrize(
    "row",
    [
        seed(1400, 0),
        seed(1800, 40, False, 2008),
        seed(1800, 40, True),  # reached 2400 before, under it now (K 10 stays)
        seed(2400, 40, None),  # empty: 2400 or more has reached it
        seed(2450, 100, True, 1000),
        seed(2000, 0, None, 9999),
    ],
)
def test_the_seeding_rows_the_contract_accepts(row: dict[str, Any]) -> None:
    record = FideSeedRecord.model_validate(row)
    assert (record.rating, record.reached_2400, record.birth_year) == (
        row["rating"],
        row["reached_2400"],
        row["birth_year"],
    )


@pytest.mark.parametrize(
    "row",
    [
        seed(1399),
        seed(1800.0),  # an integer: digits only
        seed(Decimal("1800.00")),
        seed("1800"),
        seed(True),
        seed(1800, -1),
        seed(1800, 1.0),
        seed(2400, 40, False),  # false with a rating of 2400 or more
        seed(2500, 40, False),
        seed(1800, 40, "true"),
        seed(1800, 40, None, 999),
        seed(1800, 40, None, 10000),
        seed(1800, 40, None, "2008"),
        {**seed(), "category": "correspondence"},
        {**seed(), "player_id": "a/b"},
        {**seed(), "k_modifier": None},
    ],
)
def test_the_seeding_rows_the_contract_refuses(row: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        FideSeedRecord.model_validate(row)


def test_a_seeding_row_from_json_takes_digits_only() -> None:
    row = b'{"player_id":"x","category":"rapid","rating":%s,"rated_games":3,"reached_2400":null,"birth_year":2008}'
    assert FideSeedRecord.model_validate_json(row % b"1800").rating == 1800
    with pytest.raises(ValidationError):
        FideSeedRecord.model_validate_json(row % b"1800.00")


# --- close lines (docs/systems/fide.md, "Input") ---------------------------------------------


@pytest.mark.parametrize(
    ("line", "period"),
    [
        ('{"control":"close","period":"9999-11"}', "9999-11"),
        ('{"control":"close","period":"0000-01"}', "0000-01"),
        ('{"control":"close","period":"2026-11","by":"ops"}', "2026-11"),  # other keys are ignored
    ],
)
def test_the_close_lines_the_contract_accepts(line: str, period: str) -> None:
    assert FideCloseLine.model_validate_json(line).period == period


@pytest.mark.parametrize(
    "line",
    [
        '{"control":"close","period":"9999-12"}',  # no month follows it
        '{"control":"close","period":"2026-11 "}',
        '{"control":"close","period":"2026-11\\n"}',
        '{"control":"Close","period":"2026-11"}',
        '{"control":"close"}',
        '{"control":"close","period":"2026-13"}',
        '{"control":"close","period":"2026-00"}',
        '{"control":"close","period":"26-11"}',
        '{"control":"close","period":"2026-11-01"}',
        '{"control":"close","period":202611}',
        '{"control":"stop","period":"2026-11"}',
        '{"period":"2026-11"}',
    ],
)
def test_the_close_lines_the_contract_refuses(line: str) -> None:
    with pytest.raises(ValidationError):
        FideCloseLine.model_validate_json(line)


def test_the_exported_close_line_schema_refuses_the_last_month_too() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(json.loads((SCHEMA_DIR / "close-line.fide.schema.json").read_text()))
    assert validator.is_valid({"control": "close", "period": "9999-11", "by": "ops"})
    for refused in ({"control": "close", "period": "9999-12"}, {"control": "Close", "period": "2026-11"}):
        assert not validator.is_valid(refused)
