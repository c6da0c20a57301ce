"""An `arena` and a `glicko2` deployment side by side (docs/operations.md, "Rating systems side by side"):
one input topic (the arena's games, which glicko2 reads too), one broker and one Redis; each its
own output topic, dead-letter topic, consumer group and key prefix (the systems' defaults,
`rating:` and `rating-glicko2:`), each seeded with its own file.

- each consumes every game (its group commits the end of the input);
- the arena's output is byte for byte what the arena publishes alone (`rate` of the arena on the
  same lines and seed, per key), its Redis where its last events are: the other deployment
  changes nothing of it;
- glicko2's output audits clean (every game recomputed from the states before it, Redis's states
  equal to the last events, every game recorded, no outbox left);
- neither system's commands run on the other's key prefix (status 2, one line, nothing written
  or produced): another system's default prefix is refused by the settings check, before Redis
  is asked; a custom prefix is refused by its owner key `{prefix}system`, written by the system
  that wrote there first.
"""

import asyncio
import json
import subprocess
import sys
import time

import pytest

from tests.support import commands
from tests.support.audit import audit, check_everything, read_store
from tests.support.kafka import read_topic
from tests.support.stack import Stack
from tests.support.systems import per_key, rate
from worker.embedded.stack import create_topics
from worker.systems.arena.traffic import ArenaSimulation
from worker.systems.glicko2.traffic import Glicko2Simulation

pytestmark = pytest.mark.integration

PLAYERS, GAMES, RANDOM_SEED = 150, 4000, 21


def arena_names(stack: Stack) -> dict[str, object]:
    """The arena deployment's own topics and group (glicko2 takes the stack's)."""
    return {
        "topic_ratings": f"arena-ratings-{stack.name}",
        "topic_dead_letters": f"arena-dlq-{stack.name}",
        "kafka_group_id": f"arena-group-{stack.name}",
    }


def command(stack: Stack, *args: str, **settings: object) -> subprocess.CompletedProcess[str]:
    return commands.run(
        [sys.executable, "-m", "worker", *args],
        env=stack.env(log_level="error", command_retry_seconds=5, **settings),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def wait_group(stack: Stack, group: str, end: dict[int, int], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    done: dict[int, int] = {}
    while time.monotonic() < deadline:
        done = await stack.committed(len(end), group=group)
        if all(done[p] >= end[p] for p in end):
            return
        await asyncio.sleep(0.3)
    raise AssertionError(f"{group}: offsets not committed in {timeout} s: {done} < {end}\n{stack.logs()[-3000:]}")


async def topic_sizes(stack: Stack, topics: list[str]) -> dict[str, int]:
    return {t: len(await read_topic(stack.broker.bootstrap, t, 0, timeout=10, idle=0.5)) for t in topics}


@pytest.mark.timeout(300)
async def test_an_arena_and_a_glicko2_deployment_on_one_input_topic_keep_to_their_own(stack: Stack) -> None:
    arena = arena_names(stack)
    await stack.create_topics(games=1, ratings=4)  # the input; glicko2's output and dead letters
    await create_topics(stack.broker.bootstrap, {str(arena["topic_ratings"]): 4, str(arena["topic_dead_letters"]): 1})
    sim = ArenaSimulation(PLAYERS, seed=RANDOM_SEED)
    arena_seed, glicko2_seed = stack.tmp / "seed.csv", stack.tmp / "seed-glicko2.csv"
    arena_seed.write_text(sim.seed_csv())
    glicko2_seed.write_text(Glicko2Simulation(PLAYERS, seed=RANDOM_SEED).seed_csv())  # the same players
    for path, settings in ((arena_seed, arena), (glicko2_seed, {"system": "glicko2"})):
        imported = stack.import_seed(path, **settings)
        assert imported.returncode == 0, imported.stderr.decode(errors="replace")
    lines = list(sim.game_lines(GAMES))
    await stack.produce(lines)
    end = await stack.end_offsets(len(lines))
    stack.start_worker(**arena)
    stack.start_worker(system="glicko2")
    await stack.wait_committed(end, timeout=120)  # glicko2's group (the stack's)
    await wait_group(stack, str(arena["kafka_group_id"]), end)
    assert all(w.poll() is None for w in stack.workers)

    # The arena: what it publishes alone, its Redis where its output is.
    expected, letters = rate(stack.tmp, "arena", arena_seed, lines)
    assert letters == []
    records = await read_topic(stack.broker.bootstrap, str(arena["topic_ratings"]), len(expected), timeout=60)
    values = [r.value for r in sorted(records, key=lambda r: (r.partition, r.offset)) if r.value is not None]
    assert len(values) == len(expected) > GAMES
    assert per_key(values) == per_key(expected)
    tally = audit(records)
    game_ids = {json.loads(line)["game_id"] for line in lines}
    stored = read_store(stack.redis.url, game_ids, "arena")
    assert stored.recorded == game_ids and not stored.unknown_records and not stored.outboxes
    assert stored.states == tally.final_states()
    assert not await read_topic(stack.broker.bootstrap, str(arena["topic_dead_letters"]), 0, timeout=5, idle=0.5)
    # glicko2: the same games, its own accounting.
    rated = await check_everything(stack, lines, "glicko2")
    # The arena's categories and counted games (docs/systems/glicko2.md, its opening paragraph): every game
    # with an arena event has glicko2's.
    assert tally.game_ids <= rated.game_ids
    r = stack.redis_client()
    assert (r.get("rating:system"), r.get("rating-glicko2:system")) == (b"arena", b"glicko2")

    for worker in stack.workers:
        worker.kill()
        worker.wait(timeout=10)
    # Custom prefixes, each claimed by the first system that wrote there.
    assert command(stack, "import", str(glicko2_seed), system="glicko2", redis_key_prefix="g2-own:").returncode == 0
    assert command(stack, "import", str(arena_seed), redis_key_prefix="arena-own:", **arena).returncode == 0
    assert (r.get("g2-own:system"), r.get("arena-own:system")) == (b"glicko2", b"arena")

    topics = [stack.ratings_topic, stack.dlq_topic, str(arena["topic_ratings"]), str(arena["topic_dead_letters"])]
    sizes = await topic_sizes(stack, topics)
    before = {k: r.dump(k) for k in r.scan_iter("*", count=5000)}

    def settings_line(prefix: str, owner: str, system: str) -> str:
        article = "an" if system == "arena" else "a"
        return (
            f"rating-worker: error: settings: RATING_REDIS_KEY_PREFIX={prefix} is the key prefix of the system "
            f"{owner}; {article} {system} deployment needs its own\n"
        )

    def owner_line(prefix: str, owner: str, system: str) -> str:
        return (
            f"rating-worker: error: RATING_REDIS_KEY_PREFIX={prefix} belongs to the rating system {owner} "
            f"({prefix}system), not {system}: each deployment needs a prefix of its own\n"
        )

    glicko2: dict[str, object] = {"system": "glicko2"}
    glicko2_commands = [("run",), ("import", str(glicko2_seed), "--force"), ("restore", "--force")]
    glicko2_commands += [("erase", "p00000"), ("records", "compact"), ("switch-over",)]
    arena_commands = [("run",), ("import", str(arena_seed), "--force"), ("restore", "--force")]
    arena_commands += [("erase", "p00000"), ("records", "compact"), ("switch-over",)]
    cases: list[tuple[dict[str, object], list[tuple[str, ...]], str]] = [
        # Another system's default prefix: the settings check, before Redis is asked.
        (glicko2 | {"redis_key_prefix": "rating:"}, glicko2_commands, settings_line("rating:", "arena", "glicko2")),
        (
            arena | {"redis_key_prefix": "rating-glicko2:"},
            arena_commands,
            settings_line("rating-glicko2:", "glicko2", "arena"),
        ),
        # A prefix another system claimed: its owner key.
        (glicko2 | {"redis_key_prefix": "arena-own:"}, glicko2_commands, owner_line("arena-own:", "arena", "glicko2")),
        (arena | {"redis_key_prefix": "g2-own:"}, arena_commands, owner_line("g2-own:", "glicko2", "arena")),
    ]
    for settings, each, refused in cases:
        for args in each:
            done = command(stack, *args, **settings)
            assert (done.returncode, done.stderr, done.stdout) == (2, refused, ""), (settings, args)
    # The settings check needs no Redis at all: the same line with none to be asked.
    nowhere = {"redis_url": "redis://127.0.0.1:9/0", "kafka_bootstrap_servers": "127.0.0.1:9"}
    for settings, _, refused in cases[:2]:
        done = command(stack, "erase", "p00000", **settings, **nowhere)
        assert (done.returncode, done.stderr) == (2, refused)

    assert {k: r.dump(k) for k in r.scan_iter("*", count=5000)} == before  # nothing written
    assert await topic_sizes(stack, topics) == sizes  # nothing produced
    assert await stack.committed(1) == end and await stack.committed(1, str(arena["kafka_group_id"])) == end
