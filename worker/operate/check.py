"""`rating-worker check`: a preflight of what the worker needs from Kafka and Redis.

Each check gives one finding, `ok`, `failed` or `unknown` (the answer could not be had: a
`CONFIG GET` refused to an ACL-confined user or on a managed Redis, a broker that does not
report a topic setting). A failed **fatal** check means the worker cannot run correctly;
only those make the command exit 1:

- each topic exists; the input and output topics have `RATING_PARTITIONS` partitions, tornelo's
  tournament topic one (its ends are read in order);
- Redis answers; the key prefix is not another rating system's (`{prefix}system`); its Lua
  scripts can call `cmsgpack` (every state write is such a script);
- `maxmemory-policy` is `noeviction`: under any other policy a full Redis silently drops
  states, outboxes and idempotency records.

Not fatal, reported so an operator sees the trade-off he runs with:

- the topics' settings as `rating-worker topics` sets them (retention, compaction);
- durability: `appendonly yes` with `appendfsync always`, or `RATING_REDIS_WAIT_REPLICAS`
  replicas connected. Without it a crash can lose acknowledged writes; the worker then sees
  the store as untrusted rather than applying a game twice.

It never creates anything: topics are read from the metadata of every topic (describing one
by name would auto-create it on a broker so configured), and Redis gets only reads and a
script that touches no key.
"""

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaError, for_code
from redis.asyncio import Redis
from redis.exceptions import ResponseError

from worker.operate.redis_ops import connected
from worker.operate.topics import TopicSpec, topic_specs
from worker.service.connections import close_quietly, kafka_options
from worker.service.owner import PrefixOwned, own_prefix
from worker.settings import WorkerSettings
from worker.stream.retry import KAFKA_ADMIN, KAFKA_CONNECT, REDIS_COMMAND, REDIS_CONNECT, Unreachable, retrying

Status = Literal["ok", "failed", "unknown"]
# A script that touches no key: packs and unpacks a value with the library the state scripts use.
CMSGPACK_PROBE = "return cmsgpack.unpack(cmsgpack.pack({42}))[1]"


@dataclass(frozen=True)
class Finding:
    status: Status
    subject: str
    detail: str
    fatal: bool = True

    def line(self) -> str:
        """One line of the command's output, for example `failed   redis maxmemory-policy: allkeys-lru ...`."""
        note = " (not fatal)" if self.status == "failed" and not self.fatal else ""
        return f"{self.status:<9}{self.subject}: {self.detail}{note}"

    @property
    def stops(self) -> bool:
        return self.status == "failed" and self.fatal


async def check(settings: WorkerSettings) -> list[Finding]:
    """Every finding, Kafka's then Redis's (the two are checked at the same time)."""
    kafka, redis = await asyncio.gather(check_kafka(settings), check_redis(settings))
    return [*kafka, *redis]


# --- Kafka


async def check_kafka(settings: WorkerSettings) -> list[Finding]:
    admin = AIOKafkaAdminClient(**kafka_options(settings))
    try:
        try:
            await retrying(KAFKA_CONNECT, admin.start)
            # No names: the metadata of every topic, which never creates one.
            described = {t["topic"]: t for t in await retrying(KAFKA_ADMIN, admin.describe_topics)}
        except Unreachable as e:
            return [Finding("failed", "kafka", f"unreachable: {e}")]
        findings: list[Finding] = []
        for spec in topic_specs(settings, settings.partitions, 1):  # only the names and partitions are read
            name = spec.name
            found = _topic(settings, spec, described.get(name))
            findings.append(found)
            if found.status == "ok":
                findings.append(await _topic_settings(settings, admin, name, _replication(described[name])))
        return findings
    finally:
        await close_quietly(admin.close())


def _replication(described: dict[str, Any]) -> int:
    return min((len(p["replicas"]) for p in described["partitions"]), default=0)


def _topic(settings: WorkerSettings, spec: TopicSpec, described: dict[str, Any] | None) -> Finding:
    name = spec.name
    subject = f"topic {name}"
    if described is None:
        return Finding("failed", subject, "missing (`rating-worker topics` creates it)")
    if described["error_code"]:
        return Finding("failed", subject, f"not described: {for_code(described['error_code']).__name__}")
    partitions = len(described["partitions"])
    detail = f"{partitions} partition{'s' if partitions != 1 else ''}, replication {_replication(described)}"
    # The dead-letter topic has any number: its records are read in full by an operator.
    if name == settings.tournament_topic() and partitions != spec.partitions:
        return Finding("failed", subject, f"{detail}; tornelo's tournament ends need one, to be read in order")
    if name != settings.topic_dead_letters and partitions != spec.partitions:
        return Finding("failed", subject, f"{detail}; RATING_PARTITIONS is {settings.partitions}")
    return Finding("ok", subject, detail)


async def _topic_settings(settings: WorkerSettings, admin: AIOKafkaAdminClient, name: str, replication: int) -> Finding:
    subject = f"topic {name} settings"
    expected = next(s for s in topic_specs(settings, settings.partitions, replication) if s.name == name).config
    try:
        responses = await retrying(
            KAFKA_ADMIN, admin.describe_configs, [ConfigResource(ConfigResourceType.TOPIC, name)]
        )
    except (KafkaError, Unreachable) as e:
        return Finding("unknown", subject, f"not described ({type(e).__name__}: {e})", fatal=False)
    resource = responses[0].to_object()["resources"][0]
    if resource["error_code"]:
        error = for_code(resource["error_code"]).__name__
        return Finding("unknown", subject, f"not described: {error}", fatal=False)
    actual = {entry["config_names"]: entry["config_value"] for entry in resource["config_entries"]}
    wrong = [f"{k}={actual[k]} (expected {want})" for k, want in expected.items() if actual.get(k, want) != want]
    if wrong:
        return Finding("failed", subject, ", ".join(wrong), fatal=False)
    unreported = [key for key in expected if key not in actual]
    if unreported:  # Kafka reports every setting, defaults included; some brokers only those set
        return Finding("unknown", subject, f"the broker does not report {', '.join(unreported)}", fatal=False)
    return Finding("ok", subject, ", ".join(f"{key}={value}" for key, value in expected.items()))


# --- Redis


async def check_redis(settings: WorkerSettings) -> list[Finding]:
    async with connected(settings, ping=False) as redis:
        try:
            await retrying(REDIS_CONNECT, redis.ping)
        except Unreachable as e:
            return [Finding("failed", "redis", f"unreachable: {e}")]
        except ResponseError as e:  # for instance PING refused to the user
            return [Finding("failed", "redis", f"refused PING ({e})")]
        findings = [Finding("ok", "redis", "answers")]
        steps: list[Callable[[], Awaitable[Finding]]] = [
            lambda: _prefix(settings, redis),
            lambda: _lua(redis),
            lambda: _eviction(redis),
            lambda: _durability(settings, redis),
        ]
        try:
            for step in steps:
                findings.append(await step())
        except Unreachable as e:  # it went away after PING: what was checked stands
            findings.append(Finding("failed", "redis checks", f"Redis became unreachable: {e}"))
        return findings


async def _prefix(settings: WorkerSettings, redis: Redis) -> Finding:
    """The key prefix is this system's, or nobody's yet (read only: `check` claims nothing)."""
    subject = "redis key prefix"
    try:
        await own_prefix(
            redis, settings.redis_key_prefix, settings.spec().name, write=False, parameters=settings.parameters()
        )
    except PrefixOwned as e:
        return Finding("failed", subject, str(e))
    return Finding("ok", subject, f"{settings.redis_key_prefix} is not another system's")


async def _lua(redis: Redis) -> Finding:
    subject = "redis lua cmsgpack"
    try:
        answer = await retrying(REDIS_COMMAND, redis.eval, CMSGPACK_PROBE, 0)
    except ResponseError as e:
        return Finding("failed", subject, f"the state scripts cannot run: {e}")
    if answer != 42:
        return Finding("failed", subject, f"cmsgpack round trip gave {answer!r}, not 42")
    return Finding("ok", subject, "scripts run and pack with cmsgpack")


async def _config(redis: Redis, *names: str) -> dict[str, str] | str:
    """The values of `CONFIG GET name...`, or why they could not be read."""
    try:
        values: dict[str, str] = {}
        for name in names:
            answer = await retrying(REDIS_COMMAND, redis.config_get, name)
            if name not in answer:
                return f"CONFIG GET {name} returned nothing"
            values[name] = str(answer[name])
    except ResponseError as e:  # an ACL without CONFIG, a managed Redis that renames or hides it
        return f"CONFIG GET refused ({e})"
    return values


async def _eviction(redis: Redis) -> Finding:
    subject = "redis maxmemory-policy"
    config = await _config(redis, "maxmemory-policy")
    if isinstance(config, str):
        return Finding("unknown", subject, f"{config}; it must be noeviction")
    policy = config["maxmemory-policy"]
    if policy != "noeviction":
        return Finding("failed", subject, f"{policy}: a full Redis would drop states and idempotency records")
    return Finding("ok", subject, policy)


async def _durability(settings: WorkerSettings, redis: Redis) -> Finding:
    subject = "redis durability"
    wanted = settings.redis_wait_replicas
    if wanted > 0:
        try:
            info = await retrying(REDIS_COMMAND, redis.info, "replication")
        except ResponseError as e:
            return Finding("unknown", subject, f"INFO refused ({e})", fatal=False)
        connected = int(info.get("connected_slaves", 0))
        detail = f"RATING_REDIS_WAIT_REPLICAS={wanted}, {connected} replicas connected"
        if connected < wanted:
            return Finding("failed", subject, f"{detail}: every write would wait", fatal=False)
        return Finding("ok", subject, detail)
    config = await _config(redis, "appendonly", "appendfsync")
    if isinstance(config, str):
        return Finding("unknown", subject, config, fatal=False)
    detail = f"appendonly {config['appendonly']}, appendfsync {config['appendfsync']}"
    if (config["appendonly"], config["appendfsync"]) != ("yes", "always"):
        lost = "a crash can lose acknowledged writes (wanted: appendfsync always, or RATING_REDIS_WAIT_REPLICAS)"
        return Finding("failed", subject, f"{detail}: {lost}", fatal=False)
    return Finding("ok", subject, detail)
