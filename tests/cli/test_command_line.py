"""The command line as a new user meets it: the commands listed when none is given, a one-line
description for each, help with its default for every option, `run --help` pointing at the
settings, and bad option values refused with one line (status 2)."""

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import commands
from worker.cli import _Formatter, build_parser


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return commands.run(
        [sys.executable, "-m", "worker", *args], capture_output=True, text=True, timeout=30, check=False
    )


def subcommands() -> dict[str, argparse.ArgumentParser]:
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def test_no_command_lists_every_command_with_its_description() -> None:
    done = run()
    assert done.returncode == 2
    for name in subcommands():
        assert f"\n    {name} " in done.stdout or f"\n    {name}\n" in done.stdout, name
    assert "docs/configuration.md" in done.stdout


def test_every_command_and_option_says_what_it_is_and_its_default() -> None:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    described = {action.dest: action.help for action in commands._choices_actions}
    formatter = _Formatter("rating-worker")
    for name, sub in subcommands().items():
        assert described[name], f"{name} has no one-line description"
        assert sub.description, f"{name} --help shows no description"
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            text = formatter._get_help_string(action) or ""
            assert text, f"{name} {action.dest}: no help"
            if action.option_strings and action.default is not None and action.default is not False:
                assert "default" in text, f"{name} {action.option_strings[0]}: its default is not shown"


def test_run_help_points_at_the_settings() -> None:
    done = run("run", "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())  # as wrapped to the terminal's width
    assert "docs/configuration.md" in text and "`rating-worker config` prints those in effect" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("sample", "out.jsonl", "--games", "-3"), "argument --games: -3 is below 1"),
        (("sample", "out.jsonl", "--bad-share", "2"), "argument --bad-share: 2 is not a share from 0 to less than 1"),
        (("sample", "out.jsonl", "--players", "x"), "argument --players: 'x' is not a whole number"),
        (("demo", "--rate", "0"), "argument --rate: 0 is not a positive number"),
        (("demo", "--workers", "0"), "argument --workers: 0 is below 1"),
        (("demo", "--duration", "-1"), "argument --duration: -1 is not a positive number"),
        (("topics", "--partitions", "0"), "argument --partitions: 0 is below 1"),
        (
            ("demo", "--month-seconds", "5"),
            "--month-seconds: --system arena has no months (it rates each game at once)",
        ),
        (  # served (tests/cli/test_demo.py), but its periods are tournaments
            ("demo", "--system", "tornelo", "--month-seconds", "5"),
            "--month-seconds: --system tornelo has no months (its tournaments end by a record)",
        ),
        (("demo", "--system", "fide", "--month-seconds", "0"), "argument --month-seconds: 0 is not a positive number"),
        (("replay-dead-letters", "--from-offset", "9", "--to-offset", "3"), "--to-offset 3 is below --from-offset 9"),
    ],
)
def test_a_bad_option_value_is_refused_with_one_line(args: tuple[str, ...], message: str) -> None:
    done = run(*args)
    assert done.returncode == 2
    assert done.stderr == f"rating-worker: error: {message}\n"


def test_sample_says_what_it_wrote(tmp_path: Path) -> None:
    games, seed = tmp_path / "games.jsonl", tmp_path / "seed.csv"
    done = run("sample", str(games), "--seed-out", str(seed), "--games", "50", "--players", "8", "--bad-share", "0.1")
    assert done.returncode == 0, done.stderr
    lines, rows = len(games.read_bytes().splitlines()), len(seed.read_text().splitlines()) - 1
    assert lines > 50 and rows > 0
    assert done.stderr == (
        f"sample: wrote {lines} lines to {games} (50 games of 8 players; bad share 0.1, redelivery share 0) "
        f"and {rows} seeding rows to {seed}\n"
    )
    assert done.stdout == ""
