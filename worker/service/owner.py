"""Which rating system owns a key prefix: `{prefix}system` (contract v2: two deployments never
share a prefix). Every command that uses Redis checks it at start, before it writes anything or
joins a group; one that writes claims an unowned prefix for its system. A prefix holding keys
but no owner key predates it and belongs to `arena`.

Two deployments' prefixes never nest either: the keys of a prefix are keys under every prefix
it starts with (`prod:glicko2:s:...` lies under `prod:g`), so a command of the shorter one would
read, write or clear the longer one's (a `rebuild --force` clears `{prefix}*`). A command stops
the same way on a prefix that starts with an owned one, or that is the start of one: an owner
key (its value a rating system's name) among the keys under it.

A system may also have parameters that its ratings depend on (`SystemSpec.parameters`: tornelo's
K and bonus factor). The first command that writes there records the values it was started with
beside the owner key (`{prefix}parameters`, a canonical text: equal values, equal texts), and a
command started with other values stops at start the same way: ratings computed with the old
values would silently mix with new ones. They change only by `rebuild` (with the new values,
into another prefix) and `switch-over`, which records the new values (`record_parameters`)."""

from collections.abc import Sequence

from redis.asyncio import Redis
from redis.exceptions import NoPermissionError

from worker.store import keys
from worker.stream.retry import REDIS_COMMAND, retrying
from worker.systems import registry

PREDATING_OWNER = registry.DEFAULT
OWNER_SUFFIX = keys.SYSTEM.encode()
# Keys a SCAN step looks at: a short step for Redis (2,000,000 keys scanned in 1.8 s, round trips
# included), few round trips for the client.
SCAN_COUNT = 1000
CHUNK = 1000  # owner keys per MGET


class PrefixOwned(Exception):
    """The prefix belongs to another system, or nests with another deployment's: one line naming both."""


class ParametersDiffer(PrefixOwned):
    """The prefix's ratings are computed with other values of the system's parameters: one line
    naming the recorded and the given values."""


async def own_prefix(
    redis: Redis,
    prefix: str,
    system: str,
    write: bool,
    listed: Sequence[bytes] | None = None,
    setting: str = "RATING_REDIS_KEY_PREFIX",
    parameters: str | None = None,
) -> None:
    """Raise PrefixOwned if `prefix` belongs to a system other than `system` or nests with an
    owned prefix; if `write`, record `system` as its owner when the owner key is missing and
    nothing says otherwise. `listed`: every key under the prefix, when the caller has listed
    them (then they are not scanned again); `setting`: what the operator set the prefix with;
    `parameters`: the command's values of the system's parameters (`RulesSettings.parameters()`),
    None for a system that records none, or where the caller checks none (a prefix it clears
    first; `switch-over`'s live prefix, whose values it changes).

    1. Its owner key, then those of the prefixes it starts with (one MGET): another system's
       owner, or any owned shorter prefix, refuses.
    2. The keys under it, when it has no owner yet (one SCAN) or the caller listed them: an
       owner key of a longer prefix among them refuses. An owned prefix is not scanned at each
       start: a longer prefix claimed after it was refused at its claim (step 1), and `rebuild`,
       which clears, passes the keys it listed.
    3. No owner and keys under it: it predates the owner key and is the arena's.
    4. If `write`, claim it (SET NX: a claim made meanwhile by another process stands).
    5. With `parameters`: the values recorded there must be these (ParametersDiffer); if none
       are and `write`, record them (SET NX: values recorded meanwhile stand, and are checked).
    """
    await _own_system(redis, prefix, system, write, listed, setting)
    if parameters is not None:
        await _own_parameters(redis, prefix, parameters, write)


async def record_parameters(redis: Redis, prefix: str, parameters: str | None) -> None:
    """Record `parameters` on `prefix`, over any values recorded there: `switch-over`'s, once its
    checks have passed, before it writes to the live prefix (the new values, its rebuild's).
    Nothing for a system that records none."""
    if parameters is not None:
        await retrying(REDIS_COMMAND, redis.set, keys.parameters_key(prefix), parameters)


async def _own_system(
    redis: Redis, prefix: str, system: str, write: bool, listed: Sequence[bytes] | None, setting: str
) -> None:
    """`own_prefix`'s steps 1 to 4."""
    owner = await _owner_key(redis, prefix)
    if owner is not None and owner != system:
        raise PrefixOwned(_belongs(setting, prefix, owner, system))
    shorter = await _shorter_owner(redis, prefix)
    if shorter is not None:
        raise PrefixOwned(_nesting(setting, prefix, "starts with", *shorter))
    if owner is not None and listed is None:
        return
    if listed is None:
        holds, candidates = await _scan(redis, prefix)
    else:
        holds, candidates = bool(listed), [key for key in listed if _owner_key_of_longer(prefix, key)]
    longer = await _longer_owner(redis, candidates)
    if longer is not None:
        raise PrefixOwned(_nesting(setting, prefix, "is the start of", *longer))
    unclaimed = owner is None
    if unclaimed and holds:
        # Keys but no owner key when it was read: they predate the key (the arena's), unless
        # another process claimed the prefix (and wrote) between that read and the scan.
        owner = await _owner_key(redis, prefix)
        unclaimed = owner is None
        owner = owner or PREDATING_OWNER
    if unclaimed and write and owner in (None, system):

        async def claim() -> bool:
            return bool(await redis.set(keys.system_key(prefix), system, nx=True))

        # Another process may have claimed it since: then its claim stands.
        owner = system if await retrying(REDIS_COMMAND, claim) else await _owner_key(redis, prefix)
    if owner is not None and owner != system:
        raise PrefixOwned(_belongs(setting, prefix, owner, system))


async def _own_parameters(redis: Redis, prefix: str, parameters: str, write: bool) -> None:
    """`own_prefix`'s step 5."""
    key = keys.parameters_key(prefix)
    recorded = await _text(redis, key)
    if recorded is None and write:

        async def record() -> bool:
            return bool(await redis.set(key, parameters, nx=True))

        # Another process may have recorded its values since: then they stand.
        recorded = parameters if await retrying(REDIS_COMMAND, record) else await _text(redis, key)
    if recorded is not None and recorded != parameters:
        raise ParametersDiffer(
            f"{recorded} were recorded on prefix {prefix!r} ({key}); this command was started with {parameters}: "
            "ratings computed with other values would silently mix with those computed with the recorded ones; "
            "start it with the recorded values, or change them as the system's page says (\"Changing the "
            'parameters": `rebuild` with the new values into another prefix, then `switch-over`)'
        )


def _belongs(setting: str, prefix: str, owner: str, system: str) -> str:
    return (
        f"{setting}={prefix} belongs to the rating system {owner} ({keys.system_key(prefix)}), "
        f"not {system}: each deployment needs a prefix of its own"
    )


def _nesting(setting: str, prefix: str, relation: str, other: str, owner: str) -> str:
    return (
        f"{setting}={prefix} {relation} {other}, the key prefix of a {owner} deployment "
        f"({keys.system_key(other)}): a prefix must not be the start of another deployment's, nor start with one; "
        "choose another"
    )


async def _owner_key(redis: Redis, prefix: str) -> str | None:
    return await _text(redis, keys.system_key(prefix))


async def _text(redis: Redis, key: str) -> str | None:
    value = await retrying(REDIS_COMMAND, redis.get, key)
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


async def _shorter_owner(redis: Redis, prefix: str) -> tuple[str, str] | None:
    """The shortest prefix that `prefix` starts with and that a deployment owns, and its owner."""
    shorter = [prefix[:end] for end in range(1, len(prefix))]
    try:
        values = await retrying(REDIS_COMMAND, redis.mget, [keys.system_key(s) for s in shorter])
    except NoPermissionError:
        # An ACL that confines the user to its prefix hides them: left out (operations.md asks
        # that such deployments' prefixes not nest, as their ACL patterns do not).
        return None
    return next(((s, owner) for s, value in zip(shorter, values, strict=True) if (owner := _system(value))), None)


async def _scan(redis: Redis, prefix: str) -> tuple[bool, list[bytes]]:
    """Whether any key lies under the prefix, and which could be the owner keys of longer ones.

    One SCAN (it steps through the whole keyspace whatever it matches): it matches every key
    under the prefix until it meets one, then, on the same cursor, only the names of owner keys,
    which Redis filters, so that a prefix of millions of keys does not send them all over. A
    key present throughout is met by some step, under either pattern (SCAN's guarantee holds
    per step, whatever the pattern)."""

    async def scan() -> tuple[bool, list[bytes]]:
        holds, candidates, cursor = False, list[bytes](), 0
        while True:
            match = f"{prefix}*{keys.SYSTEM}" if holds else f"{prefix}*"
            cursor, found = await redis.scan(cursor, match=match, count=SCAN_COUNT)
            holds = holds or bool(found)
            names = (key if isinstance(key, bytes) else key.encode() for key in found)
            candidates += [name for name in names if _owner_key_of_longer(prefix, name)]
            if cursor == 0:
                return holds, candidates

    return await retrying(REDIS_COMMAND, scan)


def _owner_key_of_longer(prefix: str, key: bytes) -> bool:
    """Whether `key` (under `prefix`) is named as the owner key of a prefix longer than `prefix`."""
    return key.endswith(OWNER_SUFFIX) and len(key) - len(OWNER_SUFFIX) > len(prefix.encode())


async def _longer_owner(redis: Redis, candidates: list[bytes]) -> tuple[str, str] | None:
    """Of the keys named as owner keys, the first (in byte order) holding a rating system's name,
    as (its prefix, its owner). A key of the prefix's own whose name ends so holds something else:
    a game's record (`g:{game_id}`, a digest), a topic's watermarks (`w:{topic}`, a hash)."""
    candidates = sorted(candidates)
    for start in range(0, len(candidates), CHUNK):
        chunk = candidates[start : start + CHUNK]
        values = await retrying(REDIS_COMMAND, redis.mget, chunk)
        for key, value in zip(chunk, values, strict=True):
            if owner := _system(value):
                return key[: -len(OWNER_SUFFIX)].decode(errors="replace"), owner
    return None


def _system(value: bytes | str | None) -> str | None:
    """The system an owner key of another prefix names (None when absent, or when its value names
    no rating system: then it is no owner key)."""
    if value is None:
        return None
    text = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
    return text if text in registry.BY_NAME else None
