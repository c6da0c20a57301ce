"""Redis for the one-shot commands (check, restore, rebuild, switch-over, ...): their connection
(`connected`), and their round trips, each retried whole for `RATING_COMMAND_RETRY_SECONDS`
(`worker.stream.retry.REDIS_COMMAND`), then given up."""

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from worker.engine.spec import StateCodec
from worker.rules.interface import S
from worker.service.connections import close_quietly, make_redis
from worker.settings import WorkerSettings
from worker.store import keys
from worker.stream.retry import REDIS_COMMAND, REDIS_CONNECT, retrying

CHUNK = 1000  # keys per round trip
T = TypeVar("T")


@asynccontextmanager
async def connected(settings: WorkerSettings, ping: bool = True) -> AsyncIterator[Redis]:
    """The settings' Redis, closed at the end whatever happens; if `ping`, reached first (PING,
    retried as `worker.stream.retry.REDIS_CONNECT`: `Unreachable` once the retries run out)."""
    redis = make_redis(settings)
    try:
        if ping:
            await retrying(REDIS_CONNECT, redis.ping)
        yield redis
    finally:
        await close_quietly(redis.aclose())


async def with_retry(call: Callable[..., Awaitable[T]], *args: Any) -> T:
    return await retrying(REDIS_COMMAND, call, *args)


async def pipelined(redis: Redis, build: Callable[[Pipeline], object], atomic: bool = False) -> list[Any]:
    """One round trip of the commands `build` queues (in MULTI/EXEC if `atomic`), retried whole
    (a pipeline forgets its commands once executed, so each attempt builds it again)."""

    async def attempt() -> list[Any]:
        async with redis.pipeline(transaction=atomic) as pipe:
            build(pipe)
            result: list[Any] = await pipe.execute()
            return result

    return await with_retry(attempt)


async def matching_keys(redis: Redis, match: str) -> list[bytes]:
    """Every key matching `match` (a SCAN, retried from the start on failure)."""

    async def all_keys() -> list[bytes]:
        return [k async for k in redis.scan_iter(match=match, count=CHUNK)]

    return await with_retry(all_keys)


async def unlink_all(redis: Redis, found: Sequence[bytes]) -> int:
    """Unlink `found`, a chunk per round trip; the number of keys that existed."""
    unlinked = 0
    for start in range(0, len(found), CHUNK):
        unlinked += await with_retry(redis.unlink, *found[start : start + CHUNK])
    return unlinked


async def read_states(redis: Redis, prefix: str, ratings: Sequence[str], codec: StateCodec[S]) -> dict[str, S]:
    """The stored states of `ratings` under `prefix` (absent ones left out), decoded by the system's `codec`."""
    out: dict[str, S] = {}
    for start in range(0, len(ratings), CHUNK):
        chunk = ratings[start : start + CHUNK]
        values = await with_retry(redis.mget, [keys.state_key(prefix, k) for k in chunk])
        out.update({k: codec.decode(_bytes(v)) for k, v in zip(chunk, values, strict=True) if v is not None})
    return out


async def write_states(redis: Redis, prefix: str, states: dict[str, S], codec: StateCodec[S]) -> None:
    """Write `states` under `prefix`, a chunk per MSET (no check-and-set: for commands that run
    with the workers stopped, or under a prefix no worker writes)."""
    items = sorted(states.items())
    for start in range(0, len(items), CHUNK):
        mapping = {keys.state_key(prefix, k): codec.encode(s) for k, s in items[start : start + CHUNK]}
        await with_retry(redis.mset, mapping)


async def rating_keys(redis: Redis, prefix: str) -> list[str]:
    """The ratings (`player/category`) with a state under `prefix`, sorted."""
    start = keys.state_key(prefix, "")
    return sorted(k.decode().removeprefix(start) for k in await matching_keys(redis, f"{start}*"))


def _bytes(value: bytes | str) -> bytes:
    """A value as the commands' clients return it (bytes: they do not decode responses)."""
    return value.encode() if isinstance(value, str) else value


def text(value: bytes | str) -> str:
    """A reply of Redis as text (redis-py gives bytes, or str with decode_responses)."""
    return value.decode() if isinstance(value, bytes) else value
