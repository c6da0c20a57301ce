"""The compact idempotency records as their layout is documented (worker.store.records), computed
here independently of the scripts that write them, so that tests check the scripts against it."""

import hashlib
import time
from collections.abc import Iterable

from redis import Redis as SyncRedis

BITS = 18  # the documented default bucket bits


def address(prefix: str, game_id: str, bits: int = BITS) -> tuple[str, bytes]:
    """The bucket (hash key) and field of a game's compact record."""
    h = hashlib.blake2b(game_id.encode(), digest_size=16).digest()
    bucket = int.from_bytes(h[:4]) >> (32 - bits)
    return f"{prefix}r:{bucket:x}", h[4:14]


def split(value: bytes) -> tuple[bytes, int]:
    """A compact record's facts digest and expiry hour (hours since 1970)."""
    return value[:-3], int.from_bytes(value[-3:])


def expiry_hours(retention_seconds: int) -> set[int]:
    """The expiry hours a record written about now may have: the first whole hour after the
    retention (the hour may turn while the test runs)."""
    now = time.time()
    return {int(t // 3600) + -(-retention_seconds // 3600) + 1 for t in (now - 60, now, now + 60)}


def value(digest: bytes, hour: int) -> bytes:
    """A compact record's value, for tests that write records by hand."""
    return digest + hour.to_bytes(3)


def compact(r: SyncRedis, game_ids: Iterable[str], prefix: str = "rating:") -> set[str]:
    """The games of `game_ids` that have a compact record, where the store's bits put it."""
    ids = sorted(set(game_ids))
    bits = r.hget(f"{prefix}store", "record_bits")
    if bits is None or not ids:
        return set()
    with r.pipeline(transaction=False) as pipe:
        for game_id in ids:
            pipe.hexists(*address(prefix, game_id, int(bits)))
        return {g for g, there in zip(ids, pipe.execute(), strict=True) if there}


def recorded(r: SyncRedis, game_ids: Iterable[str], prefix: str = "rating:") -> set[str]:
    """The games of `game_ids` that have a record, compact or legacy."""
    ids = sorted(set(game_ids))
    with r.pipeline(transaction=False) as pipe:
        for game_id in ids:
            pipe.exists(f"{prefix}g:{game_id}")
        legacy = {g for g, there in zip(ids, pipe.execute(), strict=True) if there}
    return compact(r, ids, prefix) | legacy
