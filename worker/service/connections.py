"""How the worker connects to Kafka and Redis: addresses, authentication and TLS, in one place.

Every command (run, import, restore, rebuild, topics) builds its clients from here, so a
security setting applies to all of them. Secrets come from settings or from files mounted
in RATING_SECRETS_DIR (see `worker.settings`), and are never logged.
"""

import asyncio
import logging
import time
from collections.abc import Awaitable
from contextvars import ContextVar
from typing import Any

from aiokafka.helpers import create_ssl_context
from redis.asyncio import Redis
from redis.asyncio.sentinel import Sentinel

from worker.settings import WorkerSettings, host_ports, redis_address

log = logging.getLogger(__name__)

# Closing a client that cannot reach its server (a leave-group request to a frozen broker, a
# producer flushing into an outage) is given this long, then abandoned: the process exits.
CLOSE_SECONDS = 5.0
KAFKA_CLIENT_ID = "rating-worker"  # how brokers name this service in their logs, metrics and quotas
REDIS_SOCKET_TIMEOUT = 5.0  # a Redis call slower than this is treated as an outage and retried


def kafka_options(settings: WorkerSettings) -> dict[str, Any]:
    """The keyword arguments every aiokafka client (consumer, producer, admin) gets."""
    options: dict[str, Any] = {
        "bootstrap_servers": settings.kafka_bootstrap_servers,
        "security_protocol": settings.kafka_security_protocol,
        "client_id": KAFKA_CLIENT_ID,
    }
    if settings.kafka_security_protocol in ("SSL", "SASL_SSL"):
        context = create_ssl_context(
            cafile=settings.kafka_ssl_cafile,
            certfile=settings.kafka_ssl_certfile,
            keyfile=settings.kafka_ssl_keyfile,
        )
        context.check_hostname = settings.kafka_ssl_check_hostname
        options["ssl_context"] = context
    if settings.kafka_security_protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        assert settings.kafka_sasl_password is not None  # the settings check it
        options["sasl_mechanism"] = settings.kafka_sasl_mechanism
        options["sasl_plain_username"] = settings.kafka_sasl_username
        options["sasl_plain_password"] = settings.kafka_sasl_password.get_secret_value()
    return options


def redis_options(settings: WorkerSettings) -> dict[str, Any]:
    """Connection options besides the URL: timeouts, ACL user and password, TLS files."""
    options: dict[str, Any] = {
        "socket_timeout": REDIS_SOCKET_TIMEOUT,
        "socket_connect_timeout": REDIS_SOCKET_TIMEOUT,
    }
    if settings.redis_username is not None:
        options["username"] = settings.redis_username
    if settings.redis_password is not None:
        options["password"] = settings.redis_password.get_secret_value()
    if settings.redis_ssl_ca_file is not None:
        options["ssl_ca_certs"] = settings.redis_ssl_ca_file
    if settings.redis_ssl_certfile is not None:
        options["ssl_certfile"] = settings.redis_ssl_certfile
        options["ssl_keyfile"] = settings.redis_ssl_keyfile
    return options


def make_redis(settings: WorkerSettings) -> "Redis":
    url = settings.redis_url.get_secret_value()
    options = redis_options(settings)
    if not settings.redis_sentinels:
        return Redis.from_url(url, **options)
    from_url = Redis.from_url(url).connection_pool.connection_kwargs
    sentinels = host_ports(settings.redis_sentinels)
    sentinel = Sentinel(sentinels, socket_timeout=REDIS_SOCKET_TIMEOUT)  # type: ignore[no-untyped-call]
    options.setdefault("password", from_url.get("password"))
    options.setdefault("username", from_url.get("username"))
    # The primary is looked up again on every reconnection, so a failover is followed.
    primary: Redis = sentinel.master_for(settings.redis_sentinel_service, db=from_url.get("db", 0), **options)
    return primary


def addresses(settings: WorkerSettings) -> dict[str, str]:
    """Where each dependency is, named by the setting that points at it (for retry logs and
    errors). The Redis URL may hold a password: only its host and port are shown."""
    if settings.redis_sentinels:
        redis = f"RATING_REDIS_SENTINELS={settings.redis_sentinels}, service {settings.redis_sentinel_service}"
    else:
        redis = f"RATING_REDIS_URL -> {redis_address(settings.redis_url.get_secret_value())}"
    return {"kafka": f"RATING_KAFKA_BOOTSTRAP_SERVERS={settings.kafka_bootstrap_servers}", "redis": redis}


_closing_until: ContextVar[float | None] = ContextVar("closing_until", default=None)


def begin_closing() -> None:
    """From now on, every close of this task shares one CLOSE_SECONDS budget (`close_quietly`):
    a process closing its consumer, then its producer and Redis, is done within it."""
    if _closing_until.get() is None:
        _closing_until.set(time.monotonic() + CLOSE_SECONDS)


async def close_quietly(*closing: Awaitable[object]) -> None:
    """Await the closes together, within CLOSE_SECONDS (or what is left of the budget that
    `begin_closing` set); one that fails or hangs is left behind.

    A client may also raise CancelledError from its own close (aiokafka's consumer awaits the
    fetch tasks it has just cancelled, when the broker is gone): `gather` returns it as that
    close's result, so the others still run; a cancellation of this task passes through.
    """
    until = _closing_until.get()
    budget = CLOSE_SECONDS if until is None else max(0.0, until - time.monotonic())
    results = []
    try:
        async with asyncio.timeout(budget):
            results = await asyncio.gather(*closing, return_exceptions=True)
    except TimeoutError:
        log.debug("closing the clients took longer than %.1f s: left behind", budget)
    for result in results:
        if isinstance(result, BaseException):  # an unreachable server: nothing more to do
            log.debug("closing a client failed (%s: %s)", type(result).__name__, result)
