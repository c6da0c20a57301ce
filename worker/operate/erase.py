"""`rating-worker erase PLAYER_ID [--category C]`: a player forgotten, for a privacy request.

For each of the player's ratings (every category, or the one given), in this order:

1. In one Redis script, for every rating at once: refuse if the store is untrusted, if another
   process holds the rating's publication lease, or if its outbox holds events not yet
   published (unless `--force`, which drops them); else take the lease (so that no worker
   publishes the rating meanwhile) and delete the state and the outbox.
2. Publish a tombstone (the rating's key, a null value) on the output topic, acknowledged by
   every in-sync replica: consumers forget the key, compaction drops its events, and
   `rating-worker restore` does not bring it back.
3. Release the leases.

A game of the player applied after the delete starts him afresh, unrated, at `seq` 1; its
event is published after the tombstone (the lease holds it back until then). The idempotency
records of his earlier games stay (they hold a game id and a digest, nothing of the player):
one of those games redelivered is still a duplicate, so an erased rating does not come back.
Running it again is harmless: nothing is left to delete, and the tombstones are published again.
"""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from aiokafka import AIOKafkaProducer
from redis.asyncio import Redis

from worker.service.connections import close_quietly, kafka_options, make_redis
from worker.service.owner import own_prefix
from worker.service.wiring import compression
from worker.settings import WorkerSettings
from worker.store import keys
from worker.stream.retry import KAFKA_CONNECT, KAFKA_PUBLISH, REDIS_COMMAND, Unreachable, retrying

# ARGV: prefix, token, lease ms, force (0/1), ratings... Returns {"ok", erased...} (the ratings
# that had a state), or {"untrusted", reason}, {"leased", rating} or {"pending", rating, events}.
_TAKE_AND_DELETE = f"""
local p, token, lease_ms, force = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4] == '1'
local why = redis.call('GET', p .. '{keys.UNTRUSTED}')
if why then return {{'untrusted', why}} end
for i = 5, #ARGV do
  local r = ARGV[i]
  local holder = redis.call('GET', p .. '{keys.LEASE}' .. r)
  if holder and holder ~= token then return {{'leased', r}} end
  local waiting = redis.call('LLEN', p .. '{keys.OUTBOX}' .. r)
  if waiting > 0 and not force then return {{'pending', r, tostring(waiting)}} end
end
local erased = {{'ok'}}
for i = 5, #ARGV do
  local r = ARGV[i]
  redis.call('SET', p .. '{keys.LEASE}' .. r, token, 'PX', lease_ms)
  redis.call('DEL', p .. '{keys.OUTBOX}' .. r)
  if redis.call('DEL', p .. '{keys.STATE}' .. r) == 1 then erased[#erased + 1] = r end
end
return erased
"""
# ARGV: prefix, token, ratings...: releases the leases still ours.
_RELEASE = f"""
for i = 3, #ARGV do
  local lease = ARGV[1] .. '{keys.LEASE}' .. ARGV[i]
  if redis.call('GET', lease) == ARGV[2] then redis.call('DEL', lease) end
end
return 0
"""


class EraseRefused(Exception):
    """Nothing was erased: the reason, in one line."""


class EraseIncomplete(Exception):
    """The states were deleted, the tombstones not published: the same erase must run again."""


@dataclass(frozen=True)
class Erased:
    ratings: list[str]  # every rating tombstoned
    had_state: list[str]  # those of them that had a state in Redis


def ratings_of(player_id: str, categories: Sequence[str]) -> list[str]:
    return [f"{player_id}/{category}" for category in categories]


async def erase(settings: WorkerSettings, player_id: str, categories: Sequence[str], force: bool) -> Erased:
    ratings = ratings_of(player_id, categories)
    prefix = settings.redis_key_prefix
    token = f"erase-{uuid.uuid4().hex}"
    redis = make_redis(settings)
    # Connected before anything is deleted: the tombstones go out right after the delete.
    producer = AIOKafkaProducer(
        **kafka_options(settings), acks="all", enable_idempotence=False, compression_type=compression(settings)
    )
    try:
        await own_prefix(redis, prefix, settings.system, write=True)
        await retrying(KAFKA_CONNECT, producer.start)
        # The leases outlast the publication's retries, so no worker publishes his ratings
        # before the tombstones (a crash of this command frees them when they expire).
        lease_ms = int((settings.publication_lease_seconds + 2 * settings.command_retry_seconds) * 1000)
        answer = await _script(redis, _TAKE_AND_DELETE, prefix, token, lease_ms, int(force), *ratings)
        verdict, *rest = [item.decode() if isinstance(item, bytes) else str(item) for item in answer]
        if verdict == "untrusted":
            raise EraseRefused(f"the store is untrusted ({rest[0]}): run `rating-worker restore` first")
        if verdict == "leased":
            raise EraseRefused(f"{rest[0]} is being published by a worker; try again in a few seconds")
        if verdict == "pending":
            events = "1 event" if rest[1] == "1" else f"{rest[1]} events"
            raise EraseRefused(
                f"{rest[0]} has {events} not yet published (a worker publishes them soon; try again, "
                "or --force to drop them)"
            )
        try:
            await _tombstones(settings, producer, ratings)
        except Unreachable as e:
            raise EraseIncomplete(
                f"his states are deleted but the tombstones are NOT published ({e}): run the same erase again"
            ) from None
        finally:
            await _script(redis, _RELEASE, prefix, token, *ratings)
        return Erased(ratings, rest)
    finally:
        await close_quietly(producer.stop(), redis.aclose())


async def _script(redis: Redis, source: str, *args: str | int) -> list[object]:
    async def run() -> list[object]:
        answer: list[object] = await redis.eval(source, 0, *args)
        return answer

    return await retrying(REDIS_COMMAND, run)


async def _tombstones(settings: WorkerSettings, producer: AIOKafkaProducer, ratings: Sequence[str]) -> None:
    """A null value on each rating's key, acknowledged (`acks=all`); partitioned by the key, as
    the worker's events are (murmur2, every Kafka client's default)."""

    async def send() -> None:
        sent = [await producer.send(settings.topic_ratings, None, key=rating.encode()) for rating in ratings]
        for future in sent:
            await future

    await retrying(KAFKA_PUBLISH, send)
