"""The games' idempotency records in Redis: a layout whose memory does not depend on the ids.

A record says "this game was applied (or skipped) with these facts": a redelivery finds it by
the game id alone, whatever its other fields, and is a duplicate if its facts digest matches, a
conflicting duplicate otherwise. Records are kept for at least the retention
(RATING_IDEMPOTENCY_RETENTION_SECONDS) and deleted within the retention and a day.

**The compact layout.** A game id is hashed (BLAKE2b, 16 bytes). Its first `record_bits` bits
(18: 262,144 buckets) name a Redis hash `{prefix}r:{bucket in hex}`; the next 10 bytes are the
field; the value is the game's 8-byte facts digest followed by its expiry hour (3 bytes; hours
since 1970). Redis 7.0 has no expiry per hash field, so the scripts sweep: every call of every
worker (and each health check, every 2 s) deletes the expired records of the next buckets due,
each bucket once per 12-hour pass. A record written at time t expires at the start of the
second whole hour after t + retention and is deleted by the following pass: within the retention and 14 hours,
while any worker runs. Times are the workers' clocks (Redis's own would need one more command
in the worker's ACL): clocks within an hour of each other keep the retention. The buckets stay
small enough for Redis's compact listpack encoding (`hash-max-listpack-entries`, 512 by default)
up to about 100 million live records (3 million games a day for 30 days); bench/redis_memory.py
measures the bytes per game.

**A false duplicate** (a new game taken for an earlier one) needs two ids whose hashes share 98
bits (the bucket's 18 and the field's 80). At 1 million games a day and a 30-day retention, each
new game meets at most 30 million live records: the probability per year is at most
365e6 * 30e6 / 2^98, about 3.5e-14, and 100 times that at 10 million games a day.

**Rolling upgrades.** Earlier releases kept one key per game (`{prefix}g:{game id}`, 170 bytes
of Redis) and read nothing else. This release always reads both layouts; what it writes is the
store's `records` field, set by its first write to the store: `compact` for a store no one wrote
before, `both` (each game in both layouts) for one an earlier release wrote, whose workers may
still run beside the new ones. Once every worker runs this release or a later one,
`rating-worker records compact` stops the legacy writes (the legacy keys then expire with the
retention); going back to a release before this one is safe only while `records` is `both`.
"""

import hashlib
import time
from collections.abc import Iterable, Sequence
from typing import Literal

import msgpack
from redis.asyncio import Redis

from worker.store import keys, scripts

Layout = Literal["both", "compact"]
LAYOUTS: tuple[Layout, ...] = ("both", "compact")


def record_hash(game_id: str) -> bytes:
    """The hash of a game id that addresses its compact record."""
    return hashlib.blake2b(game_id.encode(), digest_size=16).digest()


def pack(value: object) -> bytes:
    """A script's batch as one argument, in MessagePack (Redis's Lua has `cmsgpack`): one
    argument instead of thousands, which redis-py would encode one by one in Python. Bytes go
    as MessagePack's raw strings, which Redis's `cmsgpack` reads (it has no `bin` type)."""
    packed: bytes = msgpack.packb(value, use_bin_type=False)
    return packed


async def lookup(redis: "Redis", prefix: str, game_ids: Sequence[str]) -> dict[str, bytes]:
    """The records of `game_ids` that exist (their facts digests; b"" if restored without facts)."""
    if not game_ids:
        return {}
    script = redis.register_script(scripts.LOOKUP)
    found = await script(args=[prefix, pack(list(game_ids)), pack([record_hash(g) for g in game_ids])])
    return {g: bytes(v) for g, v in zip(game_ids, found, strict=True) if v is not None}


async def remember(
    redis: "Redis", prefix: str, games: Iterable[tuple[str, bytes]], retention_ms: int, keep: bool
) -> int:
    """Record games done elsewhere (game id, facts digest), in the store's layout; `keep`: not
    over a record that exists. Returns how many records were written."""
    flat = [x for game_id, digest in games for x in (game_id, digest, record_hash(game_id))]
    script = redis.register_script(scripts.REMEMBER)
    wrote = await script(args=[prefix, retention_ms, 1 if keep else 0, pack(flat), int(time.time())])
    return int(wrote)


async def layout(redis: "Redis", prefix: str) -> tuple[str | None, int | None]:
    """The store's record layout and bucket bits (None before this release wrote to it)."""
    mode, bits = await redis.hmget(keys.store_key(prefix), ["records", "record_bits"])
    if mode is None or bits is None:
        return None, None
    return (mode.decode() if isinstance(mode, bytes) else mode), int(bits)


async def set_layout(redis: "Redis", prefix: str, mode: Layout) -> None:
    """Write the records in `mode` from now on (the bucket bits are kept, or set)."""
    store = keys.store_key(prefix)
    await redis.hset(store, "records", mode)
    await redis.hsetnx(store, "record_bits", scripts.RECORD_BITS)
