"""What the stream tests of each rating system share: a simulation seeded through `import`, the
same input replayed offline by `rating-worker rate`, and events grouped by rating."""

import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.support import commands
from tests.support.audit import read_store
from tests.support.rate import rate as rate_process
from tests.support.stack import Stack
from worker.embedded.traffic import traffic
from worker.store import keys
from worker.systems.arena.traffic import ArenaSimulation
from worker.systems.registry import BY_NAME


def seeded(stack: Stack, system: str, players: int, seed: int) -> tuple[ArenaSimulation, Path]:
    """The system's simulation of `players`, its seeding file imported into the stack's Redis."""
    sim = traffic(BY_NAME[system])(players, seed=seed)
    path = stack.tmp / "seed.csv"
    path.write_text(sim.seed_csv())
    imported = stack.import_seed(path, system=system)
    assert imported.returncode == 0, imported.stderr.decode(errors="replace")
    return sim, path


def rate(tmp: Path, system: str, seed: Path, lines: list[bytes]) -> tuple[list[bytes], list[dict[str, object]]]:
    """`rating-worker rate` of `system` (no other RATING_* variable) on the seed file and lines:
    its events and dead letters."""
    games, out, dlq = tmp / "games.jsonl", tmp / "out.jsonl", tmp / "dlq.jsonl"
    games.write_bytes(b"".join(line + b"\n" for line in lines))
    done = rate_process(games, "--seed", seed, "--out", out, "--dlq", dlq, system=system, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    letters = [json.loads(line) for line in dlq.read_text().splitlines()]
    return out.read_bytes().splitlines(), letters


def per_key(values: list[bytes]) -> dict[str, list[bytes]]:
    """Each rating's events in the order they come (a key's order is kept on the output topic)."""
    found: dict[str, list[bytes]] = defaultdict(list)
    for value in values:
        event = json.loads(value)
        found[f"{event['player_id']}/{event['category']}"].append(value)
    return dict(found)


def dead_letters_of(dlq: Path, bad: Sequence[tuple[object, str]], first_line: int) -> list[dict[str, Any]]:
    """`rate`'s dead-letter file, checked against the bad lines written from `first_line` on: one
    letter each, in order, `invalid_schema`, a one-line message naming what `bad` says, the raw line."""
    letters: list[dict[str, Any]] = [json.loads(text) for text in dlq.read_text(encoding="utf-8").splitlines()]
    assert [letter["line"] for letter in letters] == list(range(first_line, first_line + len(bad)))
    for letter, (value, named) in zip(letters, bad, strict=True):
        assert letter["error_kind"] == "invalid_schema", letter
        message = str(letter["error_message"])
        assert "\n" not in message and "\r" not in message, letter
        assert named in message, letter
        assert json.loads(str(letter["raw"])) == value
    return letters


def wipe_and_restore(stack: Stack, system: str, lines: list[bytes], at_least: int) -> None:
    """Kill the stack's workers, delete every state of `system`'s prefix (Redis lost them), run
    `rating-worker restore`, and check that it writes back exactly the states there were."""
    for worker in stack.workers:
        worker.kill()
        worker.wait(timeout=10)
    game_ids = {json.loads(line)["game_id"] for line in lines}
    before = read_store(stack.redis.url, game_ids, system).states
    r = stack.redis_client()
    lost = list(r.scan_iter(f"{keys.state_key(BY_NAME[system].names.redis_key_prefix, '')}*"))
    assert len(lost) == len(before) > at_least
    r.delete(*lost)
    done = commands.run(
        [sys.executable, "-m", "worker", "restore"],
        env=stack.env(system=system),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"restore: {len(before)} states written" in done.stderr
    assert read_store(stack.redis.url, game_ids, system).states == before
