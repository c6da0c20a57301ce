"""A sixth rating system costs one folder (docs/adding-a-system.md): the toy flat-K Elo of
tests/outside/flat_elo/, defined entirely in the tests and loaded by
`RATING_SYSTEM=tests.outside.flat_elo.spec:SPEC`, goes through the whole contract suite, `rate`
and one `run` against the real broker and Redis, each a process of its own, as a user's system
would; its events are in no published document (tests/unit/contract/test_events.py)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import commands
from tests.support.contract import VALID_GAME
from tests.support.kafka import read_topic
from tests.support.rate import REPO
from tests.support.rate import rate as rate_process
from tests.support.stack import Stack
from worker.systems.registry import BY_NAME

TOY = "tests.outside.flat_elo.spec:SPEC"
SEEDS = "player_id,category,rating,games\nalice,blitz,1600.00,10\n"


def game(n: int, white: str, black: str, result: str, **fields: Any) -> dict[str, Any]:
    return {**VALID_GAME, "event_id": f"ev-{n}", "game_id": f"g{n}", "white_id": white, "black_id": black,
            "result": result, **fields}  # fmt: skip


# Worked by hand, FIDE's table B (D 99-106: .64; D 4-10: .51), K = 20, everyone new at 1500.00:
# g1 alice 1600.00 beats bob (new): D 100, alice +20 x .36 = +7.20, bob -7.20 -> 1492.80;
# g2 casual (rated false): nothing; g3 bob 1492.80 draws carol (new): D 7, carol (higher) expects
# .51: -0.20 -> 1499.80, bob +0.20 -> 1493.00; g4 a bullet game (1+0) carol wins over dave (new):
# D 0, +10.00 / -10.00 in bullet, carol's blitz rating untouched.
GAMES = [
    game(1, "alice", "bob", "1-0"),
    game(2, "alice", "bob", "0-1", rated=False),
    game(3, "bob", "carol", "1/2-1/2"),
    game(4, "carol", "dave", "1-0", time_control={"base_seconds": 60, "increment_seconds": 0}),
]
EXPECTED = [  # (player, category, kind, rating_after, delta, seq) in the order `rate` writes them
    ("alice", "blitz", "imported", "1600.00", None, 1),
    ("alice", "blitz", "rated_game", "1607.20", "7.20", 2),
    ("bob", "blitz", "rated_game", "1492.80", None, 1),  # a first game: no rating before, no delta
    ("bob", "blitz", "rated_game", "1493.00", "0.20", 2),
    ("carol", "blitz", "rated_game", "1499.80", None, 1),
    ("carol", "bullet", "rated_game", "1510.00", None, 1),
    ("dave", "bullet", "rated_game", "1490.00", None, 1),
]


def seen(values: list[bytes]) -> list[tuple[object, ...]]:
    events = [json.loads(v, parse_float=str) for v in values]
    assert {e["system"] for e in events} == {"flat-elo"}
    return [(e["player_id"], e["category"], e["kind"], e["rating_after"], e["delta"], e["seq"]) for e in events]


def with_repo(env: dict[str, str]) -> dict[str, str]:
    """The environment of a process that imports the toy system (the repository on its path)."""
    return {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_contract_suite_runs_over_the_outside_system_as_over_a_built_in_one() -> None:
    """Every test of the suite that runs per system runs for the toy, and those over every system
    (names that collide, what is published) take it among theirs; all pass."""
    env = with_repo({k: v for k, v in os.environ.items() if not k.startswith("RATING_")} | {"RATING_TEST_SYSTEM": TOY})
    suite = [sys.executable, "-m", "pytest", "tests/unit/contract", "-p", "no:cacheprovider", "-q"]
    # The toy's own tests and those over every system: none of a built-in system's own.
    toy = " and ".join(f"not {name}" for name in BY_NAME)

    def collected(keyword: str) -> list[str]:
        done = subprocess.run([*suite, "--collect-only", "-k", keyword], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=120, check=False)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return [line for line in done.stdout.splitlines() if "::" in line]

    per_system, chosen = collected("glicko2"), collected(toy)
    assert len(per_system) >= 10
    assert len([test for test in chosen if test.endswith("[flat-elo]")]) == len(per_system)
    assert len([test for test in chosen if "[" not in test]) >= 3  # over every system
    done = subprocess.run([*suite, "-k", toy], cwd=REPO, env=env, capture_output=True, text=True, timeout=540,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(rf"\b{len(chosen)} passed\b", done.stdout), done.stdout[-2000:]


def test_rate_rates_the_outside_system_exactly(tmp_path: Path) -> None:
    games, seeds, out, dlq = (tmp_path / name for name in ("games.jsonl", "seed.csv", "out.jsonl", "dlq.jsonl"))
    games.write_text("".join(json.dumps(g) + "\n" for g in GAMES) + "{not json\n")
    seeds.write_text(SEEDS)
    done = rate_process(games, "--seed", seeds, "--out", out, "--dlq", dlq, system=TOY,
                        settings={"PYTHONPATH": str(REPO)})  # fmt: skip
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert seen(out.read_bytes().splitlines()) == EXPECTED
    (letter,) = [json.loads(line) for line in dlq.read_text().splitlines()]
    assert (letter["line"], letter["error_kind"]) == (5, "invalid_json")


def test_an_outside_system_that_does_not_load_stops_a_command_with_one_line(tmp_path: Path) -> None:
    done = rate_process(tmp_path / "none.jsonl", system="tests.outside.flat_elo.spec:NOPE",
                        settings={"PYTHONPATH": str(REPO)})  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.decode().strip().splitlines() == [
        "rating-worker: error: setting RATING_SYSTEM: tests.outside.flat_elo.spec:NOPE: "
        "tests.outside.flat_elo.spec has no SystemSpec named NOPE"
    ]


@pytest.mark.integration
@pytest.mark.timeout(240)
async def test_a_worker_runs_the_outside_system_against_the_real_broker_and_redis(stack: Stack) -> None:
    """`import` seeds it and `run` rates the same games as `rate`, the same bytes, under its own
    names: its owner key on the prefix, its `system` in every event."""
    await stack.create_topics(games=1, ratings=4)
    seeds = stack.tmp / "seed.csv"
    seeds.write_text(SEEDS)
    prefix = "toy-flat-elo:"
    env = with_repo(stack.env(system=TOY, redis_key_prefix=prefix))
    imported = commands.run([sys.executable, "-m", "worker", "import", str(seeds)], env=env, cwd=REPO,
                              capture_output=True, timeout=120, check=False)  # fmt: skip
    assert imported.returncode == 0, imported.stderr.decode(errors="replace")
    lines = [json.dumps(g).encode() for g in GAMES]
    await stack.produce(lines)
    end = await stack.end_offsets(len(lines))
    stack.workers.append(stack.processes.worker(env, stack.tmp / "worker-0.log", REPO))
    await stack.wait_committed(end, timeout=120)
    published = await read_topic(stack.broker.bootstrap, stack.ratings_topic, len(EXPECTED), timeout=60)
    values = [r.value for r in published if r.value is not None]
    # The topic's partitions interleave the ratings: each rating's events in order, as `rate` writes them.
    assert sorted(seen(values), key=lambda e: (e[0], e[1], e[5])) == EXPECTED
    assert stack.redis_client().get(f"{prefix}system") == b"flat-elo"
