"""Settings shared by every command, from environment variables (prefix `RATING_`).

Every value is checked whole at start (URL schemes, host:port lists, ports, topic names, and
the rules between settings), so that a wrong one stops the command with one line naming the
variable instead of failing later, half way, with a traceback.
"""

import re
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, PrivateAttr, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from worker.engine.spec import SystemNames, SystemSpec
from worker.rules.interface import RatingSystem
from worker.systems import registry
from worker.systems.tornelo.settings import TOURNAMENT_TOPIC, bonus_factor, tornelo_k

# Kafka's own rule for topic names.
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
_HOST = re.compile(r"[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\]")
# Room a dead letter needs beside the bad record's value: its key, the original and error
# headers, the record's framing. A value up to RATING_MAX_MESSAGE_BYTES must fit with it.
DEAD_LETTER_ROOM = 16 * 1024


def host_ports(value: str, default_port: int | None = None) -> list[tuple[str, int]]:
    """`host:port,host:port` (an IPv6 host in brackets) as pairs; ValueError names what is wrong."""
    pairs = []
    for part in value.split(","):
        entry = part.strip()
        host, colon, port = entry.rpartition(":")
        if not colon:
            host, port = entry, ""
        if not host or not _HOST.fullmatch(host):
            raise ValueError(f"{entry!r} is not host:port")
        if not port:
            if default_port is None:
                raise ValueError(f"{entry!r} has no port (host:port)")
            pairs.append((host.strip("[]"), default_port))
            continue
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{entry!r} has no valid port (1-65535)")
        pairs.append((host.strip("[]"), int(port)))
    return pairs


def redis_address(url: str) -> str:
    """Where a Redis URL points, without its password: `host:port` or the socket's path."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return parts.path
    return f"{parts.hostname}:{parts.port or 6379}"


KEY_PATTERN_CHARS = "*?[]\\"  # characters of a Redis key pattern (SCAN MATCH): never in a prefix

# `{prefix}`-style names a deployment owns: no two deployments may share one.
OWN_NAMES = ("topic_ratings", "topic_dead_letters", "kafka_group_id", "redis_key_prefix")


def name_problems(spec: SystemSpec[Any], names: SystemNames) -> list[str]:
    """Where a deployment of `spec`'s system would use another system's name: one line each."""
    system = spec.name
    others = [other for other in registry.BUILT_IN if other.name != system]
    problems = []
    for field in OWN_NAMES:
        value = getattr(names, field)
        for other in others:
            theirs = other.names
            if field == "redis_key_prefix":
                if value.startswith(theirs.redis_key_prefix) or theirs.redis_key_prefix.startswith(value):
                    what = "is" if value == theirs.redis_key_prefix else "nests with"
                    problems.append(f"RATING_REDIS_KEY_PREFIX={value} {what} the key prefix of the system {other.name}")
            elif value == getattr(theirs, field):
                problems.append(f"RATING_{field.upper()}={value} is the {_WHAT[field]} of the system {other.name}")
        if field in ("topic_ratings", "topic_dead_letters"):
            # What this deployment writes must not land in a topic another system reads or writes.
            for other in others:
                theirs = other.names
                for role, topic in (("input", theirs.topic_games), ("output", theirs.topic_ratings)):
                    if value == topic and (field, role) != ("topic_ratings", "output"):
                        problems.append(
                            f"RATING_{field.upper()}={value} is the {role} topic of the system {other.name}"
                        )
                if field == "topic_ratings" and value == theirs.topic_dead_letters:
                    problems.append(f"RATING_TOPIC_RATINGS={value} is the dead-letter topic of the system {other.name}")
        problems.extend(
            f"RATING_{field.upper()}={value} is the {reserved.what} of the system {other.name}"
            for other in others
            for reserved in other.reserved
            if reserved.field == field and reserved.value == value
        )
    if spec.name_check is not None:
        problems.extend(spec.name_check(names))
    return problems


_WHAT = {
    "topic_ratings": "output topic",
    "topic_dead_letters": "dead-letter topic",
    "kafka_group_id": "consumer group",
}


class RulesSettings(BaseSettings):
    """What the rules and the input checks need; the same for `rate` and the streaming worker."""

    model_config = SettingsConfigDict(env_prefix="RATING_", extra="ignore")

    # One rating system per deployment; it sets the defaults of the topics, group and prefix.
    system: Annotated[
        str,
        Field(
            description="The rating system of this deployment: `arena` (contract v1), `uscf-cc` (US Chess "
            "correspondence, contract v2), `glicko2` (Glicko-2 game by game, contract v2), `fide` (FIDE, one change "
            "per calendar month, contract v2) or `tornelo` (Tornelo, one change per tournament, contract v2); or "
            "`package.module:SPEC`, the import path of a system defined outside this package "
            "(docs/adding-a-system.md). It sets the defaults of `RATING_TOPIC_GAMES`, `RATING_TOPIC_RATINGS`, "
            "`RATING_TOPIC_DEAD_LETTERS`, `RATING_KAFKA_GROUP_ID` and `RATING_REDIS_KEY_PREFIX`; no deployment may "
            "use another system's output topic, dead-letter topic, group or key prefix. `fide` closes its months "
            "with `rating-worker close-period`; `tornelo` closes each tournament when its end record is read, "
            "by `rating-worker close-period --follow`.",
        ),
    ] = registry.DEFAULT

    # The fixed rating shown to unrated players; it never enters a calculation.
    training_rating: Annotated[
        int,
        Field(
            ge=0,
            le=9999,
            description="The rating shown to unrated players (the `display_*` fields); never used in a calculation. "
            "`rate --training-rating` overrides it.",
        ),
    ] = 1200
    # Tornelo's open parameters (docs/systems/tornelo.md, "Settings"): the source gives their shape, not their
    # numbers; these defaults are the project's. Read by every command, so that a wrong value
    # stops any of them at start, and recorded on a live prefix (`parameters()`, `worker.service.owner`).
    tornelo_k: Annotated[
        str,
        Field(
            description="`tornelo`: K per category, a JSON object with exactly the keys `rapid`, `blitz` and "
            "`bullet`, each a pair of positive integers [K at or below 2200, K above 2200].",
        ),
    ] = '{"rapid": [20, 10], "blitz": [20, 10], "bullet": [10, 5]}'
    tornelo_bonus_factor: Annotated[
        str,
        Field(
            description="`tornelo`: the bonus factor, Bonus = factor x max(0, ScoreDifference - 1); a decimal >= 0 "
            "with at most two decimals (`0` disables the bonus).",
        ),
    ] = "1.00"
    # A message larger than this is dead-lettered as too_large. 64 KiB is ~200x a real game
    # event (~300 bytes), small enough that a flood of oversized messages cannot exhaust memory.
    max_message_bytes: Annotated[
        int,
        Field(
            ge=256,
            le=16 * 1024 * 1024,
            description="Larger input messages are dead-lettered as `too_large` (the value cut to this size). "
            "A real event is ~300 bytes.",
        ),
    ] = 65536

    _spec: SystemSpec[Any] = PrivateAttr()
    _parameters: str | None = PrivateAttr()

    @field_validator("tornelo_k")
    @classmethod
    def _tornelo_k(cls, value: str) -> str:
        tornelo_k(value)
        return value

    @field_validator("tornelo_bonus_factor")
    @classmethod
    def _tornelo_bonus_factor(cls, value: str) -> str:
        bonus_factor(value)
        return value

    @field_validator("system")
    @classmethod
    def _system(cls, value: str) -> str:
        registry.spec_of(value)  # UnknownSystem is a ValueError: the message names the variable
        return value

    @model_validator(mode="after")
    def _configured(self) -> "RulesSettings":
        spec = registry.spec_of(self.system)
        values = self.model_dump()
        self._spec = spec.configured(values)
        self._parameters = None if spec.parameters is None else spec.parameters(values)
        return self

    def spec(self) -> SystemSpec[Any]:
        """The deployment's rating system, with its parameters (tornelo's K and bonus factor)."""
        return self._spec

    def rules(self) -> RatingSystem[Any]:
        """The deployment's rules, with their parameters."""
        return self._spec.rules

    def parameters(self) -> str | None:
        """The parameters a live prefix of the deployment's system records (`SystemSpec.parameters`:
        tornelo's K and bonus factor, in their canonical text), or None: its system records none."""
        return self._parameters


class WorkerSettings(RulesSettings):
    """Everything `rating-worker run` (and `import`) reads.

    docs/configuration.md is generated from the descriptions (`rating-worker docs`). Any setting
    may also come from a file named after its variable (`rating_redis_password`, ...) in the
    directory RATING_SECRETS_DIR: Kubernetes Secrets mounted as files.
    """

    # A game's finished_at may be this much later than its record's timestamp, no more.
    future_allowance_seconds: Annotated[
        int,
        Field(
            ge=0,
            description="How much later than its record's timestamp (as the consumer receives it: CreateTime, or "
            "LogAppendTime on a topic so configured) a game's `finished_at` may be (glicko2: a game finishing in "
            "the future would stop its players' deviations from growing; fide: it would wait years for its month's "
            "close); later, it is dead-lettered as "
            "`invalid_schema`. An hour covers clock skew between producers and the broker. `rate`'s lines carry no "
            "timestamp and are not checked; `rebuild` checks each record with the timestamp it reads for it.",
        ),
    ] = 3600

    # A month is due to close an hour after its end: games finished at its end have reached Kafka.
    period_grace_seconds: Annotated[
        int,
        Field(
            ge=0,
            description="A per-period system's (fide): how long after a month's end it is due to close; `close-period` "
            "refuses a month not due yet (unless `--force`), and `close-period --due` closes the months due.",
        ),
    ] = 3600
    close_drain_timeout_seconds: Annotated[
        float,
        Field(
            gt=0,
            description="How long `close-period` waits for the workers to apply every game published before it "
            "started (the drain) before it gives up with status 1, having marked nothing new.",
        ),
    ] = 600.0
    tournament_open_alert_seconds: Annotated[
        int,
        Field(
            gt=0,
            description="`tornelo`: a tournament still open past this is alerted on: an end the platform never "
            "published. The workers export it (`rating_period_open_alert_seconds`) beside the age of the oldest "
            "open tournament (`rating_period_oldest_open_seconds`), and `RatingTournamentOpenTooLong` compares "
            "the two.",
        ),
    ] = 604800

    kafka_bootstrap_servers: Annotated[
        str, Field(description="Kafka brokers, `host:port,...` (port 9092 where it is left out).")
    ] = "localhost:9092"
    kafka_group_id: Annotated[str, Field(min_length=1, description="Consumer group of all replicas.")] = "rating-worker"
    # Static membership (KIP-345): set it only where the name is stable across restarts
    # (a StatefulSet pod name); unset, the member is dynamic.
    kafka_group_instance_id: Annotated[
        str | None,
        Field(
            description="Static membership id; set it only where it is stable across restarts (a StatefulSet pod "
            "name). Unset, the member is dynamic."
        ),
    ] = None
    # A dead member's partitions move after this; 10 s is Kafka's default, short enough for
    # a quick take-over, long enough to ride out a GC pause or a slow Redis call.
    kafka_session_timeout_ms: Annotated[
        int, Field(ge=1000, description="A dead member's partitions move to other replicas after this.")
    ] = 10000
    kafka_heartbeat_interval_ms: Annotated[
        int,
        Field(ge=100, description="Heartbeats to the group coordinator; at most a third of the session timeout."),
    ] = 3000
    # Security. SASL (PLAIN, SCRAM) over plaintext or TLS; TLS files are PEM paths (mounted).
    kafka_security_protocol: Annotated[
        Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"],
        Field(description="How the clients talk to Kafka: plaintext or TLS, with or without SASL."),
    ] = "PLAINTEXT"
    kafka_sasl_mechanism: Annotated[
        Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"], Field(description="The SASL mechanism.")
    ] = "SCRAM-SHA-512"
    kafka_sasl_username: Annotated[
        str | None, Field(description="SASL user name; required, with the password, by the `SASL_*` protocols.")
    ] = None
    kafka_sasl_password: Annotated[
        SecretStr | None, Field(description="SASL password; required, with the user name, by the `SASL_*` protocols.")
    ] = None
    kafka_ssl_cafile: Annotated[
        str | None, Field(description="PEM file of the CA that signed the brokers' certificates (TLS).")
    ] = None
    kafka_ssl_certfile: Annotated[str | None, Field(description="PEM file of the client certificate (mutual TLS).")] = (
        None
    )
    kafka_ssl_keyfile: Annotated[
        str | None, Field(description="PEM file of the client certificate's key (mutual TLS).")
    ] = None
    kafka_ssl_check_hostname: Annotated[
        bool, Field(description="Verify the broker's host name against its certificate.")
    ] = True
    # Off by default: aiokafka's idempotent producer needs a broker that grants producer ids
    # (InitProducerId); Apache Kafka does, some Kafka-compatible brokers (tansu) do not.
    kafka_idempotent_producer: Annotated[
        bool,
        Field(
            description="Use Kafka's idempotent producer (the broker must support it: Apache Kafka does). The broker "
            "then drops a late copy of this process's own requests, so a rating's next event need not wait a "
            "publication lease after a send of unknown outcome; the lease still keeps other processes off.",
        ),
    ] = False
    # Off by default: every consumer of the output and dead-letter topics must then have the codec
    # (a consumer without it stops on the first batch, as this worker did on lz4 input before it
    # had them all); and the output's rounds are small (one event per rating), which compress little.
    kafka_compression_type: Annotated[
        Literal["none", "gzip", "snappy", "lz4", "zstd"],
        Field(
            description="How the worker and its commands compress what they produce (rating changes, dead letters, "
            "erase's tombstones, replayed dead letters): `none`, `gzip`, `snappy`, `lz4` or `zstd`. Every consumer "
            "of those topics must support the codec. Input is read with any of them, whatever this says.",
        ),
    ] = "none"
    # The largest produce request (the producer's max.request.size): output batches and dead
    # letters stay under it. 1 MiB is Kafka's default, and under its default max.message.bytes.
    kafka_max_request_bytes: Annotated[
        int,
        Field(
            ge=64 * 1024,
            le=64 * 1024 * 1024,
            description="The largest produce request (the producer's `max.request.size`; keep it at or under the "
            "topics' `max.message.bytes`). Output batches stay under it and a dead letter is cut to fit it; "
            "`RATING_MAX_MESSAGE_BYTES` must leave 16 KiB of it for a dead letter's key and headers.",
        ),
    ] = 1024 * 1024
    topic_games: Annotated[str, Field(description="Input topic: the finished games.")] = "arena.game.finished.v1"
    topic_ratings: Annotated[str, Field(description="Output topic: the rating changes.")] = "arena.rating.changed.v1"
    topic_dead_letters: Annotated[str, Field(description="Dead-letter topic: bad input, with the reason.")] = (
        "arena.game.finished.v1.dlq"
    )
    # Not a name of the five the system sets: the platform's one topic of tournament ends, whatever
    # the deployment; read by tornelo alone (`tournament_topic`).
    topic_tournaments: Annotated[
        str,
        Field(
            description="`tornelo`: the topic of tournament ends (one partition, kept for good), whose records "
            "close its tournaments; a bad one is dead-lettered as a bad game is. No other system reads it. It must "
            "be none of the deployment's input, output and dead-letter topics, nor another system's output or "
            "dead-letter topic.",
        ),
    ] = TOURNAMENT_TOPIC
    # One number for the input and output topics (`topics` creates them with it, `check` expects
    # it) and for the KEDA trigger's maximum of replicas (a replica beyond it would hold nothing).
    partitions: Annotated[
        int,
        Field(
            ge=1,
            description="Partitions of the input and output topics: what `topics` creates, what `check` expects, "
            "and the most replicas the KEDA trigger starts.",
        ),
    ] = 12

    # A secret: it may carry a password. Never logged (SecretStr hides it in reprs).
    redis_url: Annotated[
        SecretStr,
        Field(
            description="The Redis primary: `redis://[user:password@]host[:port][/db]`, `rediss://` for TLS, "
            "`unix://` for a socket. It may hold the password."
        ),
    ] = SecretStr("redis://localhost:6379/0")
    # An ACL user and password (or put them in a rediss:// URL); TLS with rediss:// URLs.
    redis_username: Annotated[str | None, Field(description="Redis ACL user (or give it in the URL).")] = None
    redis_password: Annotated[SecretStr | None, Field(description="Redis ACL password (or give it in the URL).")] = None
    redis_ssl_ca_file: Annotated[
        str | None, Field(description="TLS with a `rediss://` URL: PEM file of the CA to trust.")
    ] = None
    redis_ssl_certfile: Annotated[
        str | None,
        Field(description="TLS with a `rediss://` URL: PEM file of the client certificate (with its key file)."),
    ] = None
    redis_ssl_keyfile: Annotated[
        str | None,
        Field(
            description="TLS with a `rediss://` URL: PEM file of the client certificate's key (with the certificate)."
        ),
    ] = None
    # Behind Sentinel: "host:port,host:port" of the sentinels and the monitored service name;
    # then the primary is found through them and RATING_REDIS_URL only gives db and password.
    redis_sentinels: Annotated[
        str | None,
        Field(
            description="`host:port,...` of Redis sentinels; when set, the primary is found through them "
            "(`RATING_REDIS_URL` then gives only the database and the password). Needs `RATING_REDIS_WAIT_REPLICAS` "
            "≥ 1 (refused at start otherwise): a failover promotes a replica, which holds only what was replicated."
        ),
    ] = None
    redis_sentinel_service: Annotated[
        str, Field(description="The service name the sentinels monitor (read only with `RATING_REDIS_SENTINELS`).")
    ] = "mymaster"
    redis_key_prefix: Annotated[
        str,
        Field(
            description="Prefix of every key (see the Redis layout in architecture.md); not empty, and without "
            "`*`, `?`, `[`, `]` or `\\`, which Redis reads as a key pattern."
        ),
    ] = "rating:"
    redis_wait_replicas: Annotated[
        int,
        Field(
            ge=0,
            description="If > 0, each state write **and each acknowledgement of a published round** waits for this "
            "many replicas (`WAIT`) before anything further is published or committed. 0 relies on the primary's "
            "own durability (`appendfsync always`).",
        ),
    ] = 0
    redis_wait_timeout_ms: Annotated[
        int, Field(ge=1, description="Timeout of one `WAIT`; it is repeated until enough replicas acknowledge.")
    ] = 1000

    # 1000 keeps a batch's Lua script under ~10 ms of Redis time, so other replicas wait little.
    batch_size: Annotated[
        int,
        Field(
            ge=1,
            le=20000,
            description="Records fetched and applied together (one Redis read and one atomic write per batch); "
            "also the in-flight limit: one batch is in flight at a time.",
        ),
    ] = 1000
    max_partition_fetch_bytes: Annotated[
        int, Field(ge=1024, description="Prefetch bound per partition (aiokafka's `max_partition_fetch_bytes`).")
    ] = 1048576
    kafka_fetch_max_wait_ms: Annotated[
        int,
        Field(
            ge=0,
            description="How long the broker may hold a fetch with no new record (Kafka's `fetch.max.wait.ms`). "
            "Apache Kafka answers as soon as records arrive, so it only paces an idle consumer; tansu (the embedded "
            "broker) holds each fetch to the end of the wait, which adds up to that much latency per game, so the "
            "demo and the benchmark set `10`.",
        ),
    ] = 500

    idempotency_retention_seconds: Annotated[
        int, Field(ge=60, description="How long a game's idempotency record is kept (the default is 30 days).")
    ] = 30 * 24 * 3600
    # A publication lease must outlive one delivery attempt, or two holders could interleave.
    publication_lease_seconds: Annotated[
        float,
        Field(
            gt=0,
            description="After a send of unknown outcome (a timeout, a cut connection), no process sends a later "
            "event of its ratings for this long (a late copy of it may still reach the broker); a process claims "
            "or renews a rating's lease for this plus the delivery timeout, and gives up for a while a round not "
            "acknowledged this long after its first attempt. Must exceed the delivery timeout.",
        ),
    ] = 60.0
    producer_delivery_timeout_seconds: Annotated[
        float,
        Field(
            gt=0,
            description="The Kafka client's request timeout: a produce request not acknowledged within it is given "
            "up on; a round's leases are renewed every half of it while a request may be out.",
        ),
    ] = 30.0

    # A flood of bad input raises an alarm (log + metric) above this many dead letters a minute.
    dead_letter_alarm_per_minute: Annotated[
        int,
        Field(
            ge=1,
            description="More dead letters than this in a minute raise the flood alarm (an error in the log and "
            "`rating_dead_letter_flood` at 1).",
        ),
    ] = 100

    # Longer than the publication lease: waiting out a dead holder's lease is progress delayed,
    # not a stall.
    stall_seconds: Annotated[
        float,
        Field(
            gt=0,
            description="`/livez` fails when a partition with lag made no progress this long while Kafka and Redis "
            "answer; must exceed the publication lease.",
        ),
    ] = 180.0
    log_level: Annotated[
        Literal["debug", "info", "warning", "error"],
        Field(description="Least severe level logged; JSON lines, plain text on a terminal."),
    ] = "info"
    metrics_port: Annotated[
        int, Field(ge=0, le=65535, description="Port of `/metrics`, `/livez` and `/readyz`; `0` disables the server.")
    ] = 9400
    tracemalloc_frames: Annotated[
        int,
        Field(
            ge=0,
            le=100,
            description="`0`: off. Otherwise the worker traces its Python allocations (`tracemalloc`, this many frames "
            "each; slower) and writes a snapshot on each SIGUSR2 to RATING_TRACEMALLOC_DIR, named with the games "
            "consumed so far. For proving that memory does not grow with games; see docs/benchmarks.md.",
        ),
    ] = 0
    tracemalloc_dir: Annotated[
        str, Field(description="Where SIGUSR2 writes the tracemalloc snapshots (with RATING_TRACEMALLOC_FRAMES > 0).")
    ] = "/tmp"
    # The pod's terminationGracePeriodSeconds must be longer by 5 s.
    shutdown_grace_seconds: Annotated[
        float,
        Field(gt=0, description="Drain budget on SIGTERM; closing the clients takes at most 5 s more."),
    ] = 25.0
    # A minute rides out a restart or a failover.
    command_retry_seconds: Annotated[
        float,
        Field(
            gt=0,
            description="How long a one-shot command (`import`, `restore`, `rebuild`, `switch-over`, `topics`) "
            "retries an unreachable Kafka or Redis before it gives up with one line and status 1 (`run` retries for "
            "ever).",
        ),
    ] = 60.0

    @field_validator("kafka_bootstrap_servers")
    @classmethod
    def _bootstrap(cls, value: str) -> str:
        host_ports(value, default_port=9092)
        return value

    @field_validator("redis_sentinels")
    @classmethod
    def _sentinels(cls, value: str | None) -> str | None:
        if value is not None:
            host_ports(value)
        return value

    @field_validator("topic_games", "topic_ratings", "topic_dead_letters", "topic_tournaments")
    @classmethod
    def _topic(cls, value: str) -> str:
        if not _TOPIC.fullmatch(value) or value in (".", ".."):
            raise ValueError("a Kafka topic name is 1-249 of A-Z a-z 0-9 . _ -")
        return value

    @field_validator("redis_key_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        # The commands scan `{prefix}*`: a pattern character would reach other keys.
        if not value or any(c in value for c in KEY_PATTERN_CHARS):
            raise ValueError("must be non-empty and without * ? [ ] or \\ (Redis reads them as a key pattern)")
        return value

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, value: SecretStr) -> SecretStr:
        # The value may hold a password: the messages never repeat it.
        url = value.get_secret_value()
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            raise ValueError("has no valid port (redis://[user:password@]host[:port][/db])") from None
        if parts.scheme not in ("redis", "rediss", "unix"):
            raise ValueError("must start with redis://, rediss:// (TLS) or unix://")
        if parts.scheme == "unix":
            if not parts.path:
                raise ValueError("unix:// needs the socket's path (unix:///path/to/redis.sock)")
            return value
        if not parts.hostname:
            raise ValueError("has no host (redis://[user:password@]host[:port][/db])")
        if port == 0:
            raise ValueError("has no valid port (1-65535)")
        db = parts.path.strip("/")
        if db and not db.isdigit():
            raise ValueError("has a database that is not a number (redis://host:port/0)")
        from redis.asyncio.connection import parse_url  # noqa: PLC0415  # the client's own reading

        try:
            parse_url(url)
        except ValueError as e:  # redis-py names the option, never its value
            raise ValueError(f"has an option that is not valid: {e}") from None
        return value

    @model_validator(mode="after")
    def _system_names(self) -> "WorkerSettings":
        """The system's names where none was given, then no other system's name anywhere."""
        spec = self.spec()
        defaults = spec.names
        for field in SystemNames._fields:
            if field not in self.model_fields_set:
                object.__setattr__(self, field, getattr(defaults, field))
        problems = name_problems(spec, SystemNames(*(getattr(self, f) for f in SystemNames._fields)))
        if problems:
            article = "an" if spec.name[0] in "aeiou" else "a"
            raise ValueError(f"{problems[0]}; {article} {spec.name} deployment needs its own")
        return self

    @model_validator(mode="after")
    def _tournament_topic_apart(self) -> "WorkerSettings":
        """tornelo's tournament ends on a topic of their own (after `_system_names`, which sets the
        other topics): read as ends, a game or an event would only be dead-lettered, and an end
        published where games or events go would never close its tournament."""
        topic = self.tournament_topic()
        if topic is None:
            return self
        for field in ("topic_games", "topic_ratings", "topic_dead_letters"):
            if getattr(self, field) == topic:
                raise ValueError(
                    f"RATING_TOPIC_TOURNAMENTS and RATING_{field.upper()} are both {topic}: tornelo's tournament "
                    "ends need a topic of their own"
                )
        for other in registry.BUILT_IN:
            for field in ("topic_ratings", "topic_dead_letters"):
                if other.name != self.spec().name and getattr(other.names, field) == topic:
                    raise ValueError(
                        f"RATING_TOPIC_TOURNAMENTS={topic} is the {_WHAT[field]} of the system {other.name}"
                    )
        return self

    def tournament_topic(self) -> str | None:
        """The topic this deployment reads tournament ends from (`RATING_TOPIC_TOURNAMENTS`), or None:
        only tornelo's closes come from one (docs/systems/tornelo.md, "Tournament ends"); `topics`
        creates it, `check` checks it, `replay-dead-letters` puts its bad records back on it."""
        return self.topic_tournaments if self.spec().ends_by_record else None

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
        if self.max_message_bytes + DEAD_LETTER_ROOM > self.kafka_max_request_bytes:
            raise ValueError(
                f"RATING_MAX_MESSAGE_BYTES ({self.max_message_bytes}) must leave {DEAD_LETTER_ROOM} bytes for a dead "
                f"letter's key and headers within RATING_KAFKA_MAX_REQUEST_BYTES ({self.kafka_max_request_bytes})"
            )
        if self.redis_sentinels and self.redis_wait_replicas == 0:
            raise ValueError(
                "RATING_REDIS_SENTINELS needs RATING_REDIS_WAIT_REPLICAS >= 1: a failover promotes a replica, "
                "which may lack writes whose events were already published unless each write waited for it"
            )
        tls_files = (self.redis_ssl_ca_file, self.redis_ssl_certfile)
        if any(f is not None for f in tls_files) and not self.redis_url.get_secret_value().startswith("rediss://"):
            raise ValueError("RATING_REDIS_SSL_* files need a rediss:// RATING_REDIS_URL (TLS)")
        return self
