"""`rating-worker topics` creates the three topics with their settings (tornelo's four)."""

import sys

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from tests.support import commands
from tests.support.stack import Stack
from worker.operate.topics import create
from worker.settings import WorkerSettings

pytestmark = pytest.mark.integration


async def test_topics_are_created_once_with_their_partitions(stack: Stack) -> None:
    env = stack.env()
    for expected in (b"created games-", b"none (all exist)"):
        done = commands.run(
            [sys.executable, "-m", "worker", "topics", "--partitions", "6", "--replication", "1"],
            env=env,
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert expected in done.stderr
    admin = AIOKafkaAdminClient(bootstrap_servers=stack.broker.bootstrap)
    await admin.start()
    try:
        described = {
            t["topic"]: len(t["partitions"])
            for t in await admin.describe_topics([stack.games_topic, stack.ratings_topic, stack.dlq_topic])
        }
    finally:
        await admin.close()
    assert described == {stack.games_topic: 6, stack.ratings_topic: 6, stack.dlq_topic: 1}


async def test_tornelo_gets_its_tournament_topic_with_one_partition_kept_for_good(stack: Stack) -> None:
    """Called in-process: this release's command line still refuses tornelo (not served yet)."""
    tournaments = f"tournaments-{stack.name}"
    settings = WorkerSettings(
        system="tornelo",
        kafka_bootstrap_servers=stack.broker.bootstrap,
        topic_games=stack.games_topic,
        topic_ratings=stack.ratings_topic,
        topic_dead_letters=stack.dlq_topic,
        topic_tournaments=tournaments,
        command_retry_seconds=20,
    )
    assert sorted(await create(settings, 3, 1)) == sorted(
        [stack.games_topic, stack.ratings_topic, stack.dlq_topic, tournaments]
    )
    assert await create(settings, 3, 1) == []  # left as they are
    admin = AIOKafkaAdminClient(bootstrap_servers=stack.broker.bootstrap)
    await admin.start()
    try:
        (described,) = await admin.describe_topics([tournaments])
        responses = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, tournaments)])
    finally:
        await admin.close()
    assert len(described["partitions"]) == 1
    entries = responses[0].to_object()["resources"][0]["config_entries"]
    config = {entry["config_names"]: entry["config_value"] for entry in entries}
    assert (config["retention.ms"], config["cleanup.policy"], config["min.insync.replicas"]) == ("-1", "delete", "1")
