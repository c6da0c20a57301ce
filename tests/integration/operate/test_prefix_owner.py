"""`{prefix}system`: the rating system that owns a key prefix. The first command that writes
there records its system; a command of another system stops at start (status 2, one line),
before it joins a group or writes anything; a prefix holding keys without the owner key is the
arena's (it predates the key). Two deployments' prefixes never nest: a command stops the same
way on a prefix that is the start of another deployment's owned prefix, or starts with one."""

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
import redis
import redis.asyncio

from tests.support import commands
from tests.support.kafka import read_topic
from tests.support.stack import Stack
from worker.embedded.traffic import traffic
from worker.service.owner import own_prefix
from worker.systems.registry import BY_NAME

pytestmark = pytest.mark.integration

SEED = Path(__file__).resolve().parents[3] / "samples/seed.csv"
REFUSED = (
    "rating-worker: error: RATING_REDIS_KEY_PREFIX=rating: belongs to the rating system uscf-cc "
    "(rating:system), not arena: each deployment needs a prefix of its own\n"
)


def run(stack: Stack, *args: str, **settings: object) -> subprocess.CompletedProcess[str]:
    return commands.run(
        [sys.executable, "-m", "worker", *args],
        env=stack.env(log_level="error", command_retry_seconds=5, **settings),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def run_async(stack: Stack, *args: str, **settings: object) -> tuple[int | None, str]:
    """`run`, as a process of its own awaited on the test's loop: its status and stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "worker",
        *args,
        env=stack.env(log_level="error", command_retry_seconds=5, **settings),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        _, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    finally:  # never left behind, even when the test is interrupted here
        if process.returncode is None:
            process.kill()
            await process.wait()
    return process.returncode, stderr.decode()


async def test_the_first_write_records_the_system_and_the_prefix_of_another_stops_every_command(
    stack: Stack,
) -> None:
    await stack.create_topics(games=1, ratings=2)
    r = stack.redis_client()
    assert r.get("rating:system") is None
    assert stack.import_seed(SEED).returncode == 0
    assert r.get("rating:system") == b"arena"

    r.set("rating:system", "uscf-cc")  # as if a uscf-cc deployment had been given this prefix
    before = {k: r.dump(k) for k in r.scan_iter("*")}
    commands = [("import", str(SEED), "--force"), ("restore", "--force"), ("erase", "p00000"), ("run",)]
    commands += [("switch-over",), ("records", "compact")]
    for command in commands:
        done = run(stack, *command)
        assert (done.returncode, done.stderr) == (2, REFUSED), command
    assert {k: r.dump(k) for k in r.scan_iter("*")} == before  # nothing written
    # Nothing produced either (no tombstone, no event beyond the first import's).
    published = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1)
    assert all(record.value is not None for record in published)
    assert await stack.committed(1) == {0: 0}  # the worker never joined its group to commit


async def test_a_prefix_with_keys_but_no_owner_is_the_arenas(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    r = stack.redis_client()
    r.set("rating:s:p1/blitz", b"an older release's state")
    # Its own keys whose names end in `system` are no other deployment's owner key: the legacy
    # record of a game whose id ends so (a digest), the watermarks of a topic named so (a hash).
    r.set("rating:g:filesystem", b"0123456789abcdef")
    r.hset("rating:w:games.system", "0", "12")
    done = run(stack, "records")  # reads only: claims nothing
    assert done.returncode == 0, done.stderr
    assert r.get("rating:system") is None
    r.set("legacy:s:p1/blitz", b"an older release's state")  # and another system stops on such a prefix
    refused = run(stack, "records", "compact", system="glicko2", redis_key_prefix="legacy:")
    assert (refused.returncode, refused.stderr) == (
        2,
        "rating-worker: error: RATING_REDIS_KEY_PREFIX=legacy: belongs to the rating system arena "
        "(legacy:system), not glicko2: each deployment needs a prefix of its own\n",
    )
    assert r.get("legacy:system") is None
    assert stack.import_seed(SEED).returncode == 0
    assert r.get("rating:system") == b"arena"


async def test_rebuild_never_clears_a_prefix_it_does_not_own(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    r = stack.redis_client()
    r.set("rebuilt:system", "uscf-cc")
    r.set("rebuilt:s:p1/correspondence", b"another system's state")
    done = run(stack, "rebuild", "--prefix", "rebuilt:", "--force", "--seed", str(SEED))
    assert (done.returncode, done.stderr) == (
        2,
        "rating-worker: error: --prefix=rebuilt: belongs to the rating system uscf-cc (rebuilt:system), not "
        "arena: each deployment needs a prefix of its own\n",
    )
    assert r.get("rebuilt:s:p1/correspondence") == b"another system's state"  # nothing cleared
    # Another system's default prefix is refused before Redis is even asked.
    done = run(stack, "rebuild", "--prefix", "rating-uscf-cc:", "--force", "--seed", str(SEED))
    assert done.returncode == 2
    assert "overlaps the key prefix 'rating-uscf-cc:' of the rating system uscf-cc" in done.stderr


GLICKO2 = "prod:glicko2:"  # a glicko2 deployment's prefix, as in production


def snapshot(r: redis.Redis) -> dict[bytes, bytes | None]:
    """Every key of the Redis and its serialized value."""
    return {k: r.dump(k) for k in r.scan_iter("*")}


def glicko2_deployment(stack: Stack) -> dict[bytes, bytes | None]:
    """A glicko2 deployment under `prod:glicko2:`, seeded by its own `import`: the Redis's keys."""
    seed = stack.tmp / "glicko2-seed.csv"
    seed.write_text(traffic(BY_NAME["glicko2"])(20, seed=26).seed_csv())
    done = run(stack, "import", str(seed), system="glicko2", redis_key_prefix=GLICKO2)
    assert done.returncode == 0, done.stderr
    keys = snapshot(stack.redis_client())
    assert keys[f"{GLICKO2}system".encode()] is not None
    assert sum(k.startswith(f"{GLICKO2}s:".encode()) for k in keys) >= 10
    return keys


def nesting(setting: str, prefix: str, relation: str, other: str, system: str) -> str:
    return (
        f"rating-worker: error: {setting}={prefix} {relation} {other}, the key prefix of a {system} deployment "
        f"({other}system): a prefix must not be the start of another deployment's, nor start with one; "
        "choose another\n"
    )


async def test_an_arena_rebuild_at_the_start_of_a_glicko2_prefix_refuses_and_clears_nothing(stack: Stack) -> None:
    """Issue 26, item 5: `rebuild --prefix prod:g --force` of the arena cleared every key of the
    glicko2 deployment under `prod:glicko2:` and claimed `prod:gsystem`."""
    await stack.create_topics(games=1, ratings=2)
    before = glicko2_deployment(stack)
    r = stack.redis_client()
    for force in (["--force"], []):  # not told to use --force either: the keys are not its own
        done = run(stack, "rebuild", "--prefix", "prod:g", *force, "--seed", str(SEED))
        assert (done.returncode, done.stderr) == (
            2,
            nesting("--prefix", "prod:g", "is the start of", GLICKO2, "glicko2"),
        ), force
    assert snapshot(r) == before  # every glicko2 key as it was, and no `prod:gsystem` claimed


async def test_every_command_refuses_a_prefix_nesting_with_another_deployments(stack: Stack) -> None:
    await stack.create_topics(games=1, ratings=2)
    before = glicko2_deployment(stack)
    r = stack.redis_client()
    every = [("import", str(SEED), "--force"), ("restore", "--force"), ("erase", "p00000"), ("run",)]
    every += [("switch-over",), ("records", "compact"), ("records",)]
    longer = nesting("RATING_REDIS_KEY_PREFIX", "prod:g", "is the start of", GLICKO2, "glicko2")
    cases: list[tuple[dict[str, str], list[tuple[str, ...]], str]] = [
        ({"redis_key_prefix": "prod:g"}, every, longer),
        # A deployment of the same system is another deployment still.
        ({"redis_key_prefix": "prod:g", "system": "glicko2"}, [("records", "compact")], longer),
        (
            {"redis_key_prefix": f"{GLICKO2}arena:"},
            [("import", str(SEED)), ("run",)],
            nesting("RATING_REDIS_KEY_PREFIX", f"{GLICKO2}arena:", "starts with", GLICKO2, "glicko2"),
        ),
        (
            {"redis_key_prefix": "prod:"},
            [("import", str(SEED)), ("restore", "--force")],
            nesting("RATING_REDIS_KEY_PREFIX", "prod:", "is the start of", GLICKO2, "glicko2"),
        ),
        # The rebuild's prefix of a switch-over, named as the operator gave it.
        (
            {},
            [("switch-over", "--prefix", "prod:g")],
            nesting("--prefix", "prod:g", "is the start of", GLICKO2, "glicko2"),
        ),
    ]
    runs = [(command, settings, line) for settings, commands, line in cases for command in commands]
    # At once: each is refused at start, before it writes anything.
    done = await asyncio.gather(*(run_async(stack, *command, **settings) for command, settings, _ in runs))
    for (command, settings, line), (status, stderr) in zip(runs, done, strict=True):
        assert (status, stderr) == (2, line), (settings, command)
    assert snapshot(r) == before  # nothing written, cleared or claimed
    checked = commands.run(
        [sys.executable, "-m", "worker", "check"],
        env=stack.env(log_level="error", command_retry_seconds=5, redis_key_prefix="prod:g"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert checked.returncode == 1
    reported = longer.removeprefix("rating-worker: error: ").removesuffix("\n")
    assert f"failed   redis key prefix: {reported}\n" in checked.stdout, checked.stdout
    # Nothing produced either: the import's events and no tombstone.
    published = await read_topic(stack.broker.bootstrap, stack.ratings_topic, 1)
    assert all(record.value is not None for record in published)
    assert await stack.committed(1) == {0: 0}  # no worker joined its group


async def test_a_deployment_cannot_claim_a_prefix_under_an_owned_one(stack: Stack) -> None:
    """Refused from the newcomer's side, so that the deployment already there keeps running."""
    await stack.create_topics(games=1, ratings=2)
    assert run(stack, "import", str(SEED), redis_key_prefix="prod:").returncode == 0
    r = stack.redis_client()
    seed = stack.tmp / "glicko2-seed.csv"
    seed.write_text(traffic(BY_NAME["glicko2"])(20, seed=26).seed_csv())
    done = run(stack, "import", str(seed), system="glicko2", redis_key_prefix=GLICKO2)
    assert (done.returncode, done.stderr) == (
        2,
        nesting("RATING_REDIS_KEY_PREFIX", GLICKO2, "starts with", "prod:", "arena"),
    )
    assert not list(r.scan_iter(f"{GLICKO2}*"))
    assert run(stack, "records", redis_key_prefix="prod:").returncode == 0  # the arena's still works


async def test_a_deployment_confined_by_an_acl_to_its_prefix_still_claims_it(stack: Stack) -> None:
    """The owner keys of shorter prefixes lie outside its ACL: it cannot read them, and goes on."""
    await stack.create_topics(games=1, ratings=2)
    r = stack.redis_client()
    commands = ["+@read", "+@write", "+@scripting", "+ping", "+wait", "+info"]
    r.acl_setuser("glicko2-worker", enabled=True, passwords=["+g2-pw"], keys=["prod:glicko2:*"], commands=commands)
    seed = stack.tmp / "glicko2-seed.csv"
    seed.write_text(traffic(BY_NAME["glicko2"])(20, seed=26).seed_csv())
    confined = {"redis_username": "glicko2-worker", "redis_password": "g2-pw"}
    done = run(stack, "import", str(seed), system="glicko2", redis_key_prefix=GLICKO2, **confined)
    assert done.returncode == 0, done.stderr
    assert r.get(f"{GLICKO2}system") == b"glicko2"


async def test_an_owner_key_among_the_many_keys_of_a_prefix_without_owner_is_found(stack: Stack) -> None:
    """The scan matches every key until it meets one, then only owner keys' names: whichever
    step meets the nested owner key, it is found, and the predating keys do not make it the arena's."""
    r = stack.redis_client()
    r.mset({f"rating:s:p{i}/blitz": b"an older release's state" for i in range(20_000)})
    r.set("rating:glicko2:system", "glicko2")
    done = run(stack, "records", "compact")
    assert (done.returncode, done.stderr) == (
        2,
        nesting("RATING_REDIS_KEY_PREFIX", "rating:", "is the start of", "rating:glicko2:", "glicko2"),
    )
    assert r.get("rating:system") is None


async def test_two_processes_starting_on_a_new_prefix_at_once_both_take_it(stack: Stack) -> None:
    """A worker and the close follower started together on a new prefix: one claims it and
    writes keys while the other is between reading the owner key and scanning; the keys it then
    finds are of that claim, not of a prefix that predates the owner key (found when the second
    was refused as the arena's). Each round starts the second a little later, to meet the window."""
    client = redis.asyncio.Redis.from_url(stack.redis.url)
    try:
        for round_ in range(200):
            prefix = f"race{round_}:"

            async def first(prefix: str = prefix) -> None:
                await own_prefix(client, prefix, "glicko2", write=True)
                await client.set(f"{prefix}s:a/blitz", b"1|")  # a worker's first write

            async def second(prefix: str = prefix, delay: float = round_ % 50 * 0.00005) -> None:
                await asyncio.sleep(delay)
                await own_prefix(client, prefix, "glicko2", write=True)

            await asyncio.gather(first(), second())
    finally:
        await client.aclose()
