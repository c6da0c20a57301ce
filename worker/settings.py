"""Settings shared by every command, from environment variables (prefix `RATING_`)."""

from typing import Annotated, Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class RulesSettings(BaseSettings):
    """What the rules and the input checks need; the same for `rate` and the streaming worker."""

    model_config = SettingsConfigDict(env_prefix="RATING_", extra="ignore")

    # The fixed rating shown to unrated players; it never enters a calculation.
    training_rating: Annotated[int, Field(ge=0, le=9999)] = 1200
    # A message larger than this is dead-lettered as too_large. 64 KiB is ~200x a real game
    # event (~300 bytes), small enough that a flood of oversized messages cannot exhaust memory.
    max_message_bytes: Annotated[int, Field(ge=256, le=16 * 1024 * 1024)] = 65536


class WorkerSettings(RulesSettings):
    """Everything `rating-worker run` (and `import`) reads. Documented in the README.

    Any setting may also come from a file named after its variable (`rating_redis_password`,
    ...) in the directory RATING_SECRETS_DIR: Kubernetes Secrets mounted as files.
    """

    kafka_bootstrap_servers: str = "localhost:9092"
    kafka_group_id: str = "rating-worker"
    # Static membership (KIP-345): set it only where the name is stable across restarts
    # (a StatefulSet pod name); unset, the member is dynamic.
    kafka_group_instance_id: str | None = None
    # A dead member's partitions move after this; 10 s is Kafka's default, short enough for
    # a quick take-over, long enough to ride out a GC pause or a slow Redis call.
    kafka_session_timeout_ms: Annotated[int, Field(ge=1000)] = 10000
    kafka_heartbeat_interval_ms: Annotated[int, Field(ge=100)] = 3000
    # Security. SASL (PLAIN, SCRAM) over plaintext or TLS; TLS files are PEM paths (mounted).
    kafka_security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    kafka_sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = "SCRAM-SHA-512"
    kafka_sasl_username: str | None = None
    kafka_sasl_password: SecretStr | None = None
    kafka_ssl_cafile: str | None = None
    kafka_ssl_certfile: str | None = None
    kafka_ssl_keyfile: str | None = None
    kafka_ssl_check_hostname: bool = True
    topic_games: str = "arena.game.finished.v1"
    topic_ratings: str = "arena.rating.changed.v1"
    topic_dead_letters: str = "arena.game.finished.v1.dlq"

    # A secret: it may carry a password. Never logged (SecretStr hides it in reprs).
    redis_url: SecretStr = SecretStr("redis://localhost:6379/0")
    # An ACL user and password (or put them in a rediss:// URL); TLS with rediss:// URLs.
    redis_username: str | None = None
    redis_password: SecretStr | None = None
    redis_ssl_ca_file: str | None = None
    redis_ssl_certfile: str | None = None
    redis_ssl_keyfile: str | None = None
    # Behind Sentinel: "host:port,host:port" of the sentinels and the monitored service name;
    # then the primary is found through them and RATING_REDIS_URL only gives db and password.
    redis_sentinels: str | None = None
    redis_sentinel_service: str = "mymaster"
    redis_key_prefix: str = "rating:"
    # Wait for this many replicas to acknowledge each state write (Redis WAIT) before
    # publishing and committing; 0 relies on the primary's own durability (appendfsync always).
    redis_wait_replicas: Annotated[int, Field(ge=0)] = 0
    redis_wait_timeout_ms: Annotated[int, Field(ge=1)] = 1000

    # Records fetched and applied together: one Redis read and one atomic write per batch.
    # 1000 keeps a batch's Lua script under ~10 ms of Redis time, so other replicas wait little.
    batch_size: Annotated[int, Field(ge=1, le=20000)] = 1000
    # Keep this many fetched records waiting at most (aiokafka's prefetch bounds memory).
    max_partition_fetch_bytes: Annotated[int, Field(ge=1024)] = 1048576
    # How long the broker may hold a fetch while it has no new record (Kafka's fetch.max.wait.ms).
    # Apache Kafka answers as soon as records arrive, so this only paces an idle consumer; a
    # broker that holds every fetch to the end of the wait (tansu, the embedded broker) adds up
    # to this much latency to each game: the demo and the benchmark set 10 there.
    kafka_fetch_max_wait_ms: Annotated[int, Field(ge=0)] = 500

    idempotency_retention_seconds: Annotated[int, Field(ge=60)] = 30 * 24 * 3600
    # A publication lease must outlive one delivery attempt, or two holders could interleave.
    publication_lease_seconds: Annotated[float, Field(gt=0)] = 60.0
    producer_delivery_timeout_seconds: Annotated[float, Field(gt=0)] = 30.0

    # A flood of bad input raises an alarm (log + metric) above this many dead letters a minute.
    dead_letter_alarm_per_minute: Annotated[int, Field(ge=1)] = 100

    # /livez fails when a partition with lag made no progress for this long while Kafka and
    # Redis answer. Longer than the publication lease: waiting out a dead holder's lease is
    # progress delayed, not a stall.
    stall_seconds: Annotated[float, Field(gt=0)] = 180.0
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    metrics_port: Annotated[int, Field(ge=0, le=65535)] = 9400
    # Drain budget on SIGTERM; the pod's terminationGracePeriodSeconds must be longer.
    shutdown_grace_seconds: Annotated[float, Field(gt=0)] = 25.0

    @model_validator(mode="after")
    def _lease_outlives_delivery(self) -> "WorkerSettings":
        if self.publication_lease_seconds <= self.producer_delivery_timeout_seconds:
            raise ValueError(
                "RATING_PUBLICATION_LEASE_SECONDS must be longer than RATING_PRODUCER_DELIVERY_TIMEOUT_SECONDS "
                f"({self.publication_lease_seconds} <= {self.producer_delivery_timeout_seconds})"
            )
        if self.kafka_security_protocol.startswith("SASL") and not (
            self.kafka_sasl_username and self.kafka_sasl_password
        ):
            raise ValueError(
                "RATING_KAFKA_SECURITY_PROTOCOL=SASL_* needs RATING_KAFKA_SASL_USERNAME and RATING_KAFKA_SASL_PASSWORD"
            )
        if (self.redis_ssl_certfile is None) != (self.redis_ssl_keyfile is None):
            raise ValueError("RATING_REDIS_SSL_CERTFILE and RATING_REDIS_SSL_KEYFILE go together")
        if self.stall_seconds <= self.publication_lease_seconds:
            raise ValueError("RATING_STALL_SECONDS must be longer than RATING_PUBLICATION_LEASE_SECONDS")
        if self.kafka_heartbeat_interval_ms * 3 > self.kafka_session_timeout_ms:
            raise ValueError(
                "RATING_KAFKA_HEARTBEAT_INTERVAL_MS must be at most a third of RATING_KAFKA_SESSION_TIMEOUT_MS"
            )
        return self
