"""`RATING_SYSTEM=glicko2 rating-worker rate`, run as a user runs it: a real process, real files
(docs/systems/glicko2.md: "Input", "State and events, with an example", "Seeding rows"; W7, the
checks of finished_at, W8, seeding rows, and W9, the contract's example, as numbered below)."""

import json
import re
from pathlib import Path
from typing import Any

import pytest

from schemas.rating_changed_v2 import Glicko2RatingChanged
from tests.support.contract import VALID_GAME
from tests.support.rate import rate
from tests.support.systems import dead_letters_of
from tests.support.v2_examples import CONTRACT_GLICKO2

HEADER = "player_id,category,rating,rated_games,deviation,volatility\n"
AT = "2026-11-29T12:00:00Z"
# bob's event of the contract's example, written from its text (1262.86, -237.14, display 1263,
# expected_score 0.49) and W1 (bob's RD and sigma are alice's).
BOB_G1 = (
    b'{"event_id":"g1/bob","system":"glicko2","game_id":"g1","source_event_id":"ev-1","player_id":"bob",'
    b'"opponent_id":"alice","category":"blitz","kind":"rated_game","score":0,"rating_before":1500.00,'
    b'"rating_after":1262.86,"display_before":1500,"display_after":1263,"delta":-237.14,"seq":1,'
    b'"state":{"rating":1262.86,"rated_games":1,"seq":1,"deviation":396.71,"volatility":0.089998199,'
    b'"last_rated_at":"2026-11-29T12:00:00Z"},"finished_at":"2026-11-29T12:00:00Z",'
    b'"detail":{"expected_score":0.49,"deviation_before":500.00,"deviation_after":396.71,'
    b'"volatility_before":0.090000000,"volatility_after":0.089998199}}'
)


def line(**changes: Any) -> str:
    """The contract's valid game (g1, ev-1, 3+0: alice, white, beats bob) at W1's instant, varied."""
    return json.dumps({**VALID_GAME, "finished_at": AT, **changes})


def test_the_contracts_example_end_to_end(tmp_path: Path) -> None:
    """W9: carol seeded, then g1 between two new players; the seeding row's event first."""
    seed, games = tmp_path / "seed.csv", tmp_path / "games.jsonl"
    seed.write_text(HEADER + "carol,blitz,2100.00,120,60.00,0.06\n")
    games.write_text(line() + "\n")
    out, dlq = tmp_path / "out.jsonl", tmp_path / "dlq.jsonl"
    done = rate(games, "--seed", seed, "--out", out, "--dlq", dlq, system="glicko2")
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == b"".join(e + b"\n" for e in (*CONTRACT_GLICKO2, BOB_G1))
    assert dlq.read_bytes() == b""
    assert b"1 ratings seeded" in done.stderr
    assert b"1 valid games: 1 applied" in done.stderr


def bad_lines() -> list[tuple[dict[str, Any], str]]:
    """(message, what its dead letter must name); each with players of its own (badNw, badNb)."""
    values: list[tuple[dict[str, Any], str]] = [
        ({"finished_at": "0000-01-01T00:10:00+01:00"}, "finished_at"),  # W7: before the year 0000 in UTC
        ({"finished_at": "9999-12-31T23:30:00-01:00"}, "finished_at"),  # W7: after the year 9999 in UTC
        ({"control": "x"}, "control"),  # a whole valid game, plus a control key
        ({"control": None}, "control"),
        ({"control": "close", "period": "2026-11"}, "control"),
    ]
    out = []
    for i, (changes, named) in enumerate(values):
        game = {**VALID_GAME, "finished_at": AT, "game_id": f"b{i}", "white_id": f"bad{i}w", "black_id": f"bad{i}b"}
        out.append(({**game, **changes}, named))
    # Control lines without game fields: never a game of glicko2 (docs/systems/glicko2.md, "Input").
    out.append(({"control": "close", "period": "2026-11"}, "control"))
    out.append(({"control": "x"}, "control"))
    return out


def test_bad_input_gets_a_clear_dead_letter_and_changes_nothing(tmp_path: Path) -> None:
    bad = bad_lines()
    lines = [line()]  # line 1: alice beats bob
    lines += [json.dumps(value) for value, _ in bad]  # lines 2 ... len(bad) + 1
    # A bad line is not recorded: its game_id, sent again valid, is a new game (bob and alice).
    lines.append(line(game_id="b0", event_id="ev-b0", white_id="bob", black_id="alice"))
    games, out, dlq = tmp_path / "games.jsonl", tmp_path / "out.jsonl", tmp_path / "dlq.jsonl"
    games.write_text("\n".join(lines) + "\n")
    done = rate(games, "--out", out, "--dlq", dlq, system="glicko2")
    assert done.returncode == 0, done.stderr

    dead_letters_of(dlq, bad, first_line=2)

    events = [Glicko2RatingChanged.model_validate_json(e) for e in out.read_bytes().splitlines()]
    assert [(e.game_id, e.player_id, e.kind, e.seq) for e in events] == [
        ("g1", "alice", "rated_game", 1),
        ("g1", "bob", "rated_game", 1),
        ("b0", "bob", "rated_game", 2),
        ("b0", "alice", "rated_game", 2),
    ]
    assert {e.player_id for e in events} | {e.opponent_id for e in events} == {"alice", "bob"}
    stderr = done.stderr.decode()
    assert f"rate: {len(lines)} lines (0 blank)" in stderr
    assert "rate: 2 valid games: 2 applied" in stderr
    assert f"rate: {len(bad)} dead-lettered (invalid_schema {len(bad)})" in stderr


def test_rate_makes_no_future_check_and_takes_the_first_and_last_instants(tmp_path: Path) -> None:
    """A line of `rate`'s input has no record timestamp: a game dated 2999 is rated (section 5);
    W7's valid instants at the ends of the years 0000-9999 are rated."""
    stamps = ["2999-01-01T00:00:00Z", "0000-01-01T00:00:00Z", "0000-01-01T00:10:00-01:00", "9999-12-31T23:59:60Z"]
    lines = [
        line(game_id=f"t{i}", event_id=f"ev-t{i}", white_id=f"t{i}w", black_id=f"t{i}b", finished_at=at)
        for i, at in enumerate(stamps)
    ]
    games, out, dlq = tmp_path / "games.jsonl", tmp_path / "out.jsonl", tmp_path / "dlq.jsonl"
    games.write_text("\n".join(lines) + "\n")
    done = rate(games, "--out", out, "--dlq", dlq, system="glicko2")
    assert done.returncode == 0, done.stderr
    assert dlq.read_bytes() == b""
    events = [Glicko2RatingChanged.model_validate_json(e) for e in out.read_bytes().splitlines()]
    assert [(e.player_id, e.finished_at, e.state.last_rated_at) for e in events] == [
        (f"t{i}{side}", at, at) for i, at in enumerate(stamps) for side in "wb"
    ]
    # Two new players, white wins: W1's numbers, whatever the instant.
    assert [str(e.rating_after) for e in events] == ["1737.14", "1262.86"] * len(stamps)


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ("x,blitz,399.99,0,,", "rating"),
        ("x,blitz,1800.,0,,", "rating"),
        ("x,blitz,+1800,0,,", "rating"),
        ("x,blitz,1800,0,44.99,0.06", "deviation"),
        ("x,blitz,1800,0,500.01,0.06", "deviation"),
        ("x,blitz,1800,0,60,0", "volatility"),
        ("x,blitz,1800,0,60,0.100000001", "volatility"),
        ("x,blitz,1800,0,60,0.0600000001", "volatility"),
        ("x,blitz,1800,0,60,0.0000000001", "volatility"),
        ("x,blitz,1800,0,60,", "deviation"),
        ("x,blitz,1800,0,,0.06", "deviation"),
        ("x,blitz,1800,5,,", "deviation"),
        ("x,correspondence,1800,0,,", "category"),
        ("carol,blitz,1800,0,,", "twice"),
    ],
)
def test_a_bad_seeding_row_refuses_the_whole_file_and_writes_nothing(tmp_path: Path, row: str, field: str) -> None:
    seed = tmp_path / "seed.csv"
    seed.write_text(HEADER + "carol,blitz,2100.00,120,60.00,0.06\n" + row + "\nbob,rapid,1400,0,,\n")
    assert_refused(tmp_path, seed, 3, field)


def test_another_systems_header_is_refused(tmp_path: Path) -> None:
    seed = tmp_path / "seed.csv"
    seed.write_text("player_id,category,rating,rated_games\nalice,blitz,1800,40\n")
    assert_refused(tmp_path, seed, 1, "header")


def assert_refused(tmp_path: Path, seed: Path, number: int, field: str) -> None:
    """Status 2, one line naming the file, the row's line and the field; no output at all."""
    games, out, dlq = tmp_path / "games.jsonl", tmp_path / "out.jsonl", tmp_path / "dlq.jsonl"
    games.write_text(line() + "\n")
    done = rate(games, "--seed", seed, "--out", out, "--dlq", dlq, system="glicko2")
    assert done.returncode == 2, done.stderr
    stderr = done.stderr.decode()
    assert stderr.count("\n") == 1, stderr
    assert re.search(rf"{re.escape(str(seed))}(:| line ){number}\b", stderr), stderr
    assert field in stderr, stderr
    assert not out.exists() and not dlq.exists()
