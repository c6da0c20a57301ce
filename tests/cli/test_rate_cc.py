"""`RATING_SYSTEM=uscf-cc rating-worker rate`, run as a user runs it: a real process, real files
(docs/systems/uscf-cc.md: "Input", "State and events, with an example", "Seeding rows")."""

import json
import re
from pathlib import Path
from typing import Any

import pytest

from schemas.rating_changed_v2 import CcRatingChanged
from tests.support.contract import VALID_GAME
from tests.support.rate import rate
from tests.support.systems import dead_letters_of
from tests.support.v2_examples import CONTRACT_USCF_CC

HEADER = "player_id,category,rating,rated_games\n"
SEED = HEADER + "alice,correspondence,1600.00,40\nbob,correspondence,1400,10\n"
# bob's import, written from the contract's table (the example's alice import with bob's row).
BOB_IMPORTED = (
    b'{"event_id":"import/bob/correspondence/1","system":"uscf-cc","game_id":null,"source_event_id":null,'
    b'"player_id":"bob","opponent_id":null,"category":"correspondence","kind":"imported","score":null,'
    b'"rating_before":null,"rating_after":1400.00,"display_before":1200,"display_after":1400,"delta":null,'
    b'"seq":1,"state":{"rating":1400.00,"rated_games":10,"seq":1},"finished_at":null,"detail":{"k_factor":null}}'
)


def line(**changes: Any) -> str:
    """The contract's valid game (g1, ev-1: alice, white, beats bob), varied field by field."""
    return json.dumps({**VALID_GAME, **changes})


def test_the_contracts_example_end_to_end(tmp_path: Path) -> None:
    """Example 42: alice and bob seeded, then g1; the seeding rows' events first, in file order."""
    seed, games = tmp_path / "seed.csv", tmp_path / "games.jsonl"
    seed.write_text(SEED)
    games.write_text(line(finished_at="2026-11-29T12:00:00Z") + "\n")
    out, dlq = tmp_path / "out.jsonl", tmp_path / "dlq.jsonl"
    done = rate(games, "--seed", seed, "--out", out, "--dlq", dlq, system="uscf-cc")
    assert done.returncode == 0, done.stderr
    alice_imported, alice_g1, bob_g1 = CONTRACT_USCF_CC
    assert out.read_bytes() == b"".join(e + b"\n" for e in (alice_imported, BOB_IMPORTED, alice_g1, bob_g1))
    assert dlq.read_bytes() == b""
    assert b"2 ratings seeded" in done.stderr
    assert b"1 valid games: 1 applied" in done.stderr


KINDS: list[object] = ["Special", "quitter", "", None, 1, ["special"]]


def bad_lines() -> list[tuple[dict[str, Any], str]]:
    """(message, what its dead letter must name); each with players of its own (badNw, badNb)."""
    values: list[tuple[dict[str, Any], str]] = []
    for kind in KINDS:  # examples 35 and 36: whatever the termination
        for termination in ("forfeit", "resignation"):
            values.append(({"termination": termination, "forfeit_kind": kind}, "forfeit_kind"))
    values.append(({"termination": "forfeit", "forfeit_kind": "special", "result": "1/2-1/2"}, "special"))  # ex. 40
    values.append(({"control": "x"}, "control"))  # a whole valid game, plus a control key
    out = []
    for i, (changes, named) in enumerate(values):
        game = {**VALID_GAME, "game_id": f"b{i}", "white_id": f"bad{i}w", "black_id": f"bad{i}b", **changes}
        out.append((game, named))
    # A close line: never a game of uscf-cc (docs/systems/uscf-cc.md, "Input": an object with a `control` key).
    out.append(({"control": "close", "period": "2026-11"}, "control"))
    return out


def test_bad_input_gets_a_clear_dead_letter_and_changes_nothing(tmp_path: Path) -> None:
    bad = bad_lines()
    lines = [line(game_id="g1", white_id="alice", black_id="bob")]  # line 1: both unrated
    lines += [json.dumps(value) for value, _ in bad]  # lines 2 ... len(bad) + 1
    # A bad line is not recorded: its game_id, sent again valid, is a new game (alice and bob).
    lines.append(line(game_id="b0", event_id="ev-b0", white_id="bob", black_id="alice"))
    games, out, dlq = tmp_path / "games.jsonl", tmp_path / "out.jsonl", tmp_path / "dlq.jsonl"
    games.write_text("\n".join(lines) + "\n")
    done = rate(games, "--out", out, "--dlq", dlq, system="uscf-cc")
    assert done.returncode == 0, done.stderr

    letters = dead_letters_of(dlq, bad, first_line=2)
    drawn = letters[len(KINDS) * 2]["error_message"]
    assert "winner" in drawn or "1/2-1/2" in drawn or "result" in drawn, drawn

    events = [CcRatingChanged.model_validate_json(e) for e in out.read_bytes().splitlines()]
    assert [(e.game_id, e.player_id, e.kind) for e in events] == [
        ("g1", "alice", "first_rating"),  # example 19: 1700.00 / 1300.00
        ("g1", "bob", "first_rating"),
        ("b0", "bob", "rated_game"),
        ("b0", "alice", "rated_game"),
    ]
    assert {e.player_id for e in events} | {e.opponent_id for e in events} == {"alice", "bob"}
    stderr = done.stderr.decode()
    assert f"rate: {len(lines)} lines (0 blank)" in stderr
    assert "rate: 2 valid games: 2 applied" in stderr
    assert f"rate: {len(bad)} dead-lettered (invalid_schema {len(bad)})" in stderr


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ("x,correspondence,1800.,5", "rating"),
        ("x,correspondence,+1800,5", "rating"),
        ("x,correspondence, 1800,5", "rating"),
        ("x,correspondence,1e3,5", "rating"),
        ("x,correspondence,1800,0", "rated_games"),
    ],
)
def test_a_bad_seeding_row_refuses_the_whole_file_and_writes_nothing(tmp_path: Path, row: str, field: str) -> None:
    seed = tmp_path / "seed.csv"
    seed.write_text(HEADER + "alice,correspondence,1600.00,40\n" + row + "\nbob,correspondence,-100.50,1\n")
    assert_refused(tmp_path, seed, "uscf-cc", 3, field)


def test_each_system_refuses_the_others_seeding_rows(tmp_path: Path) -> None:
    arena = tmp_path / "arena.csv"
    arena.write_text(HEADER + "alice,blitz,1800,40\n")
    assert_refused(tmp_path, arena, "uscf-cc", 2, "category")
    cc = tmp_path / "cc.csv"
    cc.write_text(HEADER + "alice,blitz,1800,40\nbob,correspondence,1400,10\n")
    assert_refused(tmp_path, cc, "arena", 3, "category")


def assert_refused(tmp_path: Path, seed: Path, system: str, number: int, field: str) -> None:
    """Status 2, one line naming the file, the row's line and the field; no output at all."""
    games, out, dlq = tmp_path / "games.jsonl", tmp_path / "out.jsonl", tmp_path / "dlq.jsonl"
    games.write_text(line() + "\n")
    done = rate(games, "--seed", seed, "--out", out, "--dlq", dlq, system=system)
    assert done.returncode == 2, done.stderr
    stderr = done.stderr.decode()
    assert stderr.count("\n") == 1, stderr
    assert re.search(rf"{re.escape(str(seed))}(:| line ){number}\b", stderr), stderr
    assert field in stderr, stderr
    assert not out.exists() and not dlq.exists()
