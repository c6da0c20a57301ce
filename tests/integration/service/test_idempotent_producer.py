"""RATING_KAFKA_IDEMPOTENT_PRODUCER against a broker that refuses producer ids (tansu answers
InitProducerId with an error): every command that produces stops at once with one line, status 2,
instead of retrying for ever as if Kafka were unreachable. (Against Apache Kafka, which grants them,
the containers backend runs the stream tests; see docs/development.md.)"""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import commands
from tests.support.stack import Stack

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]


def run(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return commands.run(
        [sys.executable, "-m", "worker", *args],
        env=stack.env(log_level="error", kafka_idempotent_producer=True, command_retry_seconds=30),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    "command",
    [("run",), ("import", str(REPO / "samples/seed.csv")), ("erase", "p00000")],
)
async def test_a_broker_that_refuses_the_idempotent_producer_stops_the_command_with_one_line(
    stack: Stack, command: tuple[str, ...]
) -> None:
    await stack.create_topics()
    done = run(stack, *command)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "refuses Kafka's idempotent producer" in lines[0] and "RATING_KAFKA_IDEMPOTENT_PRODUCER" in lines[0]
