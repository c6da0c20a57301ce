"""`rating-worker --version` and `rating-worker config`: the settings in effect, secrets masked (a
URL's password only)."""

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.support import commands
from worker.docs import MASK, masked_url
from worker.settings import WorkerSettings

REPO = Path(__file__).resolve().parents[2]


def run(*args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RATING_")} | variables
    return commands.run(
        [sys.executable, "-m", "worker", *args], env=env, capture_output=True, text=True, timeout=30, check=False
    )


def test_version_is_the_packages() -> None:
    done = run("--version")
    assert done.returncode == 0
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert done.stdout == f"rating-worker {version}\n"


def test_config_shows_what_was_given_masks_secrets_and_comments_out_defaults(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "RATING_KAFKA_SASL_PASSWORD").write_text("from-a-file")
    done = run(
        "config",
        RATING_REDIS_URL="redis://:hunter2@redis.example:6380/0",
        RATING_BATCH_SIZE="500",
        RATING_KAFKA_SECURITY_PROTOCOL="SASL_SSL",
        RATING_KAFKA_SASL_USERNAME="worker",
        RATING_SECRETS_DIR=str(secrets),
    )
    assert done.returncode == 0, done.stderr
    assert "hunter2" not in done.stdout and "from-a-file" not in done.stdout
    lines = done.stdout.splitlines()
    assert lines[0].startswith("# rating-worker ")
    given = [line for line in lines[1:] if not line.startswith("#")]
    assert given == [
        "RATING_KAFKA_SECURITY_PROTOCOL=SASL_SSL",
        "RATING_KAFKA_SASL_USERNAME=worker",
        "RATING_KAFKA_SASL_PASSWORD=********",
        "RATING_REDIS_URL=redis://:********@redis.example:6380/0",
        "RATING_BATCH_SIZE=500",
    ]
    # A URL without a password is shown whole: which Redis it will use.
    assert "# RATING_REDIS_URL=redis://localhost:6379/0 (default)" in run("config").stdout
    assert "# RATING_LOG_LEVEL=info (default)" in lines
    assert "# RATING_KAFKA_GROUP_INSTANCE_ID= (default)" in lines  # unset
    # Every setting once, in the settings' order.
    names = [line.lstrip("# ").split("=", 1)[0] for line in lines[1:]]
    assert names == [f"RATING_{name.upper()}" for name in WorkerSettings.model_fields]


def test_config_refuses_a_wrong_setting_with_one_line() -> None:
    done = run("config", RATING_BATCH_SIZE="0")
    assert done.returncode == 2
    assert done.stderr.startswith("rating-worker: error: setting RATING_BATCH_SIZE") and done.stderr.count("\n") == 1


def test_a_url_shows_everything_but_its_password() -> None:
    cases = {
        "redis://localhost:6379/0": "redis://localhost:6379/0",
        "redis://:hunter2@redis.example:6380/0": f"redis://:{MASK}@redis.example:6380/0",
        "rediss://worker:p@ss:w0rd@redis.example/1": f"rediss://worker:{MASK}@redis.example/1",
        "redis://worker@redis.example/2": "redis://worker@redis.example/2",
        "redis://redis.example/0?password=hunter2&ssl_cert_reqs=none": (
            f"redis://redis.example/0?password={MASK}&ssl_cert_reqs=none"
        ),
        "unix:///run/redis.sock?db=0&password=hunter2": f"unix:///run/redis.sock?db=0&password={MASK}",
        "not a url, hunter2": MASK,
        "hunter2": MASK,
    }
    for url, shown in cases.items():
        assert masked_url(url) == shown, url
        assert "hunter2" not in masked_url(url) and "w0rd" not in masked_url(url)
