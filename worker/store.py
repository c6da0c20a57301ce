"""Rating states, idempotency records and outboxes in Redis, written by atomic check-and-set.

Three scripts, each one round trip for a whole batch:
- `read`: the states, outbox lengths and game records a batch needs;
- `apply`: for each game in order, checks that every state it read still has the seq it
  read (and that the game is still unrecorded), then writes its new states, appends its
  events to the outboxes and records the game, all or nothing per game; a game that fails
  the check taints every rating it read, so no later game of the batch touching them is
  applied before it (per-player order). Then it claims the publication lease of every
  outbox it touched and returns their contents, but for the events it has just appended,
  which the caller holds (not sending them back halves the bytes a batch moves);
- `ack`: removes acknowledged events from the outboxes whose lease is still ours, after each
  round of publication, so that a crash can only repeat the last event sent of a rating,
  right after its original. It removes an outbox's head only if the head is the very event
  that was sent (compare-and-pop), so an ack retried after a lost reply, or run after the
  outbox moved on, never drops an event it did not send.

The seq of a state is its version: every write increases it by one, so an unchanged seq is
an unchanged state. Keys are built inside the scripts from the prefix, so the worker needs
a single Redis primary (standalone or Sentinel), not Redis Cluster.
"""

import asyncio
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import msgpack
from redis.asyncio import Redis

from worker import keys, metrics
from worker.rules.state import UNSEEN, RatingState
from worker.state_codec import decode_state

_READ = """
local p, ratings, games = ARGV[1], cmsgpack.unpack(ARGV[2]), cmsgpack.unpack(ARGV[3])
local out = {}
for _, r in ipairs(ratings) do
  out[#out + 1] = redis.call('GET', p .. $STATE .. r)
  out[#out + 1] = redis.call('LLEN', p .. $OUTBOX .. r)
end
for _, g in ipairs(games) do
  out[#out + 1] = redis.call('GET', p .. $GAME .. g)
end
return cmsgpack.pack(out)
"""

_CLAIM = """
-- Claims each outbox that is not empty and not leased by another process. Returns its events
-- but the last `appended[r]`: those were appended by this very call, and the caller has them.
local function claim(p, token, lease_ms, ratings, appended)
  local claimed, blocked = {}, {}
  for _, r in ipairs(ratings) do
    local outbox = p .. $OUTBOX .. r
    local n = redis.call('LLEN', outbox)
    if n > 0 then
      local lease = p .. $LEASE .. r
      local holder = redis.call('GET', lease)
      if (not holder) or holder == token then
        redis.call('SET', lease, token, 'PX', lease_ms)
        local older = n - (appended[r] or 0)
        claimed[#claimed + 1] = r
        claimed[#claimed + 1] = older > 0 and redis.call('LRANGE', outbox, 0, older - 1) or {}
      else
        blocked[#blocked + 1] = r
      end
    end
  end
  return claimed, blocked
end
"""

_APPLY = (
    _CLAIM
    + """
local p, token = ARGV[1], ARGV[2]
local lease_ms, retention_ms = tonumber(ARGV[3]), tonumber(ARGV[4])
-- Items: {game_id, digest, {rating, seq read, ...}, {{rating, state, event}, ...}}.
local items, flush = cmsgpack.unpack(ARGV[5]), cmsgpack.unpack(ARGV[6])
local tainted, results, seen, touched, appended = {}, {}, {}, {}, {}
local function touch(r)
  if not seen[r] then seen[r] = true; touched[#touched + 1] = r end
end
local function seq_of(r)
  local v = redis.call('GET', p .. $STATE .. r)
  if not v then return 0 end
  return tonumber(string.match(v, '^(%d+)'))
end
for n, item in ipairs(items) do
  local game_id, digest, reads, writes = item[1], item[2], item[3], item[4]
  local ok = true
  for k = 1, #reads, 2 do
    if tainted[reads[k]] or seq_of(reads[k]) ~= reads[k + 1] then ok = false end
  end
  if ok and game_id ~= '' and redis.call('EXISTS', p .. $GAME .. game_id) == 1 then ok = false end
  if ok then
    for _, w in ipairs(writes) do
      redis.call('SET', p .. $STATE .. w[1], w[2])
      redis.call('RPUSH', p .. $OUTBOX .. w[1], w[3])
      appended[w[1]] = (appended[w[1]] or 0) + 1
      touch(w[1])
    end
    if game_id ~= '' then redis.call('SET', p .. $GAME .. game_id, digest, 'PX', retention_ms) end
    results[n] = 1
  else
    for k = 1, #reads, 2 do tainted[reads[k]] = true end
    results[n] = 0
  end
end
for _, r in ipairs(flush) do touch(r) end
local claimed, blocked = claim(p, token, lease_ms, touched, appended)
return {results, claimed, blocked}
"""
)

_ACK = """
local p, token, lease_ms = ARGV[1], ARGV[2], tonumber(ARGV[3])
-- Sent: {rating, event sent, 1 to release the lease or 0 to renew it, ...}.
local sent = cmsgpack.unpack(ARGV[4])
local lost = {}
for i = 1, #sent, 3 do
  local r = sent[i]
  local lease = p .. $LEASE .. r
  if redis.call('GET', lease) == token then
    local outbox = p .. $OUTBOX .. r
    if redis.call('LINDEX', outbox, 0) == sent[i + 1] then redis.call('LPOP', outbox) end
    if sent[i + 2] == 1 then
      redis.call('DEL', lease)
    else
      redis.call('PEXPIRE', lease, lease_ms)
    end
  else
    lost[#lost + 1] = r
  end
end
return lost
"""


def _lua(source: str) -> str:
    """The script with the key kinds of `worker.keys` put in, so that they are defined once."""
    for name in ("STATE", "OUTBOX", "LEASE", "GAME"):
        source = source.replace(f"${name}", repr(getattr(keys, name)))
    return source


_READ, _APPLY, _ACK = _lua(_READ), _lua(_APPLY), _lua(_ACK)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a batch read: states (UNSEEN when absent), outbox lengths, game records (digests)."""

    states: dict[str, RatingState]
    unconfirmed: dict[str, int]
    records: dict[str, bytes]


@dataclass(frozen=True, slots=True)
class Write:
    """One item of an atomic apply: a game (or a seeding row, with no game id) and its effects."""

    game_id: str  # "" for a seeding row: nothing to record
    digest: bytes
    reads: tuple[tuple[str, int], ...]  # (rating, seq read)
    writes: tuple[tuple[str, bytes, bytes], ...]  # (rating, encoded state, event payload)


@dataclass(frozen=True, slots=True)
class Claimed:
    """Outboxes whose lease this process now holds (events in seq order), and those it could not claim."""

    outboxes: dict[str, list[bytes]]
    blocked: list[str]


class RedisStore:
    def __init__(
        self,
        redis: "Redis",
        prefix: str,
        token: str,
        lease_seconds: float,
        retention_seconds: int,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
    ) -> None:
        self.redis = redis
        self.prefix = prefix
        self.token = token
        self.lease_ms = int(lease_seconds * 1000)
        self.retention_ms = retention_seconds * 1000
        self.wait_replicas = wait_replicas
        self.wait_timeout_ms = wait_timeout_ms
        self._read = redis.register_script(_READ)
        self._apply = redis.register_script(_APPLY)
        self._ack = redis.register_script(_ACK)

    async def read(self, ratings: Sequence[str], game_ids: Sequence[str]) -> Snapshot:
        with metrics.REDIS_SECONDS.labels("read").time():
            packed = await self._read(args=[self.prefix, _pack(ratings), _pack(game_ids)])
        reply = msgpack.unpackb(packed, raw=True)  # a missing key is `false`
        states, unconfirmed = {}, {}
        for n, rating in enumerate(ratings):
            value, pending = reply[2 * n], reply[2 * n + 1]
            states[rating] = UNSEEN if value is False else decode_state(value)
            unconfirmed[rating] = int(pending)
        records = {}
        for n, game_id in enumerate(game_ids):
            value = reply[2 * len(ratings) + n]
            if value is not False:
                records[game_id] = bytes.fromhex(value.decode())
        return Snapshot(states, unconfirmed, records)

    async def apply(self, items: Sequence[Write], flush: Iterable[str] = ()) -> tuple[list[bool], Claimed]:
        """Apply what still checks out, in order; claim the touched outboxes (and `flush`)."""
        packed = _pack([(i.game_id, i.digest.hex(), [x for read in i.reads for x in read], i.writes) for i in items])
        args: list[Any] = [self.prefix, self.token, self.lease_ms, self.retention_ms, packed, _pack(list(flush))]
        with metrics.REDIS_SECONDS.labels("apply").time():
            results, claimed, blocked = await self._apply(args=args)
        await self._wait_for_replicas()
        applied = [r == 1 for r in results]
        # The script returns the events older than this call's; ours follow them, in item order.
        ours: dict[str, list[bytes]] = defaultdict(list)
        for item, ok in zip(items, applied, strict=True):
            if ok:
                for rating, _, payload in item.writes:
                    ours[rating].append(payload)
        return applied, _claimed(claimed, blocked, ours)

    async def claim(self, ratings: Iterable[str]) -> Claimed:
        return (await self.apply((), ratings))[1]

    async def ack(self, sent: dict[str, bytes], keep: Collection[str] = ()) -> list[str]:
        """Drop the event Kafka acknowledged from the head of each outbox, if our lease holds.

        Only an outbox whose head is still that event loses it: an ack that is retried
        (its first reply lost) or that comes after the outbox changed hands drops nothing
        else. Events carry their seq, so no two events of one outbox are equal. The lease
        is released, except for the ratings in `keep` (more of their events are still to
        be sent), whose lease is renewed instead. Returns the ratings whose lease
        was lost (it expired, during an outage): their events stay for the next holder.
        """
        if not sent:
            return []
        flat = [x for rating, payload in sent.items() for x in (rating, payload, 0 if rating in keep else 1)]
        with metrics.REDIS_SECONDS.labels("ack").time():
            lost = await self._ack(args=[self.prefix, self.token, self.lease_ms, _pack(flat)])
        return [r.decode() for r in lost]

    async def _wait_for_replicas(self) -> None:
        """With RATING_REDIS_WAIT_REPLICAS > 0, nothing is published before replicas hold the write."""
        while self.wait_replicas > 0:
            acknowledged = await self.redis.wait(self.wait_replicas, self.wait_timeout_ms)
            if int(acknowledged) >= self.wait_replicas:
                return
            await asyncio.sleep(0.1)


def _pack(value: object) -> bytes:
    """A script's batch as one argument, in MessagePack (Redis's Lua has `cmsgpack`): one
    argument instead of thousands, which redis-py would encode one by one in Python. Bytes go
    as MessagePack's raw strings, which Redis's `cmsgpack` reads (it has no `bin` type)."""
    packed: bytes = msgpack.packb(value, use_bin_type=False)
    return packed


def _claimed(claimed: list[Any], blocked: list[bytes], ours: dict[str, list[bytes]]) -> Claimed:
    outboxes = {}
    for i in range(0, len(claimed), 2):
        rating = claimed[i].decode()
        outboxes[rating] = [*claimed[i + 1], *ours.get(rating, ())]
    return Claimed(outboxes, [b.decode() for b in blocked])
