"""`RATING_SYSTEM=fide rating-worker rate`, run as a user runs it: a real process, real files, close
lines in the games file (docs/systems/fide.md: "Input", "State and events, with an example", "Seeding
rows"; docs/contract-v2.md, "The per-period systems: `fide` and `tornelo`": close lines; worked examples
13, the contract's example, and 17, close lines, as numbered below)."""

import json
import re
from pathlib import Path
from typing import Any

import pytest

from schemas.rating_changed_periods import FideRatingChanged
from schemas.rating_changed_v2 import RATING_CHANGED_V2
from tests.support.contract import VALID_GAME
from tests.support.rate import rate
from tests.support.systems import dead_letters_of
from tests.support.v2_examples_periods import (
    CONTRACT_FIDE,
    FIDE_CLOSE_B,
    FIDE_COUNTED_PENDING,
    FIDE_GAME_B,
    FIDE_HELD_PENDING,
    FIDE_IMPORT_A,
    FIDE_IMPORT_B,
)

HEADER = "player_id,category,rating,rated_games,reached_2400,birth_year\n"
SEED = HEADER + "A,blitz,2000,40,,\nB,blitz,1900,40,,\n"  # the contract's example: A 2000, B 1900, 40 games
AT = "2026-11-10T12:00:00Z"


def line(**changes: Any) -> str:
    """The contract's fide game (g1, e-g1, 3+0, 2026-11-10T12:00:00Z: A, white, beats B), varied."""
    game = {**VALID_GAME, "event_id": "e-g1", "game_id": "g1", "white_id": "A", "black_id": "B", "finished_at": AT}
    return json.dumps({**game, **changes})


def close(period: str, **extra: Any) -> str:
    return json.dumps({"control": "close", "period": period, **extra})


def run(tmp_path: Path, lines: list[str], seed: str | None = SEED) -> tuple[list[bytes], Path, str]:
    """`rate` on the lines (and the seeding file): the output's lines, the dead-letter file, stderr."""
    games, out, dlq = tmp_path / "games.jsonl", tmp_path / "out.jsonl", tmp_path / "dlq.jsonl"
    games.write_text("".join(text + "\n" for text in lines))
    args: list[str | Path] = [games, "--out", out, "--dlq", dlq]
    if seed is not None:
        (tmp_path / "seed.csv").write_text(seed)
        args += ["--seed", tmp_path / "seed.csv"]
    done = rate(*args, system="fide")
    assert done.returncode == 0, done.stderr
    return out.read_bytes().splitlines(), dlq, done.stderr.decode()


def read(payload: bytes) -> dict[str, Any]:
    assert isinstance(RATING_CHANGED_V2.validate_json(payload), FideRatingChanged), payload
    event: dict[str, Any] = json.loads(payload)
    return event


def ids(payloads: list[bytes]) -> list[str]:
    return [read(p)["event_id"] for p in payloads]


# --- example 13: the contract's example


def test_the_contracts_example_end_to_end(tmp_path: Path) -> None:
    """A and B seeded, October closed (no games), g1, November closes: byte for byte."""
    out, dlq, stderr = run(tmp_path, [close("2026-10"), line(), close("2026-11")])
    assert out == [FIDE_IMPORT_A, FIDE_IMPORT_B, CONTRACT_FIDE[0], FIDE_GAME_B, CONTRACT_FIDE[1], FIDE_CLOSE_B]
    assert dlq.read_bytes() == b""
    assert "rate: 3 lines (0 blank), 2 ratings seeded" in stderr
    assert "rate: 1 valid games: 1 applied" in stderr
    assert "rate: 2 close lines: 2 periods closed, 2 close events" in stderr
    assert "rate: 6 events written; 2 ratings of 2 players" in stderr


def test_the_contracts_example_without_octobers_close(tmp_path: Path) -> None:
    """The game is held: A's period_game differs as the contract says; the close is the same bytes."""
    out, _, stderr = run(tmp_path, [line(), close("2026-11")])
    assert out[2] == CONTRACT_FIDE[0].replace(FIDE_COUNTED_PENDING, FIDE_HELD_PENDING)
    assert out[2] != CONTRACT_FIDE[0]
    assert (out[4], out[5]) == (CONTRACT_FIDE[1], FIDE_CLOSE_B)
    assert "rate: 1 close lines: 1 periods closed, 2 close events" in stderr


# --- example 17: close lines


def test_bad_close_lines_and_games_are_dead_lettered_and_close_nothing(tmp_path: Path) -> None:
    bad: list[tuple[dict[str, Any], str]] = [
        ({"control": "close", "period": "9999-12"}, "period"),
        ({"control": "close", "period": "2026-11 "}, "period"),
        ({"control": "Close", "period": "2026-11"}, "control"),
        ({"control": "close"}, "period"),
        ({**json.loads(line(game_id="b1", event_id="e-b1")), "control": "stop"}, "control"),  # a game, plus control
        (json.loads(line(game_id="b2", event_id="e-b2", finished_at="0000-01-01T00:10:00+01:00")), "finished_at"),
        (json.loads(line(game_id="b3", event_id="e-b3", finished_at="9999-12-31T23:30:00-01:00")), "finished_at"),
    ]
    lines = [line(), *(json.dumps(value) for value, _ in bad)]
    out, dlq, stderr = run(tmp_path, lines)
    dead_letters_of(dlq, bad, first_line=2)
    # Nothing written for them: no close (9999-12 or "2026-11 " would have closed November), no game.
    assert ids(out) == ["import/A/blitz/1", "import/B/blitz/1", "g1/A", "g1/B"]
    assert f"rate: {len(bad)} dead-lettered (invalid_schema {len(bad)})" in stderr
    assert "rate: 0 close lines: 0 periods closed, 0 close events" in stderr


def test_a_close_line_with_other_keys_closes(tmp_path: Path) -> None:
    lines = [
        line(),
        close("2026-11", by="ops"),
        line(game_id="g2", event_id="e-g2", finished_at="2026-11-20T12:00:00Z"),
    ]
    out, dlq, stderr = run(tmp_path, lines)
    assert dlq.read_bytes() == b""
    assert ids(out)[2:] == ["g1/A", "g1/B", "period/2026-11/A/blitz", "period/2026-11/B/blitz", "g2/A", "g2/B"]
    # November is closed: g2, a game of November, is late and recorded in December.
    assert read(out[-2])["detail"]["period"] == "2026-12"
    assert "rate: 1 close lines: 1 periods closed, 2 close events" in stderr


def test_9999_11_can_be_closed(tmp_path: Path) -> None:
    lines = [
        line(finished_at="9999-11-10T12:00:00Z"),
        close("9999-11"),
        line(game_id="g2", event_id="e-g2", finished_at="9999-11-20T12:00:00Z"),
    ]
    out, dlq, _ = run(tmp_path, lines)
    assert dlq.read_bytes() == b""
    assert ids(out)[2:] == ["g1/A", "g1/B", "period/9999-11/A/blitz", "period/9999-11/B/blitz", "g2/A", "g2/B"]
    assert [read(p)["detail"]["period"] for p in out[-2:]] == ["9999-12", "9999-12"]  # late: the last month


def test_rate_makes_no_future_check(tmp_path: Path) -> None:
    """A line of `rate`'s input has no record timestamp: a game dated 2100 is recorded in its month."""
    out, dlq, _ = run(tmp_path, [line(finished_at="2100-01-01T00:00:00Z"), close("2100-01")])
    assert dlq.read_bytes() == b""
    events = [read(p) for p in out[2:]]
    assert [(e["event_id"], e["detail"]["period"]) for e in events] == [
        ("g1/A", "2100-01"),
        ("g1/B", "2100-01"),
        ("period/2100-01/A/blitz", "2100-01"),
        ("period/2100-01/B/blitz", "2100-01"),
    ]
    assert events[0]["finished_at"] == "2100-01-01T00:00:00Z"


def test_the_summary_counts_close_lines_periods_and_close_events(tmp_path: Path) -> None:
    """An October and a November game, one close line for November (two months, four events), the
    same close again and an earlier one (nothing), a bad close line (a dead letter, not a close)."""
    lines = [
        line(game_id="g0", event_id="e-g0", finished_at="2026-10-10T12:00:00Z"),
        line(),
        close("2026-11"),
        close("2026-11"),
        close("2026-10"),
        json.dumps({"control": "close"}),
        "",
    ]
    out, _, stderr = run(tmp_path, lines)
    assert ids(out)[6:] == [
        "period/2026-10/A/blitz",
        "period/2026-10/B/blitz",
        "period/2026-11/A/blitz",
        "period/2026-11/B/blitz",
    ]
    assert "rate: 7 lines (1 blank), 2 ratings seeded" in stderr
    assert "rate: 2 valid games: 2 applied" in stderr
    assert "rate: 1 dead-lettered (invalid_schema 1)" in stderr
    assert "rate: 3 close lines: 2 periods closed, 4 close events" in stderr
    assert "rate: 10 events written; 2 ratings of 2 players" in stderr


# --- seeding rows


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ("x,blitz,1800.00,40,,", "rating"),
        ("x,blitz,1399,40,,", "rating"),
        ("x,blitz,1800,40,TRUE,", "reached_2400"),
        ("x,blitz,1800,40,yes,", "reached_2400"),
        ("x,blitz,2400,40,false,", "reached_2400"),
        ("x,blitz,1800,40,,999", "birth_year"),
        ("x,blitz,1800,40,,20080", "birth_year"),
        ("A,blitz,1800,40,,", "twice"),
    ],
)
def test_a_bad_seeding_row_refuses_the_whole_file_and_writes_nothing(tmp_path: Path, row: str, field: str) -> None:
    seed = tmp_path / "seed.csv"
    seed.write_text(SEED + row + "\nC,rapid,1400,0,,\n")
    assert_refused(tmp_path, seed, 4, field)


def test_another_systems_header_is_refused(tmp_path: Path) -> None:
    seed = tmp_path / "seed.csv"
    seed.write_text("player_id,category,rating,rated_games,deviation,volatility\nA,blitz,1800,0,,\n")
    assert_refused(tmp_path, seed, 1, "header")


def assert_refused(tmp_path: Path, seed: Path, number: int, field: str) -> None:
    """Status 2, one line naming the file, the row's line and the field; no output at all."""
    games, out, dlq = tmp_path / "games.jsonl", tmp_path / "out.jsonl", tmp_path / "dlq.jsonl"
    games.write_text(line() + "\n" + close("2026-11") + "\n")
    done = rate(games, "--seed", seed, "--out", out, "--dlq", dlq, system="fide")
    assert done.returncode == 2, done.stderr
    stderr = done.stderr.decode()
    assert stderr.count("\n") == 1, stderr
    assert re.search(rf"{re.escape(str(seed))}(:| line ){number}\b", stderr), stderr
    assert field in stderr, stderr
    assert not out.exists() and not dlq.exists()
