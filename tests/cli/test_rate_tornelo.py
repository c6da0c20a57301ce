"""`RATING_SYSTEM=tornelo rating-worker rate`, run as a user runs it: a real process, real files
(docs/systems/tornelo.md: "Input", "State and events, with an example", "Seeding rows", "Settings";
worked examples 2, a bonus, 18, the contract's example, and 19, bad input, as numbered below): the
contract's example from a seeding file and a games file with a close line, bad lines and bad close lines
dead-lettered, a bad seeding row, and the two settings of the method, which change the numbers and stop
`rate` when wrong."""

import json
import re
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from schemas.rating_changed_periods import TorneloRatingChanged
from schemas.rating_changed_v2 import RATING_CHANGED_V2
from tests.support.contract import VALID_GAME
from tests.support.rate import REPO, rate, rate_command
from tests.support.systems import dead_letters_of
from tests.support.v2_examples_tornelo import A_IMPORTED, B_CLOSE, B_G1, B_IMPORTED, CONTRACT_TORNELO

HEADER = "player_id,category,rating,rated_games,k_modifier\n"
SEED = HEADER + "A,rapid,1800,40,\nB,rapid,2000,40,\n"
AT = "2026-11-10T12:00:00Z"
RAPID = {"base_seconds": 900, "increment_seconds": 0}  # 15+0


def line(**changes: Any) -> str:
    """The contract's tornelo game (g1, e-g1, 15+0, T1: A, white, beats B), varied field by field."""
    game = {
        **VALID_GAME,
        "event_id": "e-g1",
        "finished_at": AT,
        "time_control": RAPID,
        "white_id": "A",
        "black_id": "B",
        "tournament_id": "T1",
    }
    return json.dumps({**game, **changes})


def close(tournament: str, **others: str) -> str:
    return json.dumps({"control": "close", "period": tournament, **others})


def events_of(path: Path) -> list[dict[str, Any]]:
    """`rate`'s events, each valid as a `tornelo` event of contract v2, numbers read exactly."""
    found = []
    for payload in path.read_bytes().splitlines():
        assert isinstance(RATING_CHANGED_V2.validate_json(payload), TorneloRatingChanged)
        found.append(json.loads(payload, parse_float=Decimal))
    return found


def run(tmp_path: Path, seed: str, lines: list[str], **settings: str) -> tuple[list[dict[str, Any]], str]:
    """`rate` on the seeding file and the lines: its events and its summary; no dead letters."""
    seed_file, games, out, dlq = (tmp_path / name for name in ("seed.csv", "games.jsonl", "out.jsonl", "dlq.jsonl"))
    seed_file.write_text(seed)
    games.write_text("".join(text + "\n" for text in lines))
    done = rate(games, "--seed", seed_file, "--out", out, "--dlq", dlq, system="tornelo", settings=settings)
    assert done.returncode == 0, done.stderr
    assert dlq.read_bytes() == b""
    return events_of(out), done.stderr.decode()


def test_the_contracts_example_end_to_end(tmp_path: Path) -> None:
    """Example 18: A and B seeded, g1 in T1, then T1's close line; the seeding rows' events first,
    then g1's (white's first), then the close's in the byte order of their keys."""
    seed, games, out, dlq = (tmp_path / name for name in ("seed.csv", "games.jsonl", "out.jsonl", "dlq.jsonl"))
    seed.write_text(SEED)
    games.write_text(line() + "\n" + close("T1") + "\n")
    done = rate(games, "--seed", seed, "--out", out, "--dlq", dlq, system="tornelo")
    assert done.returncode == 0, done.stderr
    game, closed = CONTRACT_TORNELO
    assert out.read_bytes() == b"".join(e + b"\n" for e in (A_IMPORTED, B_IMPORTED, game, B_G1, closed, B_CLOSE))
    assert dlq.read_bytes() == b""
    stderr = done.stderr.decode()
    assert "rate: 2 lines (0 blank), 2 ratings seeded" in stderr
    assert "rate: 1 valid games: 1 applied" in stderr


def bad_lines() -> list[tuple[dict[str, Any], str]]:
    """(message, what its dead letter must name); the games with players of their own (badNw, badNb)."""
    changes: list[tuple[dict[str, Any], str]] = [
        ({"tournament_id": "bad/id"}, "tournament_id"),  # example 19
        ({"tournament_id": 7}, "tournament_id"),
        ({"tournament_id": ""}, "tournament_id"),
        ({"control": "x"}, "control"),  # a whole valid game, plus a control key
        ({"control": None}, "control"),
    ]
    out = [
        ({**json.loads(line(game_id=f"b{i}", white_id=f"bad{i}w", black_id=f"bad{i}b")), **c}, named)
        for i, (c, named) in enumerate(changes)
    ]
    # Close lines that are not (example 19; docs/systems/tornelo.md, "Input").
    out += [
        ({"control": "close", "period": ""}, "period"),
        ({"control": "close"}, "period"),
        ({"control": "close", "period": "T/1"}, "period"),
        ({"control": "close", "period": 7}, "period"),
        ({"control": "stop", "period": "T1"}, "control"),
        ({"control": "Close", "period": "T1"}, "control"),
    ]
    return out


def test_bad_input_gets_a_clear_dead_letter_and_changes_nothing(tmp_path: Path) -> None:
    bad = bad_lines()
    lines = [line()]  # line 1: g1, A beats B in T1
    lines += [json.dumps(value) for value, _ in bad]  # lines 2 ... len(bad) + 1
    lines.append(close("T1", by="ops"))  # other keys are ignored: it closes T1
    # A bad line is not recorded: its game_id, sent again valid, is a new game, here a late game of T1.
    lines.append(line(game_id="b0", event_id="e-b0"))
    seed, games, out, dlq = (tmp_path / name for name in ("seed.csv", "games.jsonl", "out.jsonl", "dlq.jsonl"))
    seed.write_text(SEED)
    games.write_text("\n".join(lines) + "\n")
    done = rate(games, "--seed", seed, "--out", out, "--dlq", dlq, system="tornelo")
    assert done.returncode == 0, done.stderr

    dead_letters_of(dlq, bad, first_line=2)

    events = events_of(out)
    assert [(e["event_id"], e["kind"], e["rating_after"]) for e in events] == [
        ("import/A/rapid/1", "imported", 1800),
        ("import/B/rapid/1", "imported", 2000),
        ("g1/A", "period_game", 1800),
        ("g1/B", "period_game", 2000),
        ("period/T1/A/rapid", "period_rating", 1815),
        ("period/T1/B/rapid", "period_rating", 1985),
        # E(1815, 1985) = 1 / (1 + 10^(170/400)) = 0.273170: (1 - 0.273170) x 20 = 14.54 -> 15.
        ("b0/A", "period_rating", 1830),
        ("b0/B", "period_rating", 1970),
    ]
    assert events[-2]["detail"]["tournament_id"] == "T1"
    stderr = done.stderr.decode()
    assert f"rate: {len(lines)} lines (0 blank)" in stderr
    assert "rate: 2 valid games: 2 applied" in stderr
    assert f"rate: {len(bad)} dead-lettered (invalid_schema {len(bad)})" in stderr


def test_a_redelivery_with_another_tournament_is_a_conflicting_duplicate(tmp_path: Path) -> None:
    """Example 19: g1 recorded with T1, then redelivered with T2, with null and without it."""
    seed, games, out, dlq = (tmp_path / name for name in ("seed.csv", "games.jsonl", "out.jsonl", "dlq.jsonl"))
    seed.write_text(SEED)
    absent = json.loads(line())
    del absent["tournament_id"]
    games.write_text("\n".join([line(), line(tournament_id="T2"), line(tournament_id=None), json.dumps(absent)]))
    done = rate(games, "--seed", seed, "--out", out, "--dlq", dlq, system="tornelo")
    assert done.returncode == 0, done.stderr
    letters = [json.loads(text) for text in dlq.read_text().splitlines()]
    assert [(letter["line"], letter["error_kind"]) for letter in letters] == [
        (2, "conflicting_duplicate"),
        (3, "conflicting_duplicate"),
        (4, "conflicting_duplicate"),
    ]
    assert [e["event_id"] for e in events_of(out)] == ["import/A/rapid/1", "import/B/rapid/1", "g1/A", "g1/B"]


@pytest.mark.parametrize(
    ("row", "field"),
    [
        # Example 19's rows (each refused row is also tests/unit/rules/test_tornelo.py's).
        ("x,rapid,2750,5,", "rating"),
        ("x,rapid,90,20,", "rating"),
        ("x,rapid,1800,40,10.01", "k_modifier"),
        ("A,rapid,1700,40,", "twice"),
    ],
)
def test_a_bad_seeding_row_refuses_the_whole_file_and_writes_nothing(tmp_path: Path, row: str, field: str) -> None:
    seed, games, out, dlq = (tmp_path / name for name in ("seed.csv", "games.jsonl", "out.jsonl", "dlq.jsonl"))
    seed.write_text(HEADER + "A,rapid,1800,40,\n" + row + "\nB,rapid,2000,40,1.5\n")
    games.write_text(line() + "\n")
    done = rate(games, "--seed", seed, "--out", out, "--dlq", dlq, system="tornelo")
    assert done.returncode == 2, done.stderr
    stderr = done.stderr.decode()
    assert stderr.count("\n") == 1, stderr
    assert re.search(rf"{re.escape(str(seed))}(:| line )3\b", stderr), stderr
    assert field in stderr, stderr
    assert not out.exists() and not dlq.exists()


def test_a_rating_far_above_its_opponent_is_rated_with_e_0_and_1(tmp_path: Path) -> None:
    """Section 6: beyond a difference of 3000, E rounds to 0 or 1; an established seeding row has no
    top ("within 100-2700 when rated_games < 20, >= 100 otherwise"). Hi (200000) beats Lo (100):
    E 1.000000 and 0.000000, no change, one game more each."""
    seed = HEADER + "Hi,rapid,200000,40,\nLo,rapid,100,40,\n"
    events, _ = run(tmp_path, seed, [line(white_id="Lo", black_id="Hi", result="0-1", tournament_id=None)])
    assert [(e["event_id"], e["rating_after"], e["delta"], e["state"]["rated_games"]) for e in events[2:]] == [
        ("g1/Lo", 100, 0, 41),
        ("g1/Hi", 200000, 0, 41),
    ]
    assert [e["detail"]["expected"] for e in events[2:]] == [0, 1]


# Example 2: P 1800 in T1 beats O20 (2000), draws O19 (1900), beats O17 (1700) and O16 (1600).
EXAMPLE_2_SEED = HEADER + "".join(
    f"{p},rapid,{r},40,\n" for p, r in (("P", 1800), ("O20", 2000), ("O19", 1900), ("O17", 1700), ("O16", 1600))
)
EXAMPLE_2 = [
    line(game_id=f"g{i}", event_id=f"e-g{i}", white_id="P", black_id=opponent, result=result)
    for i, (opponent, result) in enumerate((("O20", "1-0"), ("O19", "1/2-1/2"), ("O17", "1-0"), ("O16", "1-0")))
] + [close("T1")]


@pytest.mark.parametrize(
    ("factor", "after"),
    [
        ("0", 1830),  # no bonus: 1.5 x 20 (the default's 1840 is the unit tests')
        ("0.5", 1835),  # bonus 0.25 -> 1.75 x 20
        ("0.50", 1835),
    ],
)
def test_the_bonus_factor_setting(tmp_path: Path, factor: str, after: int) -> None:
    events, _ = run(tmp_path, EXAMPLE_2_SEED, EXAMPLE_2, RATING_TORNELO_BONUS_FACTOR=factor)
    (p,) = [e for e in events if e["event_id"] == "period/T1/P/rapid"]
    assert (p["rating_before"], p["rating_after"], p["delta"]) == (1800, after, after - 1800)
    o20 = next(e for e in events if e["event_id"] == "period/T1/O20/rapid")
    assert o20["rating_after"] == 1985  # a negative SD has no bonus, whatever the factor


def test_the_k_setting(tmp_path: Path) -> None:
    """Rapid [30, 15]: the contract's example gives 0.759747 x 30 = 22.79 -> A 1823, B 1977. Blitz
    [20, 12]: 2250 beats 2250 outside tournaments, 0.5 x 12 = 6 (example 5's shape)."""
    k = '{"rapid": [30, 15], "blitz": [20, 12], "bullet": [10, 5]}'
    seed = SEED + "W,blitz,2250,40,\nL,blitz,2250,40,\n"
    blitz = {"base_seconds": 180, "increment_seconds": 0}
    lines = [
        line(),
        close("T1"),
        line(game_id="g2", white_id="W", black_id="L", tournament_id=None, time_control=blitz),
    ]
    events, _ = run(tmp_path, seed, lines, RATING_TORNELO_K=k)
    assert [(e["event_id"], e["rating_after"], e["detail"]["k_factor"]) for e in events[4:]] == [
        ("g1/A", 1800, None),
        ("g1/B", 2000, None),
        ("period/T1/A/rapid", 1823, 30),
        ("period/T1/B/rapid", 1977, 30),
        ("g2/W", 2256, 12),
        ("g2/L", 2244, 12),
    ]


K = "RATING_TORNELO_K"
FACTOR = "RATING_TORNELO_BONUS_FACTOR"
WRONG = [
    (K, "{"),  # not JSON
    (K, '{"rapid": [20, 10], "blitz": [20, 10]}'),  # a missing category
    (K, '{"rapid": [20], "blitz": [20, 10], "bullet": [10, 5]}'),
    (K, '{"rapid": [20, 0], "blitz": [20, 10], "bullet": [10, 5]}'),
    (K, '{"rapid": [20.5, 10], "blitz": [20, 10], "bullet": [10, 5]}'),
    (K, '{"rapid": [20, 10], "blitz": [true, 10], "bullet": [10, 5]}'),
    (K, "true"),
    (FACTOR, "-1"),
    (FACTOR, "0.125"),
    (FACTOR, "1e2"),
    (FACTOR, "abc"),
]
Refusal = tuple[int, bytes, bytes, Path]


@pytest.fixture(scope="module")
def refusals(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Refusal]:
    """`rate` with each wrong value, all started at once (processes of their own, in directories of
    their own: a second of start-up each, run one after the other, would be most of this file's
    time): (status, stdout, stderr, directory)."""
    started = []
    for variable, value in WRONG:
        tmp = tmp_path_factory.mktemp("wrong")
        (tmp / "games.jsonl").write_text(line() + "\n" + close("T1") + "\n")
        argv, env = rate_command(
            (tmp / "games.jsonl", "--out", tmp / "out.jsonl", "--dlq", tmp / "dlq.jsonl"), "tornelo", {variable: value}
        )
        process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        started.append(((variable, value), process, tmp))
    done = {}
    for key, process, tmp in started:
        stdout, stderr = process.communicate(timeout=60)
        done[key] = (process.returncode, stdout, stderr, tmp)
    return done


@pytest.mark.parametrize(("variable", "value"), [pytest.param(*w, id=f"{w[0]}={w[1]}") for w in WRONG])
def test_a_wrong_parameter_stops_rate_at_start_with_one_line_naming_it(
    refusals: dict[tuple[str, str], Refusal], variable: str, value: str
) -> None:
    status, stdout, stderr, tmp = refusals[variable, value]
    assert status == 2, stderr
    assert stderr.count(b"\n") == 1, stderr
    assert stderr.startswith(b"rating-worker: error: "), stderr
    assert variable.encode() in stderr
    assert stdout == b""
    assert not (tmp / "out.jsonl").exists() and not (tmp / "dlq.jsonl").exists()
