"""`rating-worker topics` creates the three topics with their settings."""

import sys

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from tests.support import commands
from tests.support.stack import Stack

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
