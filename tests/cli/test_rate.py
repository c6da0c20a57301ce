"""`rating-worker rate`, run as a user runs it: a real process, real files."""

import json
from decimal import Decimal
from pathlib import Path

import pytest

from schemas.rating_changed import RatingChanged
from tests.support.rate import REPO, rate


def game(game_id: str, white: str, black: str, result: str = "1-0", **extra: object) -> str:
    value: dict[str, object] = {
        "event_id": f"e-{game_id}",
        "game_id": game_id,
        "finished_at": "2026-11-29T10:00:00Z",
        "rated": True,
        "time_control": {"base_seconds": 180, "increment_seconds": 2},
        "white_id": white,
        "black_id": black,
        "result": result,
        "termination": "checkmate",
    }
    value.update(extra)
    return json.dumps(value)


SEED = "player_id,category,rating,rated_games\nalice,blitz,1800,40\nbob,blitz,1700.00,40\n"


@pytest.fixture
def seed(tmp_path: Path) -> Path:
    path = tmp_path / "seed.csv"
    path.write_text(SEED)
    return path


def test_rate_writes_events_to_stdout_and_a_summary_to_stderr(tmp_path: Path, seed: Path) -> None:
    games = tmp_path / "games.jsonl"
    games.write_text(game("g1", "alice", "bob") + "\n")
    done = rate(games, "--seed", seed)
    assert done.returncode == 0
    events = [RatingChanged.model_validate_json(line) for line in done.stdout.splitlines()]
    assert [(e.kind, e.player_id) for e in events] == [
        ("imported", "alice"),
        ("imported", "bob"),
        ("rated_game", "alice"),
        ("rated_game", "bob"),
    ]
    # Worked example 1: 1800 beats 1700 in blitz with 40+ games: +-7.20.
    assert [e.rating_after for e in events[2:]] == [Decimal("1807.20"), Decimal("1692.80")]
    assert b"1 valid games: 1 applied" in done.stderr


def test_bad_lines_are_dead_lettered_with_their_physical_line_and_raw_text(tmp_path: Path, seed: Path) -> None:
    games = tmp_path / "games.jsonl"
    lines = [
        game("g1", "alice", "bob").encode(),  # line 1
        b"",  # line 2: blank
        b"   ",  # line 3: blank
        b"\xff\xfeabc",  # line 4: not UTF-8
        b"{not json",  # line 5
        game("g2", "alice", "bob", rated=1).encode(),  # line 6: schema
        game("g1", "alice", "bob", result="0-1").encode(),  # line 7: conflicting duplicate
        game("g1", "alice", "bob").encode() + b"\r",  # line 8: CRLF, a plain duplicate
    ]
    games.write_bytes(b"\n".join(lines) + b"\n")
    dlq, out = tmp_path / "dlq.jsonl", tmp_path / "out.jsonl"
    done = rate(games, "--seed", seed, "--dlq", dlq, "--out", out)
    assert done.returncode == 0, done.stderr
    letters = [json.loads(line) for line in dlq.read_text(encoding="utf-8").splitlines()]
    assert [(d["line"], d["error_kind"]) for d in letters] == [
        (4, "invalid_encoding"),
        (5, "invalid_json"),
        (6, "invalid_schema"),
        (7, "conflicting_duplicate"),
    ]
    assert list(letters[0]) == ["line", "error_kind", "error_message", "raw"]
    assert letters[0]["raw"] == "\ufffd\ufffdabc"
    assert letters[1]["raw"] == "{not json"
    assert "rated" in letters[2]["error_message"]
    assert len(out.read_bytes().splitlines()) == 4  # 2 imported + 2 for g1; g2 and the duplicates change nothing
    assert b"8 lines (2 blank)" in done.stderr
    assert b"1 duplicates" in done.stderr


def test_an_oversized_line_is_dead_lettered_as_too_large_with_its_raw_text_cut(tmp_path: Path) -> None:
    games = tmp_path / "games.jsonl"
    games.write_text(game("g1", "alice", "bob", padding="x" * 400) + "\n")
    dlq = tmp_path / "dlq.jsonl"
    done = rate(games, "--dlq", dlq, settings={"RATING_MAX_MESSAGE_BYTES": "300"})
    assert done.returncode == 0
    (letter,) = [json.loads(line) for line in dlq.read_text().splitlines()]
    assert letter["error_kind"] == "too_large"
    assert len(letter["raw"]) == 300


def test_the_training_rating_is_shown_while_unrated_and_can_be_set(tmp_path: Path, seed: Path) -> None:
    games = tmp_path / "games.jsonl"
    games.write_text(game("g1", "newbie", "alice", result="1/2-1/2") + "\n")
    for args, env, shown in (
        ((), {}, 1200),
        (("--training-rating", "1500"), {}, 1500),
        ((), {"RATING_TRAINING_RATING": "1300"}, 1300),
    ):
        done = rate(games, "--seed", seed, *args, settings=env)
        assert done.returncode == 0, done.stderr
        last = RatingChanged.model_validate_json(done.stdout.splitlines()[-1])
        assert (last.kind, last.player_id, last.display_after) == ("qualifying_game", "newbie", shown)


@pytest.mark.parametrize(
    ("seed_text", "complaint"),
    [
        ("player_id,category,rating,rated_games\nalice,blitz,999.99,3\n", b"rating"),
        ("player_id,category,rating,rated_games\nalice,blitz,1800.123,3\n", b"two decimals"),
        ("player_id,category,rating,rated_games\nalice,classical,1800,3\n", b"category"),
        ("player_id,category,rating,rated_games\nal/ice,blitz,1800,3\n", b"player_id"),
        ("player_id,category,rating,rated_games\nalice,blitz,1800,-1\n", b"rated_games"),
        ("player_id,category,rating,rated_games\nalice,blitz,1800,3\nbob,blitz,1700,1\nalice,blitz,1900,2\n", b"twice"),
        ("id,category,rating,rated_games\nalice,blitz,1800,3\n", b"header"),
    ],
)
def test_a_bad_or_repeated_seed_row_refuses_the_whole_file_and_writes_nothing(
    tmp_path: Path, seed_text: str, complaint: bytes
) -> None:
    seed = tmp_path / "seed.csv"
    seed.write_text(seed_text)
    games = tmp_path / "games.jsonl"
    games.write_text(game("g1", "alice", "bob") + "\n")
    out, dlq = tmp_path / "out.jsonl", tmp_path / "dlq.jsonl"
    done = rate(games, "--seed", seed, "--out", out, "--dlq", dlq)
    assert done.returncode == 2
    assert done.stderr.count(b"\n") == 1 and complaint in done.stderr
    assert not out.exists() and not dlq.exists()


@pytest.mark.parametrize(
    ("args", "env", "complaint"),
    [
        (("missing.jsonl",), {}, b"cannot read the games file"),
        (("GAMES", "--out", "/nonexistent/dir/out.jsonl"), {}, b"cannot write"),
        (("GAMES", "--training-rating", "x"), {}, b"--training-rating"),
        (("GAMES",), {"RATING_TRAINING_RATING": "-5"}, b"RATING_TRAINING_RATING"),
        (("GAMES", "--bogus"), {}, b"--bogus"),
    ],
)
def test_unusable_arguments_or_files_give_one_line_and_status_2(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], complaint: bytes
) -> None:
    games = tmp_path / "games.jsonl"
    games.write_text(game("g1", "alice", "bob") + "\n")
    done = rate(*(str(games) if a == "GAMES" else a for a in args), settings=env)
    assert done.returncode == 2
    assert done.stderr.count(b"\n") == 1, done.stderr
    assert complaint in done.stderr


def test_a_missing_seeding_file_gets_a_sentence_like_a_missing_games_file(tmp_path: Path) -> None:
    games = tmp_path / "games.jsonl"
    games.write_text(game("g1", "alice", "bob") + "\n")
    done = rate(games, "--seed", tmp_path / "missing.csv")
    assert done.returncode == 2
    missing_games = rate(tmp_path / "missing.jsonl")
    assert (
        done.stderr
        == f"rating-worker: error: {tmp_path / 'missing.csv'}: cannot read the seeding file: ".encode()
        + (missing_games.stderr.split(b"cannot read the games file: ", 1)[1])
    )
    assert b"Errno" not in done.stderr


def test_rate_without_a_seeding_file_hints_at_seed_when_every_player_was_unrated(tmp_path: Path, seed: Path) -> None:
    games = tmp_path / "games.jsonl"
    games.write_text(game("g1", "alice", "bob") + "\n" + game("g2", "bob", "alice") + "\n")
    unseeded = rate(games, "--out", "/dev/null")
    assert unseeded.returncode == 0
    hint = unseeded.stderr.decode().splitlines()[-1]
    assert hint == (
        "rate: no game changed a rating: with no seeding file every player starts unrated, and a game "
        "between two unrated players rates no one; give their ratings with --seed SEED.csv"
    )
    # With the players seeded, or a seeding file that leaves them unrated, no hint.
    for seeding in (seed, tmp_path / "empty.csv"):
        (tmp_path / "empty.csv").write_text("player_id,category,rating,rated_games\n")
        done = rate(games, "--seed", seeding, "--out", "/dev/null")
        assert done.returncode == 0 and b"--seed" not in done.stderr, done.stderr


def test_the_bundled_sample_replays_to_the_same_bytes_twice(tmp_path: Path) -> None:
    outs = []
    for i in range(2):
        out = tmp_path / f"out{i}.jsonl"
        done = rate(
            REPO / "samples/games.jsonl", "--seed", REPO / "samples/seed.csv", "--out", out, "--dlq", "/dev/null"
        )
        assert done.returncode == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    kinds = {RatingChanged.model_validate_json(line).kind for line in outs[0].splitlines()}
    assert {"imported", "rated_game", "qualifying_game", "first_rating", "rating_lost"} <= kinds
