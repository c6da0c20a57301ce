"""Redis memory per rating and per recorded game, measured on a fresh local redis-server.

    .venv/bin/python bench/redis_memory.py [--ratings 100000] [--games 200000]

States are written and outboxes emptied through the worker's own scripts (RedisStore), so
the numbers are those of the real layout (worker/keys.py). Reported, not asserted.
"""

import argparse
import asyncio

from redis.asyncio import Redis

from worker.embedded.stack import RedisServer
from worker.engine.engine import Engine, SeedRow
from worker.rules.arena import ArenaRules
from worker.rules.categories import Category
from worker.rules.hundredths import Hundredths, Points
from worker.rules.state import UNSEEN
from worker.store.protocol import StateWrite, Write
from worker.store.redis_store import RedisStore

CHUNK = 1000
RETENTION = 30 * 24 * 3600


async def used(redis: "Redis") -> int:
    info = await redis.info("memory")
    return int(info["used_memory"])


async def measure(ratings: int, games: int) -> None:
    server = RedisServer().start()
    try:
        redis = Redis.from_url(server.url)
        store = RedisStore(redis, "rating:", "bench", 60, RETENTION)
        engine = Engine(ArenaRules(), Points(1200))
        base = await used(redis)
        for start in range(0, ratings, CHUNK):
            items = []
            for i in range(start, min(start + CHUNK, ratings)):
                row = SeedRow(f"p{i:07d}", Category.BLITZ, Hundredths(150000 + i % 90000), 40)
                update = engine.seed(row, UNSEEN).update
                assert update is not None
                items.append(Write("", b"", ((row.key, 0),), (StateWrite(row.key, update.state, update.payload),)))
            _, claimed = await store.apply(items)
            await store.ack({k: head for k, (head,) in claimed.outboxes.items()})
        after_ratings = await used(redis)
        for start in range(0, games, CHUNK):
            items = [Write(f"g{i:010d}", bytes(8), (), ()) for i in range(start, min(start + CHUNK, games))]
            await store.apply(items)
        after_games = await used(redis)
        per_rating = (after_ratings - base) / ratings
        per_game = (after_games - after_ratings) / games
        print(
            f"redis: {per_rating:.0f} B per rating (established, no qualifying games), "
            f"{3 * per_rating:.0f} B per player rated in 3 categories"
        )
        print(f"redis: {per_game:.0f} B per recorded game (idempotency record with its expiry)")
        await redis.aclose()
    finally:
        server.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ratings", type=int, default=100_000)
    parser.add_argument("--games", type=int, default=200_000)
    args = parser.parse_args()
    asyncio.run(measure(args.ratings, args.games))


if __name__ == "__main__":
    main()
