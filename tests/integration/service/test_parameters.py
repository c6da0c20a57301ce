"""The parameters on a live prefix (docs/systems/tornelo.md, "Changing the parameters"): tornelo's
`RATING_TORNELO_K` and `RATING_TORNELO_BONUS_FACTOR`, recorded beside `{prefix}system` by the
first command that writes there (`{prefix}parameters`, their parsed values in one form, so that
`0.5` and `0.50`, or K's JSON spelled otherwise, are equal); a command started with other values
stops at start (status 2, one line naming both); `switch-over` records the values its rebuild was
made with on the live prefix. Systems that declare no parameters record none.

Tornelo's check is called here as every command calls it (`own_prefix`, with the settings'
`parameters()`), on the test's own Redis; the commands themselves, and the change by `rebuild`
and `switch-over`, run for the toy outside system that records tornelo's two settings as its
parameters (`tests.outside.flat_elo.spec:RECORDING`: no tournament ends to follow, one Redis and a
broker are all it needs)."""

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from tests.support import commands
from tests.support.backends import RedisService
from tests.support.rate import REPO, rate
from tests.support.stack import Stack
from worker import cli
from worker.operate.redis_ops import connected
from worker.operate.switch_over import NotReady, switch_over
from worker.service.owner import ParametersDiffer, PrefixOwned, own_prefix, record_parameters
from worker.settings import WorkerSettings

pytestmark = pytest.mark.integration

PREFIX = "rating-tornelo:"  # tornelo's default prefix
DEFAULTS = 'RATING_TORNELO_K={"rapid": [20, 10], "blitz": [20, 10], "bullet": [10, 5]} RATING_TORNELO_BONUS_FACTOR=1.00'
K = '{"rapid": [20, 10], "blitz": [20, 10], "bullet": [10, 5]}'  # RATING_TORNELO_K's default
OTHER_K = '{"rapid": [30, 15], "blitz": [20, 10], "bullet": [10, 5]}'
WHY = (
    "ratings computed with other values would silently mix with those computed with the recorded ones; start "
    'it with the recorded values, or change them as the system\'s page says ("Changing the parameters": '
    "`rebuild` with the new values into another prefix, then `switch-over`)"
)


def refusal(prefix: str, recorded: str, given: str) -> str:
    """The one line of a command started with other values than `prefix` records."""
    return (
        f"{recorded} were recorded on prefix {prefix!r} ({prefix}parameters); this command was started with {given}: "
        + WHY
    )


def settings_of(
    redis: RedisService,
    system: str = "tornelo",
    prefix: str = PREFIX,
    tornelo_k: str = K,
    tornelo_bonus_factor: str = "1.00",
) -> WorkerSettings:
    """A deployment's settings on the test's Redis (tornelo's defaults unless given)."""
    return WorkerSettings(
        system=system,
        redis_url=redis.url,
        redis_key_prefix=prefix,
        command_retry_seconds=5,
        tornelo_k=tornelo_k,
        tornelo_bonus_factor=tornelo_bonus_factor,
    )


async def own(r: Redis, settings: WorkerSettings, write: bool = True) -> None:
    """The check every command that uses Redis makes at start (`own_prefix`, as the commands call it)."""
    await own_prefix(r, settings.redis_key_prefix, settings.spec().name, write=write, parameters=settings.parameters())


@pytest.fixture
async def r(redis_server: RedisService) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_server.url)
    yield client
    await client.aclose()


async def test_the_first_write_records_the_parsed_values_and_the_same_values_spelled_otherwise_pass(
    redis_server: RedisService, r: Redis
) -> None:
    reordered = '{"bullet":[10,5],  "rapid":[20,10],"blitz":[20, 10]}'
    first = settings_of(redis_server, tornelo_k=reordered, tornelo_bonus_factor="1")
    await own(r, first, write=False)  # a command that only reads records nothing
    assert await r.get(f"{PREFIX}system") is None
    assert await r.get(f"{PREFIX}parameters") is None
    await own(r, first)
    assert await r.get(f"{PREFIX}system") == b"tornelo"
    assert await r.get(f"{PREFIX}parameters") == DEFAULTS.encode()  # in one form, whatever the spelling
    for factor in ("1", "1.0", "1.00"):
        for k in (reordered, K):
            for write in (False, True):
                await own(r, settings_of(redis_server, tornelo_k=k, tornelo_bonus_factor=factor), write)
    await own(r, settings_of(redis_server))  # the defaults are these values
    assert await r.get(f"{PREFIX}parameters") == DEFAULTS.encode()


async def test_half_and_fifty_hundredths_are_the_same_factor(redis_server: RedisService, r: Redis) -> None:
    await own(r, settings_of(redis_server, tornelo_bonus_factor="0.5"))
    recorded = DEFAULTS.replace("=1.00", "=0.50")
    assert await r.get(f"{PREFIX}parameters") == recorded.encode()
    await own(r, settings_of(redis_server, tornelo_bonus_factor="0.50"))
    with pytest.raises(ParametersDiffer) as refused:
        await own(r, settings_of(redis_server, tornelo_bonus_factor="0.51"), write=False)
    assert str(refused.value) == refusal(PREFIX, recorded, DEFAULTS.replace("=1.00", "=0.51"))


def test_another_k_stops_the_command_at_start_with_one_line_naming_both_values(redis_server: RedisService) -> None:
    """Through the command line's error path (`_one_shot`: status 2), before anything is written."""
    recorded = settings_of(redis_server)
    cli._one_shot(recorded, lambda: _own_anew(recorded))  # the command line's own loop, as every step here
    other = settings_of(redis_server, tornelo_k=OTHER_K)
    given = DEFAULTS.replace('"rapid": [20, 10]', '"rapid": [30, 15]')
    for write in (True, False):

        async def command(settings: WorkerSettings = other, write: bool = write) -> None:
            async with connected(settings) as client:
                await own(client, settings, write)

        with pytest.raises(cli.UsageError) as refused:
            cli._one_shot(other, command)
        assert str(refused.value) == refusal(PREFIX, DEFAULTS, given)
        assert "\n" not in str(refused.value)
    assert cli._one_shot(recorded, lambda: _keys(recorded)) == {
        f"{PREFIX}system": "tornelo",
        f"{PREFIX}parameters": DEFAULTS,
    }


def test_another_bonus_factor_stops_the_command_at_start(redis_server: RedisService) -> None:
    first = settings_of(redis_server, tornelo_bonus_factor="0.75")
    cli._one_shot(first, lambda: _own_anew(first))
    other = settings_of(redis_server, tornelo_bonus_factor="1.5")

    async def command() -> None:
        async with connected(other) as client:
            await own(client, other)

    with pytest.raises(cli.UsageError) as refused:
        cli._one_shot(other, command)
    assert str(refused.value) == refusal(PREFIX, DEFAULTS.replace("=1.00", "=0.75"), DEFAULTS.replace("=1.00", "=1.50"))


async def _own_anew(settings: WorkerSettings) -> None:
    async with connected(settings) as client:
        await own(client, settings)


async def _keys(settings: WorkerSettings) -> dict[str, str]:
    async with connected(settings) as client:
        found = [k async for k in client.scan_iter("*")]
        values = await client.mget(found)
        return {k.decode(): v.decode() if isinstance(v, bytes) else str(v) for k, v in zip(found, values, strict=True)}


async def test_the_prefix_of_another_system_is_not_concerned(redis_server: RedisService, r: Redis) -> None:
    """Tornelo's values on its prefix change nothing on another system's; a tornelo command on that
    prefix is refused as before (another system's), and leaves no values there."""
    await own(r, settings_of(redis_server, tornelo_k=OTHER_K))
    fide = settings_of(redis_server, system="fide", prefix="prod:fide:")
    await own(r, fide)
    assert await r.get("prod:fide:system") == b"fide"
    with pytest.raises(PrefixOwned) as refused:
        await own(r, settings_of(redis_server, prefix="prod:fide:"))
    assert not isinstance(refused.value, ParametersDiffer)
    assert "belongs to the rating system fide" in str(refused.value)
    assert await r.get("prod:fide:parameters") is None
    await own(r, settings_of(redis_server, prefix="rating-tornelo-2:"))  # a prefix of its own: its values
    assert await r.get("rating-tornelo-2:parameters") == DEFAULTS.encode()


@pytest.mark.parametrize(("system", "prefix"), [("arena", "rating:"), ("fide", "rating-fide:")])
async def test_systems_without_parameters_record_none_and_take_any_values(
    redis_server: RedisService, r: Redis, system: str, prefix: str
) -> None:
    first = settings_of(redis_server, system=system, prefix=prefix)
    assert first.parameters() is None
    await own(r, first)
    other = settings_of(redis_server, system=system, prefix=prefix, tornelo_k=OTHER_K, tornelo_bonus_factor="0")
    await own(r, other)
    assert await r.get(f"{prefix}system") == system.encode()
    assert await r.get(f"{prefix}parameters") is None
    assert [k async for k in r.scan_iter("*")] == [f"{prefix}system".encode()]


async def test_switch_over_records_the_new_values_on_the_live_prefix(redis_server: RedisService, r: Redis) -> None:
    """It checks its rebuild's prefix against its values and not the live one, which holds the old
    values until its checks have passed; `record_parameters` then sets the new ones there."""
    old = settings_of(redis_server)
    new = settings_of(redis_server, tornelo_k=OTHER_K)
    rebuild = new.spec().rebuild_prefix
    await own(r, old)
    await own(r, settings_of(redis_server, prefix=rebuild, tornelo_k=OTHER_K))  # what `rebuild` records
    new_values = DEFAULTS.replace('"rapid": [20, 10]', '"rapid": [30, 15]')
    # Its values are not the rebuild's: refused before anything.
    with pytest.raises(ParametersDiffer) as refused:
        await switch_over(old, rebuild, print)
    assert str(refused.value) == refusal(rebuild, new_values, DEFAULTS)
    # With the rebuild's: not refused for the live prefix's old values; the next check (no rebuild
    # was really made) stops it before its writes, which leaves the old values live.
    with pytest.raises(NotReady, match="no rebuild under"):
        await switch_over(new, rebuild, print)
    assert await r.get(f"{PREFIX}parameters") == DEFAULTS.encode()
    await record_parameters(r, PREFIX, new.parameters())  # where its writes start
    assert await r.get(f"{PREFIX}parameters") == new_values.encode()
    await own(r, new)
    with pytest.raises(ParametersDiffer):
        await own(r, old)
    await record_parameters(r, "rating:", None)  # a system without parameters: nothing
    assert await r.get("rating:parameters") is None


RECORDING = "tests.outside.flat_elo.spec:RECORDING"  # a served system recording tornelo's two settings
SEEDS = "player_id,category,rating,games\nalice,blitz,1600.00,10\n"


@pytest.mark.timeout(240)
async def test_the_commands_check_the_values_and_the_change_is_rebuild_then_switch_over(stack: Stack) -> None:
    """The procedure of docs/systems/tornelo.md, through the commands, on a system the service runs."""
    await stack.create_topics(games=1, ratings=1)
    seeds = stack.tmp / "seed.csv"
    seeds.write_text(SEEDS)
    live, rebuilt = "rating-flat-elo:", "rating-flat-elo-rebuild:"
    new_values = DEFAULTS.replace('"rapid": [20, 10]', '"rapid": [30, 15]')
    r = stack.redis_client()

    def run(*args: str, **settings: object) -> tuple[int, str]:
        env = stack.env(system=RECORDING, log_level="error", command_retry_seconds=5, **settings)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        done = commands.run([sys.executable, "-m", "worker", *args], env=env, cwd=REPO, capture_output=True,
                            text=True, timeout=120, check=False)  # fmt: skip
        return done.returncode, done.stderr

    assert run("import", str(seeds))[0] == 0  # with the defaults
    assert r.get(f"{live}parameters") == DEFAULTS.encode()
    before = {k: r.dump(k) for k in r.scan_iter("*")}
    given = json.dumps(json.loads(OTHER_K), separators=(",", ":"))  # spelled otherwise: the same values
    for command in (("records", "compact"), ("import", str(seeds), "--force"), ("restore", "--force"), ("records",)):
        assert run(*command, tornelo_k=given) == (
            2,
            f"rating-worker: error: {refusal(live, DEFAULTS, new_values)}\n",
        ), command
    assert {k: r.dump(k) for k in r.scan_iter("*")} == before  # nothing written
    # The change: `rebuild` with the new values into another prefix (not refused by the live
    # prefix's), then `switch-over` with them; the workers then start with the new values only.
    status, stderr = run("rebuild", "--seed", str(seeds), tornelo_k=OTHER_K)
    assert status == 0, stderr
    assert r.get(f"{rebuilt}parameters") == new_values.encode()
    assert r.get(f"{live}parameters") == DEFAULTS.encode()
    assert run("switch-over") == (2, f"rating-worker: error: {refusal(rebuilt, new_values, DEFAULTS)}\n")
    status, stderr = run("switch-over", tornelo_k=OTHER_K)
    assert status == 0, stderr
    assert r.get(f"{live}parameters") == new_values.encode()
    assert run("records", tornelo_k=given)[0] == 0
    assert run("records") == (2, f"rating-worker: error: {refusal(live, new_values, DEFAULTS)}\n")
    # A rebuild prefix is cleared before it is rebuilt: its earlier values do not refuse another rebuild.
    status, stderr = run("rebuild", "--seed", str(seeds), "--force")
    assert status == 0, stderr
    assert r.get(f"{rebuilt}parameters") == DEFAULTS.encode()


async def test_rate_keeps_no_state_and_takes_any_values(redis_server: RedisService, tmp_path: Path) -> None:
    """`rate` (in memory) takes values other than a live prefix's, and leaves the Redis alone."""
    await _own_anew(settings_of(redis_server))
    seed = tmp_path / "seed.csv"
    seed.write_text("player_id,category,rating,rated_games,k_modifier\nA,rapid,1800,40,\nB,rapid,2000,40,\n")
    games = tmp_path / "games.jsonl"
    game = {"event_id": "e-g1", "game_id": "g1", "finished_at": "2026-11-10T12:00:00Z", "rated": True,
            "time_control": {"base_seconds": 900, "increment_seconds": 0}, "white_id": "A", "black_id": "B",
            "result": "1-0", "termination": "checkmate", "tournament_id": "T1"}  # fmt: skip
    games.write_text(json.dumps(game) + '\n{"control":"close","period":"T1"}\n')
    settings = {"RATING_REDIS_URL": redis_server.url, "RATING_TORNELO_K": OTHER_K}
    done = rate(games, "--seed", seed, "--out", tmp_path / "out.jsonl", system="tornelo", settings=settings)
    assert done.returncode == 0, done.stderr
    # A + 0.759747 x 30 = 22.79 -> +23: its K, not the recorded one.
    close = json.loads((tmp_path / "out.jsonl").read_text().splitlines()[-2])
    assert (close["player_id"], close["delta"], close["detail"]["k_factor"]) == ("A", 23.0, 30)
    assert await _keys(settings_of(redis_server)) == {
        f"{PREFIX}system": "tornelo",
        f"{PREFIX}parameters": DEFAULTS,
    }


def test_the_line_on_tornelos_page_is_the_commands() -> None:
    page = (REPO / "docs/systems/tornelo.md").read_text()
    given = DEFAULTS.replace('"rapid": [20, 10]', '"rapid": [30, 15]')
    assert f"\nrating-worker: error: {refusal(PREFIX, DEFAULTS, given)}\n" in page
