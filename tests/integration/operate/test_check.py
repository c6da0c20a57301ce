"""`rating-worker check`, the preflight, against a real broker and redis-server set up right, then
wrongly in each way it names: one line per check on stdout (ok, failed, unknown), status 1 only
when a fatal check failed, and nothing created. tornelo's tournament topic too (in-process: the
command line still refuses tornelo in this release)."""

import sys
from dataclasses import dataclass

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.support import commands
from tests.support.stack import Stack
from worker.embedded.stack import free_port
from worker.operate.check import check_kafka
from worker.operate.topics import create as create_topics
from worker.settings import WorkerSettings

pytestmark = pytest.mark.integration

PARTITIONS = 3  # RATING_PARTITIONS in these tests


@dataclass(frozen=True)
class Checked:
    status: int
    lines: list[str]
    stderr: str

    def of(self, subject: str) -> str:
        """The line of `subject` (for example "redis maxmemory-policy"), without its status."""
        found = [line for line in self.lines if line.split(maxsplit=1)[1].startswith(f"{subject}: ")]
        assert len(found) == 1, (subject, self.lines)
        return found[0].split(maxsplit=1)[1]

    def statuses(self) -> dict[str, str]:
        return {line.split(maxsplit=1)[1].split(": ", 1)[0]: line.split(maxsplit=1)[0] for line in self.lines}


def run_check(stack: Stack, **settings: object) -> Checked:
    env = stack.env(partitions=PARTITIONS, log_level="error", command_retry_seconds=2, **settings)
    done = commands.run(
        [sys.executable, "-m", "worker", "check"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    return Checked(done.returncode, done.stdout.splitlines(), done.stderr)


def create_with_the_command(stack: Stack) -> None:
    done = commands.run(
        [sys.executable, "-m", "worker", "topics", "--replication", "1"],
        env=stack.env(partitions=PARTITIONS),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


async def create(stack: Stack, topics: dict[str, tuple[int, dict[str, str]]]) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=stack.broker.bootstrap)
    await admin.start()
    try:
        new = [NewTopic(name, n, 1, topic_configs=config) for name, (n, config) in topics.items()]
        await admin.create_topics(new)
    finally:
        await admin.close()


async def topic_names(stack: Stack) -> set[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=stack.broker.bootstrap)
    await admin.start()
    try:
        return set(await admin.list_topics())
    finally:
        await admin.close()


def topics(stack: Stack) -> list[str]:
    return [f"topic {stack.games_topic}", f"topic {stack.ratings_topic}", f"topic {stack.dlq_topic}"]


def with_settings(subjects: list[str]) -> list[str]:
    return [item for subject in subjects for item in (subject, f"{subject} settings")]


REDIS_CHECKS = ["redis", "redis key prefix", "redis lua cmsgpack", "redis maxmemory-policy", "redis durability"]


async def test_a_stack_set_up_right_passes_every_check(stack: Stack) -> None:
    create_with_the_command(stack)
    checked = run_check(stack)
    assert checked.statuses() == dict.fromkeys(with_settings(topics(stack)) + REDIS_CHECKS, "ok"), checked.lines
    assert checked.status == 0, checked.stderr
    assert checked.of(f"topic {stack.games_topic}") == f"topic {stack.games_topic}: 3 partitions, replication 1"
    assert "retention.ms=-1" in checked.of(f"topic {stack.games_topic} settings")
    assert "cleanup.policy=compact" in checked.of(f"topic {stack.ratings_topic} settings")
    assert checked.of("redis durability").endswith("appendonly yes, appendfsync always")
    assert "0 failed" in checked.stderr and "nothing fatal" in checked.stderr


async def test_missing_topics_fail_and_are_not_created(stack: Stack) -> None:
    before = await topic_names(stack)
    checked = run_check(stack)
    assert checked.status == 1
    for subject in topics(stack):
        assert checked.statuses()[subject] == "failed"
        assert "missing (`rating-worker topics` creates it)" in checked.of(subject)
    assert not any(line.startswith("ok") and "settings" in line for line in checked.lines)
    assert await topic_names(stack) == before  # describing them created none
    assert "3 fatal" in checked.stderr


async def test_a_partition_count_other_than_the_setting_fails(stack: Stack) -> None:
    await create(stack, {stack.games_topic: (2, {}), stack.ratings_topic: (PARTITIONS, {}), stack.dlq_topic: (5, {})})
    checked = run_check(stack)
    assert checked.status == 1
    assert checked.of(f"topic {stack.games_topic}").endswith("2 partitions, replication 1; RATING_PARTITIONS is 3")
    statuses = checked.statuses()
    assert statuses[f"topic {stack.games_topic}"] == "failed"
    assert statuses[f"topic {stack.ratings_topic}"] == "ok"
    assert statuses[f"topic {stack.dlq_topic}"] == "ok"  # the dead letters may have any number


async def test_topic_settings_other_than_the_commands_fail_without_stopping(stack: Stack) -> None:
    await create(
        stack,
        {
            "wrong-" + stack.games_topic: (PARTITIONS, {"retention.ms": "604800000"}),
            "wrong-" + stack.ratings_topic: (PARTITIONS, {"cleanup.policy": "delete", "retention.ms": "-1"}),
            "wrong-" + stack.dlq_topic: (1, {}),
        },
    )
    wrong = {
        "topic_games": "wrong-" + stack.games_topic,
        "topic_ratings": "wrong-" + stack.ratings_topic,
        "topic_dead_letters": "wrong-" + stack.dlq_topic,
    }
    checked = run_check(stack, **wrong)
    assert checked.status == 0, checked.lines  # not fatal
    games, ratings, dlq = (f"topic {name} settings" for name in wrong.values())
    statuses = checked.statuses()
    assert statuses[games] == statuses[ratings] == "failed"
    assert "retention.ms=604800000 (expected -1)" in checked.of(games)
    assert "cleanup.policy=delete (expected compact)" in checked.of(ratings)
    assert checked.of(games).endswith("(not fatal)")
    # A broker that reports only the settings given (as this one does) leaves them unknown.
    assert statuses[dlq] == "unknown"
    assert checked.of(dlq).endswith("the broker does not report min.insync.replicas, retention.ms")


async def test_an_evicting_and_not_durable_redis(stack: Stack) -> None:
    create_with_the_command(stack)
    with stack.redis_client() as redis:
        redis.config_set("maxmemory-policy", "allkeys-lru")
        redis.config_set("appendfsync", "everysec")
    checked = run_check(stack)
    assert checked.status == 1
    assert checked.statuses()["redis maxmemory-policy"] == "failed"
    assert checked.of("redis maxmemory-policy").startswith("redis maxmemory-policy: allkeys-lru: a full Redis")
    assert checked.statuses()["redis durability"] == "failed"
    assert "appendonly yes, appendfsync everysec" in checked.of("redis durability")
    assert "1 fatal" in checked.stderr
    with stack.redis_client() as redis:
        redis.config_set("maxmemory-policy", "noeviction")
    checked = run_check(stack)
    assert checked.status == 0, checked.lines  # durability alone is not fatal
    assert checked.statuses()["redis durability"] == "failed"


async def test_wait_replicas_without_the_replicas(stack: Stack) -> None:
    create_with_the_command(stack)
    with stack.redis_client() as redis:
        redis.config_set("appendonly", "no")
    checked = run_check(stack, redis_wait_replicas=1)
    assert checked.statuses()["redis durability"] == "failed"
    assert "RATING_REDIS_WAIT_REPLICAS=1, 0 replicas connected" in checked.of("redis durability")
    assert checked.status == 0


async def test_a_user_without_config_gets_unknown_and_one_without_scripts_fails(stack: Stack) -> None:
    create_with_the_command(stack)
    with stack.redis_client() as redis:
        redis.execute_command("ACL", "SETUSER", "confined", "on", ">secret", "~*", "&*", "+@all", "-config")
        redis.execute_command("ACL", "SETUSER", "scriptless", "on", ">secret", "~*", "&*", "+@all", "-@scripting")
    confined = run_check(stack, redis_username="confined", redis_password="secret")
    assert confined.status == 0, confined.lines
    assert confined.statuses()["redis maxmemory-policy"] == "unknown"
    assert confined.statuses()["redis durability"] == "unknown"
    assert "CONFIG GET refused" in confined.of("redis maxmemory-policy")
    scriptless = run_check(stack, redis_username="scriptless", redis_password="secret")
    assert scriptless.status == 1
    assert scriptless.statuses()["redis lua cmsgpack"] == "failed"
    assert "the state scripts cannot run" in scriptless.of("redis lua cmsgpack")


@pytest.mark.parametrize("missing", ["kafka", "redis"])
async def test_an_unreachable_dependency_fails_and_the_other_is_still_checked(stack: Stack, missing: str) -> None:
    create_with_the_command(stack)
    nowhere = f"127.0.0.1:{free_port()}"
    moved = {"kafka_bootstrap_servers": nowhere} if missing == "kafka" else {"redis_url": f"redis://{nowhere}/0"}
    checked = run_check(stack, **moved)
    assert checked.status == 1
    assert checked.statuses()[missing] == "failed"
    assert checked.of(missing).startswith(f"{missing}: unreachable: ")
    other = REDIS_CHECKS if missing == "kafka" else with_settings(topics(stack))
    assert {checked.statuses()[subject] for subject in other} == {"ok"}


async def test_a_prefix_of_another_system_fails_and_check_claims_nothing(stack: Stack) -> None:
    create_with_the_command(stack)
    with stack.redis_client() as redis:
        assert run_check(stack).statuses()["redis key prefix"] == "ok"
        assert redis.get("rating:system") is None  # read only
        redis.set("rating:system", "uscf-cc")
    checked = run_check(stack)
    assert checked.status == 1
    assert checked.of("redis key prefix").startswith(
        "redis key prefix: RATING_REDIS_KEY_PREFIX=rating: belongs to the rating system uscf-cc"
    )


def tornelo(stack: Stack) -> WorkerSettings:
    """A tornelo deployment on the stack's topics, with a tournament topic of its own."""
    return WorkerSettings(
        system="tornelo",
        kafka_bootstrap_servers=stack.broker.bootstrap,
        topic_games=stack.games_topic,
        topic_ratings=stack.ratings_topic,
        topic_dead_letters=stack.dlq_topic,
        topic_tournaments=f"tournaments-{stack.name}",
        partitions=PARTITIONS,
        command_retry_seconds=2,
    )


async def test_tornelos_tournament_topic_is_checked_one_partition_kept_for_good(stack: Stack) -> None:
    """Called in-process: this release's command line still refuses tornelo (not served yet)."""
    settings = tornelo(stack)
    subject = f"topic {settings.topic_tournaments}"
    missing = {f.subject: f for f in await check_kafka(settings)}
    assert missing[subject].stops and missing[subject].detail == "missing (`rating-worker topics` creates it)"
    await create_topics(settings, PARTITIONS, 1)
    findings = await check_kafka(settings)
    assert [(f.status, f.subject) for f in findings] == [
        ("ok", name) for name in with_settings([*topics(stack), subject])
    ]
    by_subject = {f.subject: f.detail for f in findings}
    assert by_subject[subject] == "1 partition, replication 1"
    assert by_subject[f"{subject} settings"] == "min.insync.replicas=1, retention.ms=-1, cleanup.policy=delete"


async def test_a_tournament_topic_of_two_partitions_is_fatal_and_one_not_kept_for_good_reported(stack: Stack) -> None:
    settings = tornelo(stack)
    await create_topics(settings, PARTITIONS, 1)
    two, short = f"two-{stack.name}", f"short-{stack.name}"
    await create(stack, {two: (2, {}), short: (1, {"retention.ms": "604800000", "cleanup.policy": "compact"})})
    found = {f.subject: f for f in await check_kafka(settings.model_copy(update={"topic_tournaments": two}))}
    assert found[f"topic {two}"].stops
    assert (
        found[f"topic {two}"].detail
        == "2 partitions, replication 1; tornelo's tournament ends need one, to be read in order"
    )
    found = {f.subject: f for f in await check_kafka(settings.model_copy(update={"topic_tournaments": short}))}
    assert found[f"topic {short}"].status == "ok"
    wrong = found[f"topic {short} settings"]
    assert (wrong.status, wrong.fatal) == ("failed", False)
    assert "retention.ms=604800000 (expected -1), cleanup.policy=compact (expected delete)" in wrong.detail
