"""A wrong setting stops `run` and `import` at start with one line naming it (status 2)."""

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("RATING_BATCH_SIZE", "0", b"RATING_BATCH_SIZE"),
        ("RATING_METRICS_PORT", "x", b"RATING_METRICS_PORT"),
        ("RATING_LOG_LEVEL", "loud", b"RATING_LOG_LEVEL"),
        ("RATING_IDEMPOTENCY_RETENTION_SECONDS", "-1", b"RATING_IDEMPOTENCY_RETENTION_SECONDS"),
        ("RATING_PUBLICATION_LEASE_SECONDS", "5", b"RATING_PUBLICATION_LEASE_SECONDS must be longer"),
        ("RATING_KAFKA_HEARTBEAT_INTERVAL_MS", "9000", b"RATING_KAFKA_HEARTBEAT_INTERVAL_MS"),
        ("RATING_TRAINING_RATING", "abc", b"RATING_TRAINING_RATING"),
    ],
)
@pytest.mark.parametrize("command", [["run"], ["import", "samples/seed.csv"]])
def test_a_wrong_setting_fails_at_start_with_one_line_naming_it(
    command: list[str], variable: str, value: str, named: bytes
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RATING_")}
    env[variable] = value
    done = subprocess.run(
        [sys.executable, "-m", "worker", *command], env=env, capture_output=True, timeout=30, check=False
    )
    assert done.returncode == 2
    assert done.stderr.count(b"\n") == 1, done.stderr
    assert named in done.stderr
