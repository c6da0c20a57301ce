"""`rating-worker erase PLAYER_ID [--category C]`: a player forgotten, for a privacy request.

For each of the player's ratings (every category, or the one given), in this order:

1. In one Redis script, for every rating at once: refuse if the store is untrusted, if another
   process holds the rating's publication lease, or if its outbox holds events not yet
   published (unless `--force`, which drops them); else take the lease (so that no worker
   publishes the rating meanwhile) and delete the state and the outbox. A rating whose lease
   this erase holds already (an earlier run of the same erase that did not finish) is not
   deleted again: what it holds now came after that deletion (a game of his since, waiting
   behind the lease) and is published after the tombstone.
2. Publish a tombstone (the rating's key, a null value) on the output topic, acknowledged by
   every in-sync replica (`Publisher.deliver`: the leases are renewed before each new attempt):
   consumers forget the key, compaction drops its events, and `rating-worker restore` does not
   bring it back.
3. Release the leases; or, if an attempt's outcome was unknown (a copy of a tombstone may still
   reach the broker), leave them to run out one publication lease after it, so that no later
   event of his (a new game, at `seq` 1) is published before such a copy.

The leases are this erase's (`erase:{player}`), claimed for the publication lease plus the
longest an attempt can take (`worker.service.wiring.lease_seconds`). If the tombstones cannot be
published (Kafka away past the retry budget), or the command is stopped by a signal, they are
kept: no worker publishes a game of his meanwhile, and running the same erase again while they
are held completes it. Two erases of one player at the same time share them (one token):
don't run them so.

A game of the player applied after the delete starts him afresh, unrated, at `seq` 1; its
event is published after the tombstone (the lease holds it back until then). The idempotency
records of his earlier games stay (they hold a game id and a digest, nothing of the player):
one of those games redelivered is still a duplicate, so an erased rating does not come back.
Running it again is harmless: nothing is left to delete, and the tombstones are published again.
"""

import time
from collections.abc import Sequence
from dataclasses import dataclass

from redis.asyncio import Redis

from worker.operate.close_period import refuse_during_close
from worker.service.connections import close_quietly, make_redis
from worker.service.owner import own_prefix
from worker.service.wiring import lease_seconds, make_producer, start_producer
from worker.settings import WorkerSettings
from worker.store import keys
from worker.stream.publisher import Delivered, Publisher
from worker.stream.retry import REDIS_COMMAND, Unreachable, retrying

# ARGV: prefix, token, lease ms, force (0/1), ratings... Returns {"ok", owed ms, erased...} (the
# ratings that had a state), or {"untrusted", reason}, {"leased", rating} or {"pending", rating,
# events}. A rating already leased by this token was deleted by an earlier run: its lease is renewed
# only, and what was left of it is "owed" (that run's last attempt may still reach the broker).
_TAKE_AND_DELETE = f"""
local p, token, lease_ms, force = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4] == '1'
local why = redis.call('GET', p .. '{keys.UNTRUSTED}')
if why then return {{'untrusted', why}} end
for i = 5, #ARGV do
  local r = ARGV[i]
  local holder = redis.call('GET', p .. '{keys.LEASE}' .. r)
  if holder and holder ~= token then return {{'leased', r}} end
  local waiting = redis.call('LLEN', p .. '{keys.OUTBOX}' .. r)
  if holder ~= token and waiting > 0 and not force then return {{'pending', r, tostring(waiting)}} end
end
local erased, owed = {{}}, 0
for i = 5, #ARGV do
  local r = ARGV[i]
  local lease = p .. '{keys.LEASE}' .. r
  if redis.call('GET', lease) == token then
    owed = math.max(owed, redis.call('PTTL', lease))
    redis.call('PEXPIRE', lease, lease_ms)
  else
    redis.call('SET', lease, token, 'PX', lease_ms)
    redis.call('DEL', p .. '{keys.OUTBOX}' .. r)
    if redis.call('DEL', p .. '{keys.STATE}' .. r) == 1 then erased[#erased + 1] = r end
  end
end
return {{'ok', tostring(owed), unpack(erased)}}
"""
# ARGV: prefix, token, ms, ratings...: the leases still ours are kept `ms` more (0: released);
# returns the ratings whose lease is not ours.
_KEEP_OR_RELEASE = f"""
local lost = {{}}
for i = 4, #ARGV do
  local lease = ARGV[1] .. '{keys.LEASE}' .. ARGV[i]
  if redis.call('GET', lease) == ARGV[2] then
    if ARGV[3] == '0' then redis.call('DEL', lease) else redis.call('PEXPIRE', lease, ARGV[3]) end
  else
    lost[#lost + 1] = ARGV[i]
  end
end
return lost
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
    token = f"erase:{player_id}"  # the same for a run again, which then finds the leases its own
    lease_ms = int(lease_seconds(settings) * 1000)
    redis = make_redis(settings)
    # Connected before anything is deleted: the tombstones go out right after the delete.
    producer = make_producer(settings)
    try:
        await own_prefix(redis, prefix, settings.spec().name, write=True, parameters=settings.parameters())
        await refuse_during_close(redis, settings, "erase")
        await start_producer(producer, settings)
        taken_at = time.monotonic()  # the leases run from no earlier than this
        answer = await _script(redis, _TAKE_AND_DELETE, prefix, token, lease_ms, int(force), *ratings)
        verdict, *rest = [item.decode() if isinstance(item, bytes) else str(item) for item in answer]
        if verdict == "untrusted":
            raise EraseRefused(f"the store is untrusted ({rest[0]}): run `rating-worker restore` first")
        if verdict == "leased":
            raise EraseRefused(
                f"{rest[0]} is being published by a worker; try again (a worker keeps it up to "
                f"RATING_PUBLICATION_LEASE_SECONDS={settings.publication_lease_seconds:g} after a send of unknown "
                "outcome)"
            )
        if verdict == "pending":
            events = "1 event" if rest[1] == "1" else f"{rest[1]} events"
            raise EraseRefused(
                f"{rest[0]} has {events} not yet published (a worker publishes them soon; try again, "
                "or --force to drop them)"
            )

        async def renew(keys_: list[bytes]) -> list[bytes]:
            lost = await _script(redis, _KEEP_OR_RELEASE, prefix, token, lease_ms, *(k.decode() for k in keys_))
            return [k if isinstance(k, bytes) else str(k).encode() for k in lost]

        owed_until = taken_at + int(rest[0]) / 1000  # an earlier run's last attempt, a lease later
        publisher = Publisher(producer, settings.topic_ratings, settings.producer_delivery_timeout_seconds)
        incomplete = (
            "his states are deleted but the tombstones are NOT published ({}); his leases are kept, up to "
            f"{lease_ms / 1000:.0f} s after its last attempt, so that no game of his is published meanwhile: "
            "run the same erase again"
        )
        tombstones = dict.fromkeys((r.encode() for r in ratings), None)
        try:
            delivered = await publisher.deliver(tombstones, renew, taken_at, settings.publication_lease_seconds)
        except Unreachable as e:
            raise EraseIncomplete(incomplete.format(e)) from None
        if missing := sorted(k.decode() for k in delivered.given_up | delivered.lost):
            why = f"not acknowledged for {', '.join(missing)}" + (
                " (a worker took the lease)" if delivered.lost else ""
            )
            raise EraseIncomplete(incomplete.format(why))
        await _release(redis, settings, prefix, token, ratings, delivered, owed_until)
        return Erased(ratings, rest[1:])
    finally:
        await close_quietly(producer.stop(), redis.aclose())


async def _release(
    redis: Redis,
    settings: WorkerSettings,
    prefix: str,
    token: str,
    ratings: Sequence[str],
    delivered: Delivered,
    owed_until: float,
) -> None:
    """Release the leases, unless an attempt's outcome was unknown: then they run out one
    publication lease after it (without an idempotent producer, which drops its own late copies);
    and never before what an earlier run of this erase left of them (`owed_until`: its tombstones,
    from another producer, may still arrive)."""
    until = owed_until
    if delivered.uncertain_at is not None and not settings.kafka_idempotent_producer:
        until = max(until, delivered.uncertain_at + settings.publication_lease_seconds)
    hold = until - time.monotonic()
    await _script(redis, _KEEP_OR_RELEASE, prefix, token, int(hold * 1000) if hold > 0 else 0, *ratings)


async def _script(redis: Redis, source: str, *args: str | int) -> list[object]:
    async def run() -> list[object]:
        answer: list[object] = await redis.eval(source, 0, *args)
        return answer

    return await retrying(REDIS_COMMAND, run)
