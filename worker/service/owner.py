"""Which rating system owns a key prefix: `{prefix}system` (contract v2: two deployments never
share a prefix). Every command that uses Redis checks it at start, before it writes anything or
joins a group; one that writes claims an unowned prefix for its system. A prefix holding keys
but no owner key predates it and belongs to `arena`."""

from redis.asyncio import Redis

from worker.store import keys
from worker.stream.retry import REDIS_COMMAND, retrying

PREDATING_OWNER = "arena"


class PrefixOwned(Exception):
    """The prefix belongs to another system: one line naming both."""


async def own_prefix(redis: Redis, prefix: str, system: str, write: bool) -> None:
    """Raise PrefixOwned if `prefix` belongs to a system other than `system`; if `write`, record
    `system` as its owner when the owner key is missing and nothing says otherwise."""
    owner = await _owner_key(redis, prefix)
    if owner is None:
        owner = PREDATING_OWNER if await _holds_keys(redis, prefix) else None
        if write and owner in (None, system):

            async def claim() -> bool:
                return bool(await redis.set(keys.system_key(prefix), system, nx=True))

            # Another process may have claimed it since: then its claim stands.
            owner = system if await retrying(REDIS_COMMAND, claim) else await _owner_key(redis, prefix)
    if owner is not None and owner != system:
        raise PrefixOwned(
            f"RATING_REDIS_KEY_PREFIX={prefix} belongs to the rating system {owner} ({keys.system_key(prefix)}), "
            f"not {system}: each deployment needs a prefix of its own"
        )


async def _owner_key(redis: Redis, prefix: str) -> str | None:
    value = await retrying(REDIS_COMMAND, redis.get, keys.system_key(prefix))
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


async def _holds_keys(redis: Redis, prefix: str) -> bool:
    """Whether any key lies under the prefix (a prefix written before the owner key existed)."""

    async def any_key() -> bool:
        async for _ in redis.scan_iter(match=f"{prefix}*", count=1000):
            return True
        return False

    return await retrying(REDIS_COMMAND, any_key)
