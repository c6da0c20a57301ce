"""The store's Lua scripts, each one round trip for a whole batch (see `worker.store.redis_store`).

Keys are built inside the scripts from the prefix and the key kinds of `worker.store.keys`,
put in here so that they are defined once. Batches come and go as one MessagePack argument
(Redis's Lua has `cmsgpack`).
"""

from worker.store import keys

# A process's `seen` key outlives it by a day, then expires; while it lives, every script call
# and the health check every 2 s keep it. (A process frozen for a day would find it gone and
# mark the store untrusted: a false alarm that restore clears.)
SEEN_TTL_MS = 24 * 3600 * 1000

# Every script starts with this check (see `worker.store.redis_store`). ARGV[1] is the prefix,
# ARGV[2] the process's token, ARGV[3] and ARGV[4] the epoch and writes it saw after its own
# last acknowledged apply; a refusal is an error reply "UNTRUSTED reason". The writes count is
# compared with the process's own `seen` key, which only that process writes (atomically with
# its applies): other processes' writes, which raise the shared counter, cannot hide a loss
# of this one's. Each call keeps the process's `seen` key alive (SEEN_TTL_MS).
_GUARD = """
local function guard(p, token, known_epoch, known_writes)
  local reason = redis.call('GET', p .. $UNTRUSTED)
  if reason then return reason end
  local epoch = tonumber(redis.call('HGET', p .. $STORE, 'epoch') or '0')
  local seen_key = p .. $SEEN .. token
  local seen = tonumber(redis.call('GET', seen_key) or '0')
  if epoch < known_epoch or (epoch == known_epoch and seen < known_writes) then
    reason = 'the store went back from epoch ' .. known_epoch .. ' writes ' .. known_writes ..
      ' to epoch ' .. epoch .. ' writes ' .. seen .. ' (as process ' .. token .. ' saw them): ' ..
      'Redis lost acknowledged writes'
    redis.call('SET', p .. $UNTRUSTED, reason)
    return reason
  end
  if seen > 0 then redis.call('PEXPIRE', seen_key, $SEEN_TTL_MS) end
  return false
end
local refused = guard(ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]))
if refused then return redis.error_reply('UNTRUSTED ' .. refused) end
"""

_READ = (
    _GUARD
    + """
local p, ratings, games = ARGV[1], cmsgpack.unpack(ARGV[5]), cmsgpack.unpack(ARGV[6])
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
)

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
    _GUARD
    + _CLAIM
    + """
local p, token = ARGV[1], ARGV[2]
local lease_ms, retention_ms = tonumber(ARGV[5]), tonumber(ARGV[6])
-- Items: {game_id, digest, {rating, seq read, ...}, {{rating, state, event}, ...}}.
-- Marks: {topic, partition, offset, ...}: raised only if every item of this call applies.
local items, flush, marks = cmsgpack.unpack(ARGV[7]), cmsgpack.unpack(ARGV[8]), cmsgpack.unpack(ARGV[9])
local tainted, results, seen, touched, appended = {}, {}, {}, {}, {}
local all_applied, wrote = true, false
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
    wrote = true
  else
    for k = 1, #reads, 2 do tainted[reads[k]] = true end
    results[n] = 0
    all_applied = false
  end
end
if all_applied then
  for i = 1, #marks, 3 do
    local key, partition, offset = p .. $WATERMARK .. marks[i], marks[i + 1], marks[i + 2]
    if offset > tonumber(redis.call('HGET', key, partition) or '-1') then
      redis.call('HSET', key, partition, string.format('%d', offset))
      wrote = true
    end
  end
end
-- The process's own view of the store: what it may never find lower again (see _GUARD).
local mine = tonumber(redis.call('GET', p .. $SEEN .. token) or '0')
if wrote then
  mine = redis.call('HINCRBY', p .. $STORE, 'writes', 1)
  redis.call('SET', p .. $SEEN .. token, mine, 'PX', $SEEN_TTL_MS)
end
local epoch = tonumber(redis.call('HGET', p .. $STORE, 'epoch') or '0')
for _, r in ipairs(flush) do touch(r) end
local claimed, blocked = claim(p, token, lease_ms, touched, appended)
return {results, claimed, blocked, epoch, mine}
"""
)

_ACK = (
    _GUARD
    + """
local p, token, lease_ms = ARGV[1], ARGV[2], tonumber(ARGV[5])
-- Sent: {rating, event sent, 1 to release the lease or 0 to renew it, ...}.
local sent = cmsgpack.unpack(ARGV[6])
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
)


def _lua(source: str) -> str:
    """The script with the key kinds of `worker.store.keys` put in, so that they are defined once."""
    source = source.replace("$SEEN_TTL_MS", str(SEEN_TTL_MS))
    for name in ("STATE", "OUTBOX", "LEASE", "GAME", "WATERMARK", "STORE", "UNTRUSTED", "SEEN"):
        source = source.replace(f"${name}", repr(getattr(keys, name)))
    return source


READ, APPLY, ACK = _lua(_READ), _lua(_APPLY), _lua(_ACK)
