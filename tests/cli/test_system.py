"""RATING_SYSTEM: one rating system per deployment (docs/operations.md, "Rating systems side by side"): the
names it sets by default, the names no deployment may take from another system (status 2, one
line, before any connection)."""

import os
import subprocess
import sys

import pytest

from tests.support import commands
from worker.engine.spec import SystemNames
from worker.systems.registry import BY_NAME

NOWHERE = {"RATING_KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9", "RATING_REDIS_URL": "redis://127.0.0.1:9/0"}


def run(*args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RATING_")} | NOWHERE | variables
    return commands.run(
        [sys.executable, "-m", "worker", *args], env=env, capture_output=True, text=True, timeout=30, check=False
    )


def shown(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """`config`'s lines as variable -> value (defaults and given alike)."""
    lines = [line.removeprefix("# ").removesuffix(" (default)") for line in done.stdout.splitlines()[1:]]
    return dict(line.split("=", 1) for line in lines)


def test_the_names_table_is_the_contracts() -> None:
    assert BY_NAME["arena"].names == SystemNames(
        "arena.game.finished.v1", "arena.rating.changed.v1", "arena.game.finished.v1.dlq", "rating-worker", "rating:"
    )
    assert BY_NAME["uscf-cc"].names == SystemNames(
        "arena.game.finished.v1.correspondence",
        "arena.rating.changed.v2.uscf-cc",
        "arena.game.finished.v1.dlq.uscf-cc",
        "rating-worker-uscf-cc",
        "rating-uscf-cc:",
    )
    assert BY_NAME["glicko2"].names.topic_games == "arena.game.finished.v1"
    assert BY_NAME["tornelo"].names.redis_key_prefix == "rating-tornelo:"


@pytest.mark.parametrize("system", ["arena", "uscf-cc"])
def test_the_system_sets_the_default_names(system: str) -> None:
    done = run("config", RATING_SYSTEM=system)
    assert done.returncode == 0, done.stderr
    values = shown(done)
    names = BY_NAME[system].names
    for field in SystemNames._fields:
        assert values[f"RATING_{field.upper()}"] == getattr(names, field)


def test_a_given_name_of_its_own_stands() -> None:
    done = run("config", RATING_SYSTEM="uscf-cc", RATING_TOPIC_GAMES="cc.games", RATING_REDIS_KEY_PREFIX="cc:")
    assert done.returncode == 0, done.stderr
    assert "RATING_TOPIC_GAMES=cc.games" in done.stdout.splitlines()
    assert shown(done)["RATING_REDIS_KEY_PREFIX"] == "cc:"


@pytest.mark.parametrize(
    ("system", "variable", "value", "message"),
    [
        ("uscf-cc", "RATING_TOPIC_RATINGS", "arena.rating.changed.v1", "is the output topic of the system arena"),
        (
            "uscf-cc",
            "RATING_TOPIC_DEAD_LETTERS",
            "arena.game.finished.v1.dlq",
            "is the dead-letter topic of the system arena",
        ),
        ("uscf-cc", "RATING_KAFKA_GROUP_ID", "rating-worker", "is the consumer group of the system arena"),
        ("uscf-cc", "RATING_REDIS_KEY_PREFIX", "rating:", "is the key prefix of the system arena"),
        ("uscf-cc", "RATING_REDIS_KEY_PREFIX", "rating:cc:", "nests with the key prefix of the system arena"),
        ("uscf-cc", "RATING_TOPIC_GAMES", "arena.game.finished.v1", "holds the arena's live games"),
        (
            "arena",
            "RATING_TOPIC_RATINGS",
            "arena.rating.changed.v2.glicko2",
            "is the output topic of the system glicko2",
        ),
        ("arena", "RATING_KAFKA_GROUP_ID", "rating-worker-uscf-cc", "is the consumer group of the system uscf-cc"),
        ("arena", "RATING_KAFKA_GROUP_ID", "rating-worker-tornelo-close", "is the close group of the system tornelo"),
        ("arena", "RATING_REDIS_KEY_PREFIX", "rating-fide:", "is the key prefix of the system fide"),
        # Across roles: what a deployment writes never lands in a topic another system reads or writes.
        ("arena", "RATING_TOPIC_DEAD_LETTERS", "arena.rating.changed.v2.uscf-cc", "is the output topic of"),
        ("arena", "RATING_TOPIC_RATINGS", "arena.game.finished.v1.correspondence", "is the input topic of"),
        ("arena", "RATING_TOPIC_RATINGS", "arena.game.finished.v1.dlq.fide", "is the dead-letter topic of"),
        ("uscf-cc", "RATING_TOPIC_RATINGS", "arena.game.finished.v1", "is the input topic of the system arena"),
        # tornelo reads its tournament ends: never from what another system writes.
        ("tornelo", "RATING_TOPIC_TOURNAMENTS", "arena.rating.changed.v1", "is the output topic of the system arena"),
        (
            "tornelo",
            "RATING_TOPIC_TOURNAMENTS",
            "arena.game.finished.v1.dlq.fide",
            "is the dead-letter topic of the system fide",
        ),
    ],
)
def test_another_systems_name_is_refused_at_start_with_one_line(
    system: str, variable: str, value: str, message: str
) -> None:
    for command in (("config",), ("run",)):
        done = run(*command, RATING_SYSTEM=system, **{variable: value})
        assert done.returncode == 2, (command, done.stderr)
        assert done.stderr.startswith(f"rating-worker: error: settings: {variable}={value} {message}")
        assert done.stderr.count("\n") == 1 and done.stdout == ""


@pytest.mark.parametrize(
    ("variable", "value", "other"),
    [
        ("RATING_TOPIC_TOURNAMENTS", "arena.game.finished.v1", "RATING_TOPIC_GAMES"),
        ("RATING_TOPIC_TOURNAMENTS", "arena.rating.changed.v2.tornelo", "RATING_TOPIC_RATINGS"),
        ("RATING_TOPIC_DEAD_LETTERS", "arena.tournament.finished.v1", "RATING_TOPIC_DEAD_LETTERS"),
        ("RATING_TOPIC_GAMES", "arena.tournament.finished.v1", "RATING_TOPIC_GAMES"),
    ],
)
def test_tornelos_tournament_topic_is_none_of_its_own_topics(variable: str, value: str, other: str) -> None:
    """Read as ends, the games or events would all be dead-lettered; an end among them would end
    nothing. The line names both variables (status 2, before any connection)."""
    for command in (("config",), ("run",)):
        done = run(*command, RATING_SYSTEM="tornelo", **{variable: value})
        assert done.returncode == 2, (command, done.stderr)
        topic = value if variable == "RATING_TOPIC_TOURNAMENTS" else "arena.tournament.finished.v1"
        assert done.stderr == (
            f"rating-worker: error: settings: RATING_TOPIC_TOURNAMENTS and {other} are both {topic}: tornelo's "
            "tournament ends need a topic of their own\n"
        )


def test_the_tournament_topic_is_tornelos_alone_and_checked_as_a_topic_name() -> None:
    done = run("config", RATING_SYSTEM="tornelo")
    assert done.returncode == 0, done.stderr
    assert shown(done)["RATING_TOPIC_TOURNAMENTS"] == "arena.tournament.finished.v1"
    # Another system does not read it: the same value as its input topic is no conflict.
    assert run("config", RATING_SYSTEM="glicko2", RATING_TOPIC_TOURNAMENTS="arena.game.finished.v1").returncode == 0
    bad = run("config", RATING_SYSTEM="arena", RATING_TOPIC_TOURNAMENTS="a b")
    assert bad.returncode == 2
    assert bad.stderr.startswith("rating-worker: error: setting RATING_TOPIC_TOURNAMENTS: a Kafka topic name is")


def test_an_unknown_system_is_refused() -> None:
    done = run("config", RATING_SYSTEM="elo")
    assert done.returncode == 2 and done.stderr.startswith("rating-worker: error: setting RATING_SYSTEM: ")


# Every command that touches Kafka or Redis, with the arguments it needs to get that far.
SERVICE_COMMANDS = [
    ("run",),
    ("import", "seed.csv"),
    ("restore",),
    ("rebuild",),
    ("switch-over",),
    ("topics",),
    ("check",),
    ("replay-dead-letters",),
    ("erase", "p1"),
    ("dead-letter-unreadable", "--partition", "0", "--offset", "0"),
    ("records",),
]


@pytest.mark.parametrize("system", ["fide", "tornelo"])
def test_a_per_period_system_has_its_names_and_config_shows_them(system: str) -> None:
    done = run("config", RATING_SYSTEM=system)
    assert done.returncode == 0, done.stderr
    values = shown(done)
    assert values["RATING_TOPIC_RATINGS"] == f"arena.rating.changed.v2.{system}"
    assert values["RATING_REDIS_KEY_PREFIX"] == f"rating-{system}:"
    assert values["RATING_TOPIC_GAMES"] == "arena.game.finished.v1"


@pytest.mark.parametrize("system", ["fide", "tornelo"])
@pytest.mark.parametrize(
    "command",
    [c for c in SERVICE_COMMANDS if c[0] != "run"] + [("close-period", "--status")],
    ids=lambda c: "-".join(c[:2]) if c[0] == "close-period" else c[0],
)
def test_a_per_period_system_is_taken_by_every_command_of_the_service(system: str, command: tuple[str, ...]) -> None:
    """fide and tornelo are served: no command refuses them at start; each goes on to reach Kafka
    or Redis (the addresses lead nowhere: it gives up after RATING_COMMAND_RETRY_SECONDS with status
    1, or stops at an argument of its own). `run` and the close commands are tested against a real
    stack (tests/integration/stream/test_fide.py, test_tornelo.py)."""
    done = run(*command, RATING_SYSTEM=system, RATING_COMMAND_RETRY_SECONDS="0.2")
    assert "offline only" not in done.stderr, done.stderr
    assert "RATING_SYSTEM" not in done.stderr, done.stderr
    assert done.returncode in (1, 2), done.stderr
