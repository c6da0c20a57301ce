"""Redis memory per rating and per recorded game, measured on a fresh local redis-server.

    .venv/bin/python bench/redis_memory.py [--ratings 100000] [--games 1000000] [--quick]

Each figure is `used_memory` after the writes less before, on an emptied server, divided by
the count; the bucket encodings (listpack or hashtable) are counted on the keys themselves.

- per rating: states written and outboxes emptied through the worker's own scripts;
- per recorded game, the layout in use: games recorded through the worker's own scripts
  (`RedisStore.apply`), with short ids (`g0000000001`) and with 128-character ids, in a store
  that is new (`compact`) and in one an earlier release wrote (`both`, during a rolling upgrade);
- the candidates it was chosen from, written directly (HSET or SET, no script), each with short
  ids: one string key per game (the earlier releases' layout); hashes addressed by 13 to 20
  bits of the id's hash with 8, 10 or 12 bytes of it as the field (2^13 and 2^14 buckets hold as
  many records each as 2^18 would at 32 and 16 times the games: the upper end of the range of
  the layout in use, without writing 32 million games); the same hashes in daily
  generations that expire whole (a key TTL per bucket, 2^16 buckets a day), whose lookups would
  cost a call per live generation (31 at 30 days) instead of one.

Reported, not asserted. `--quick` measures 100,000 games (the figures then favour nothing: the
buckets hold ten times fewer records).
"""

import argparse
import asyncio
import hashlib
from collections.abc import Callable

from redis.asyncio import Redis

from worker.embedded.stack import RedisServer
from worker.engine.engine import Engine, SeedRow
from worker.rules.categories import Category
from worker.rules.hundredths import Hundredths, Points
from worker.store import keys
from worker.store.protocol import StateWrite, Write
from worker.store.redis_store import RedisStore
from worker.systems.arena.codec import RATING_STATES
from worker.systems.arena.state import UNSEEN, RatingState
from worker.systems.registry import ARENA

CHUNK = 1000
RETENTION = 30 * 24 * 3600
PREFIX = "rating:"
DIGEST = bytes(range(8))  # a facts digest: its value does not change the size
SAMPLE_BUCKETS = 2000  # keys whose encoding is counted


async def used(redis: "Redis") -> int:
    info = await redis.info("memory")
    return int(info["used_memory"])


def short_id(i: int) -> str:
    return f"g{i:010d}"


def long_id(i: int) -> str:
    return f"game-{i:010d}-".ljust(128, "x")


async def encodings(redis: "Redis", pattern: str) -> str:
    """The share of listpack buckets among a sample of the keys matching `pattern`."""
    counts: dict[str, int] = {}
    seen = 0
    async for key in redis.scan_iter(pattern, count=1000):
        encoding = (await redis.object("encoding", key)) or b"?"
        name = encoding.decode() if isinstance(encoding, bytes) else str(encoding)
        counts[name] = counts.get(name, 0) + 1
        seen += 1
        if seen >= SAMPLE_BUCKETS:
            break
    return ", ".join(f"{n} {100 * c / seen:.1f} %" for n, c in sorted(counts.items())) if seen else "-"


async def per_rating(redis: "Redis", ratings: int) -> float:
    store = RedisStore(redis, PREFIX, "bench", 60, RETENTION, codec=RATING_STATES)
    engine = Engine(ARENA, Points(1200))
    base = await used(redis)
    for start in range(0, ratings, CHUNK):
        items: list[Write[RatingState]] = []
        for i in range(start, min(start + CHUNK, ratings)):
            row = SeedRow(f"p{i:07d}", Category.BLITZ, Hundredths(150000 + i % 90000), 40)
            update = engine.seed(row, UNSEEN).update
            assert update is not None
            items.append(Write("", b"", ((row.key, 0),), (StateWrite(row.key, update.state, update.payload),)))
        _, claimed = await store.apply(items)
        await store.ack({k: head for k, (head,) in claimed.outboxes.items()})
    return (await used(redis) - base) / ratings


async def through_scripts(redis: "Redis", games: int, name: Callable[[int], str], earlier_release: bool) -> float:
    """Bytes per game recorded by the worker's scripts (games that change no rating: records only)."""
    if earlier_release:
        await redis.hset(keys.store_key(PREFIX), "writes", 1)  # what an earlier release's applies leave
    store = RedisStore(redis, PREFIX, "bench", 60, RETENTION, codec=RATING_STATES)
    await store.apply([])  # the layout is set by the first apply, before the base is taken
    base = await used(redis)
    for start in range(0, games, CHUNK):
        await store.apply([Write(name(i), DIGEST, (), ()) for i in range(start, min(start + CHUNK, games))])
    return (await used(redis) - base) / games


async def strings(redis: "Redis", games: int) -> float:
    """The earlier releases' layout: one key per game, its digest in hex, with a TTL."""
    base = await used(redis)
    for start in range(0, games, CHUNK):
        async with redis.pipeline(transaction=False) as pipe:
            for i in range(start, min(start + CHUNK, games)):
                pipe.set(keys.game_key(PREFIX, short_id(i)), DIGEST.hex(), px=RETENTION * 1000)
            await pipe.execute()
    return (await used(redis) - base) / games


async def hashes(redis: "Redis", games: int, bits: int, field_bytes: int, daily: bool) -> float:
    """Hashes addressed by `bits` of the id's hash, `field_bytes` more of it as the field, the
    value the digest and a 3-byte hour; `daily`: bucket keys of one day's generation, with a TTL."""
    base = await used(redis)
    value = DIGEST + bytes(3)
    for start in range(0, games, CHUNK):
        async with redis.pipeline(transaction=False) as pipe:
            for i in range(start, min(start + CHUNK, games)):
                h = hashlib.blake2b(short_id(i).encode(), digest_size=16).digest()
                bucket = int.from_bytes(h[:4]) >> (32 - bits)
                key = f"{PREFIX}{'d:20421:' if daily else 'c:'}{bucket:x}"
                pipe.hset(key, h[4 : 4 + field_bytes], value)
                if daily:
                    pipe.expire(key, RETENTION + 86400)
            await pipe.execute()
    return (await used(redis) - base) / games


async def measure(ratings: int, games: int) -> None:
    server = RedisServer().start()
    redis = Redis.from_url(server.url)
    try:
        version = (await redis.info("server"))["redis_version"]
        print(f"redis-server {version}; {games:,} games per figure, {ratings:,} ratings\n")

        async def fresh() -> None:
            await redis.flushall()

        await fresh()
        rating = await per_rating(redis, ratings)
        print(f"per rating: {rating:.0f} B (established, no qualifying games); {3 * rating:.0f} B per player in 3")

        print("\nper recorded game, the layout in use (the worker's scripts):")
        for label, name, earlier in (
            ("compact, short ids", short_id, False),
            ("compact, 128-character ids", long_id, False),
            ("both (rolling upgrade), short ids", short_id, True),
            ("both (rolling upgrade), 128-character ids", long_id, True),
        ):
            await fresh()
            per_game = await through_scripts(redis, games, name, earlier)
            print(f"  {label:<44} {per_game:6.1f} B   buckets: {await encodings(redis, f'{PREFIX}{keys.RECORDS}*')}")

        print("\nper recorded game, the candidates (written directly, short ids):")
        await fresh()
        print(f"  {'one string key per game (earlier releases)':<44} {await strings(redis, games):6.1f} B")
        for bits, field_bytes in ((13, 10), (14, 10), (16, 10), (18, 8), (18, 10), (18, 12), (20, 10)):
            await fresh()
            per_game = await hashes(redis, games, bits, field_bytes, daily=False)
            label = f"2^{bits} hashes, {field_bytes}-byte fields"
            print(f"  {label:<44} {per_game:6.1f} B   buckets: {await encodings(redis, f'{PREFIX}c:*')}")
        await fresh()
        per_game = await hashes(redis, games, 16, 10, daily=True)
        label = "daily generations of 2^16 hashes, with TTL"
        print(f"  {label:<44} {per_game:6.1f} B   buckets: {await encodings(redis, f'{PREFIX}d:*')}")
    finally:
        await redis.aclose()
        server.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ratings", type=int, default=100_000)
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="100,000 games and 10,000 ratings")
    args = parser.parse_args()
    if args.quick:
        args.games, args.ratings = 100_000, 10_000
    asyncio.run(measure(args.ratings, args.games))


if __name__ == "__main__":
    main()
