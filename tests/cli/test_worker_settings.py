"""A wrong setting stops `run` and `import` at start with one line naming it (status 2)."""

import os
import sys

import pytest

from tests.support import commands

PASSWORD = "hunter2"  # in every RATING_REDIS_URL below: the error must never repeat it


def case(variable: str, value: str, named: bytes, **extra: str) -> object:
    """`variable=value` (with the `extra` variables) is refused by a message containing `named`."""
    shown = " ".join(f"{k}={v}" for k, v in {variable: value, **extra}.items())
    return pytest.param(variable, value, named, extra, id=shown)


@pytest.mark.parametrize(
    ("variable", "value", "named", "extra"),
    [
        case("RATING_BATCH_SIZE", "0", b"RATING_BATCH_SIZE"),
        case("RATING_METRICS_PORT", "x", b"RATING_METRICS_PORT"),
        case("RATING_LOG_LEVEL", "loud", b"RATING_LOG_LEVEL"),
        case("RATING_IDEMPOTENCY_RETENTION_SECONDS", "-1", b"RATING_IDEMPOTENCY_RETENTION_SECONDS"),
        case("RATING_PUBLICATION_LEASE_SECONDS", "5", b"RATING_PUBLICATION_LEASE_SECONDS must be longer"),
        case("RATING_KAFKA_HEARTBEAT_INTERVAL_MS", "9000", b"RATING_KAFKA_HEARTBEAT_INTERVAL_MS"),
        case("RATING_TRAINING_RATING", "abc", b"RATING_TRAINING_RATING"),
        # Malformed shapes: refused at start, not half way with a traceback.
        case("RATING_REDIS_URL", "nonsense", b"setting RATING_REDIS_URL: "),
        case("RATING_REDIS_URL", f"nonsense:{PASSWORD}", b"setting RATING_REDIS_URL: "),
        case("RATING_REDIS_URL", f"redis://:{PASSWORD}@h:x/0", b"setting RATING_REDIS_URL: has no valid port"),
        case("RATING_REDIS_URL", f"redis://:{PASSWORD}@h:70000/0", b"setting RATING_REDIS_URL: has no valid port"),
        case("RATING_REDIS_URL", f"redis://:{PASSWORD}@h:6379/abc", b"setting RATING_REDIS_URL: has a database"),
        case("RATING_REDIS_URL", f"http://:{PASSWORD}@h:6379", b"setting RATING_REDIS_URL: must start with redis://"),
        case("RATING_REDIS_URL", f"redis://:{PASSWORD}@/0", b"setting RATING_REDIS_URL: has no host"),
        case("RATING_REDIS_URL", f"redis://:{PASSWORD}@h:6379/0?db=x", b"setting RATING_REDIS_URL: has an option"),
        case("RATING_REDIS_SENTINELS", "foo", b"setting RATING_REDIS_SENTINELS: ", RATING_REDIS_WAIT_REPLICAS="1"),
        case("RATING_REDIS_SENTINELS", "h:99999", b"setting RATING_REDIS_SENTINELS: ", RATING_REDIS_WAIT_REPLICAS="1"),
        case("RATING_KAFKA_BOOTSTRAP_SERVERS", "h:abc", b"setting RATING_KAFKA_BOOTSTRAP_SERVERS: "),
        case("RATING_KAFKA_BOOTSTRAP_SERVERS", "h:1,,h:2", b"setting RATING_KAFKA_BOOTSTRAP_SERVERS: "),
        case("RATING_TOPIC_GAMES", "a b", b"setting RATING_TOPIC_GAMES: "),
        case("RATING_TOPIC_DEAD_LETTERS", "..", b"setting RATING_TOPIC_DEAD_LETTERS: "),
        case("RATING_REDIS_KEY_PREFIX", "r*", b"setting RATING_REDIS_KEY_PREFIX: must be non-empty and without"),
        case("RATING_REDIS_KEY_PREFIX", "", b"setting RATING_REDIS_KEY_PREFIX: must be non-empty and without"),
        # Rules between settings: the message names the variable to change.
        case("RATING_MAX_MESSAGE_BYTES", "2000000", b"RATING_MAX_MESSAGE_BYTES (2000000) must leave"),
        case(
            "RATING_REDIS_SENTINELS",
            "h:26379",
            b"RATING_REDIS_SENTINELS needs RATING_REDIS_WAIT_REPLICAS >= 1",
            RATING_REDIS_WAIT_REPLICAS="0",
        ),
    ],
)
@pytest.mark.parametrize("command", [["run"], ["import", "samples/seed.csv"]])
def test_a_wrong_setting_fails_at_start_with_one_line_naming_it(
    command: list[str], variable: str, value: str, named: bytes, extra: dict[str, str]
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RATING_")}
    env[variable] = value
    env.update(extra)
    done = commands.run(
        [sys.executable, "-m", "worker", *command], env=env, capture_output=True, timeout=30, check=False
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count(b"\n") == 1, done.stderr
    assert done.stderr.startswith(b"rating-worker: error: "), done.stderr
    assert named in done.stderr
    assert PASSWORD.encode() not in done.stderr + done.stdout
    if variable == "RATING_REDIS_URL":
        assert value.encode() not in done.stderr  # a secret: never echoed, whatever it holds
