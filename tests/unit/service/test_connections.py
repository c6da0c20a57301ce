"""The client configuration the worker builds from its security settings.

tansu's `--authentication` cannot be tested here: with memory storage its users must be
created through an authenticated connection, so no first user can ever be created
(`tansu user create` fails with "early eof" against an authenticating broker). So Kafka
SASL/TLS is checked on the configuration handed to aiokafka; Redis ACL and TLS are tested
against a real redis-server (tests/integration/service/test_connections.py).
"""

import ssl
from pathlib import Path

import pytest
from pydantic import ValidationError

from worker.service.connections import kafka_options, redis_options
from worker.settings import WorkerSettings


def test_plaintext_kafka_gets_no_credentials() -> None:
    options = kafka_options(WorkerSettings(kafka_bootstrap_servers="k:9092"))
    assert options == {"bootstrap_servers": "k:9092", "security_protocol": "PLAINTEXT", "client_id": "rating-worker"}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_over_tls_gets_mechanism_credentials_and_a_tls_context(mechanism: str) -> None:
    settings = WorkerSettings(
        kafka_security_protocol="SASL_SSL",
        kafka_sasl_mechanism=mechanism,
        kafka_sasl_username="rating-worker",
        kafka_sasl_password="pw",
    )
    options = kafka_options(settings)
    assert options["security_protocol"] == "SASL_SSL"
    assert (options["sasl_mechanism"], options["sasl_plain_username"], options["sasl_plain_password"]) == (
        mechanism,
        "rating-worker",
        "pw",
    )
    assert isinstance(options["ssl_context"], ssl.SSLContext)
    assert options["ssl_context"].check_hostname is True
    assert options["ssl_context"].verify_mode == ssl.CERT_REQUIRED


def test_sasl_without_credentials_is_refused_at_start() -> None:
    with pytest.raises(ValidationError, match="RATING_KAFKA_SASL_USERNAME"):
        WorkerSettings(kafka_security_protocol="SASL_PLAINTEXT")


def test_secrets_come_from_mounted_files_and_never_show_in_reprs(tmp_path: Path) -> None:
    (tmp_path / "rating_kafka_sasl_password").write_text("kafka-secret")
    (tmp_path / "rating_redis_password").write_text("redis-secret")
    (tmp_path / "rating_redis_url").write_text("redis://:url-secret@redis:6379/0")
    settings = WorkerSettings(
        _secrets_dir=tmp_path,
        kafka_security_protocol="SASL_PLAINTEXT",
        kafka_sasl_username="u",
    )
    assert kafka_options(settings)["sasl_plain_password"] == "kafka-secret"
    assert redis_options(settings)["password"] == "redis-secret"
    assert settings.redis_url.get_secret_value() == "redis://:url-secret@redis:6379/0"
    shown = repr(settings) + str(settings) + str(settings.model_dump())
    for secret in ("kafka-secret", "redis-secret", "url-secret"):
        assert secret not in shown


def test_redis_acl_user_and_tls_files_reach_the_client() -> None:
    settings = WorkerSettings(
        redis_url="rediss://redis:6380/0",
        redis_username="worker",
        redis_password="pw",
        redis_ssl_ca_file="/ca.pem",
        redis_ssl_certfile="/c.pem",
        redis_ssl_keyfile="/k.pem",
    )
    options = redis_options(settings)
    assert (options["username"], options["password"]) == ("worker", "pw")
    assert (options["ssl_ca_certs"], options["ssl_certfile"], options["ssl_keyfile"]) == ("/ca.pem", "/c.pem", "/k.pem")
