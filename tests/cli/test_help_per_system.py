"""Every command's `--help` speaks for the rating system in use: the seeding columns, categories
and default names it shows are those of RATING_SYSTEM's system, for every command and every
built-in system; and `--help` works whatever RATING_SYSTEM holds."""

import argparse
import os
import re
import sys

import pytest

from tests.support import commands
from worker.cli import build_parser
from worker.systems.registry import BUILT_IN, BY_NAME

HEADERS = {spec.name: ",".join(spec.rules.seed_header) for spec in BUILT_IN}
CATEGORIES = {category for spec in BUILT_IN for category in spec.rules.categories}
SEEDING_COMMANDS = {"rate", "import", "rebuild"}


def helps(monkeypatch: pytest.MonkeyPatch, system: str, joined: bool = True) -> dict[str, str]:
    """Each command's --help under RATING_SYSTEM=`system` (`joined`: its words as one line)."""
    monkeypatch.setenv("RATING_SYSTEM", system)
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    texts = {name: sub.format_help() for name, sub in commands.choices.items()}
    return {name: " ".join(text.split()) if joined else text for name, text in texts.items()}


@pytest.mark.parametrize("system", sorted(BY_NAME))
def test_every_help_names_the_seeding_columns_and_categories_of_the_system_in_use(
    monkeypatch: pytest.MonkeyPatch, system: str
) -> None:
    spec = BY_NAME[system]
    for command, text in helps(monkeypatch, system).items():
        shown = set(re.findall(r"player_id,[a-z0-9_,]+[a-z0-9_]", text))
        assert shown <= {HEADERS[system]}, (command, shown)
        assert (HEADERS[system] in text) == (command in SEEDING_COMMANDS), command
        if "--category" in text:
            named = {c for c in CATEGORIES if re.search(rf"\b{c}\b", text.split("--category", 1)[1])}
            assert named == set(spec.rules.categories), (command, named)


@pytest.mark.parametrize("system", sorted(BY_NAME))
def test_run_help_names_the_settings_that_matter_and_the_systems_defaults(
    monkeypatch: pytest.MonkeyPatch, system: str
) -> None:
    text = helps(monkeypatch, system)["run"]
    for setting in ("RATING_KAFKA_BOOTSTRAP_SERVERS", "RATING_REDIS_URL", "RATING_SYSTEM"):
        assert setting in text
    games, ratings, letters, group, prefix = BY_NAME[system].names
    assert f"input {games}, output {ratings}, dead letters {letters}, group {group}, key prefix {prefix};" in text
    # Each name whole on a line: the formatter breaks lines at spaces only, never inside a name.
    raw = helps(monkeypatch, system, joined=False)
    for name in (games, ratings, letters, group, prefix):
        assert name in raw["run"], name
    assert HEADERS[system] in raw["import"]


@pytest.mark.parametrize("value", ["bogus", "no.such.module:SPEC", ""])
def test_help_works_with_a_rating_system_that_names_none(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    for command, text in helps(monkeypatch, value).items():
        if command in SEEDING_COMMANDS or command == "erase":
            assert f"RATING_SYSTEM={value!r} names no rating system" in text, command
        assert not re.search(r"player_id,", text), command
    env = {k: v for k, v in os.environ.items() if not k.startswith("RATING_")} | {"RATING_SYSTEM": value}
    done = commands.run(
        [sys.executable, "-m", "worker", "import", "--help"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "names no rating system" in done.stdout
