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

# Every redis.call costs the server more than the work of a GET itself: values of many keys are
# read with one MGET per thousand keys (Lua's `unpack` takes a few thousand values at most).
_MGET = """
local function mget(kind, names)
  local values = {}
  for first = 1, #names, 1000 do
    local batch = {}
    for i = first, math.min(first + 999, #names) do batch[#batch + 1] = kind .. names[i] end
    local got = redis.call('MGET', unpack(batch))
    for i = 1, #got do values[#values + 1] = got[i] end
  end
  return values
end
-- `command` (MSET, DEL) over a flat list of arguments, a thousand at a time.
local function each_thousand(command, arguments)
  for first = 1, #arguments, 1000 do
    redis.call(command, unpack(arguments, first, math.min(first + 999, #arguments)))
  end
end
"""

_READ = (
    _GUARD
    + _MGET
    + """
local p, ratings, games = ARGV[1], cmsgpack.unpack(ARGV[5]), cmsgpack.unpack(ARGV[6])
local out = {}
local states = mget(p .. $STATE, ratings)
for i, r in ipairs(ratings) do
  out[#out + 1] = states[i]
  out[#out + 1] = redis.call('LLEN', p .. $OUTBOX .. r)
end
local records = mget(p .. $GAME, games)
for i = 1, #games do out[#out + 1] = records[i] end
return cmsgpack.pack(out)
"""
)

_CLAIM = """
-- Claims each outbox that is not empty and not leased by another process. Returns its events
-- but the last `appended[r]`: those were appended by this very call, and the caller has them.
-- `lengths[r]`: the outbox's length after this call's appends (RPUSH's reply), if it appended.
local function claim(p, token, lease_ms, ratings, appended, lengths)
  local claimed, blocked = {}, {}
  for _, r in ipairs(ratings) do
    local outbox = p .. $OUTBOX .. r
    local n = lengths[r] or redis.call('LLEN', outbox)
    if n > 0 then
      local lease = p .. $LEASE .. r
      -- Free (the usual case): taken in one call; ours already: renewed.
      local ours = redis.call('SET', lease, token, 'NX', 'PX', lease_ms)
      if (not ours) and redis.call('GET', lease) == token then
        ours = redis.call('PEXPIRE', lease, lease_ms)
      end
      if ours then
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
    + _MGET
    + _CLAIM
    + """
local p, token = ARGV[1], ARGV[2]
local lease_ms, retention_ms = tonumber(ARGV[5]), tonumber(ARGV[6])
-- Items: {game_id, digest, {rating, seq read, ...}, {{rating, state, event}, ...}}.
-- Marks: {topic, partition, offset, ...}: raised only if every item of this call applies.
local items, flush, marks = cmsgpack.unpack(ARGV[7]), cmsgpack.unpack(ARGV[8]), cmsgpack.unpack(ARGV[9])
local tainted, results, seen, touched, appended, lengths = {}, {}, {}, {}, {}, {}
local states, written = {}, {}  -- the last state of each rating written, stored by one MSET below
local all_applied, wrote = true, false
local function touch(r)
  if not seen[r] then seen[r] = true; touched[#touched + 1] = r end
end
local function seq_in(state)  -- an encoded state starts with its seq
  if not state then return 0 end
  return tonumber(string.match(state, '^(%d+)'))
end
-- The seqs of the ratings read and the games' records, read once for the whole call and kept
-- up to date by its own writes (nothing else writes while a script runs).
local rated, games, listed = {}, {}, {}
for _, item in ipairs(items) do
  local reads = item[3]
  for k = 1, #reads, 2 do
    if not listed[reads[k]] then listed[reads[k]] = true; rated[#rated + 1] = reads[k] end
  end
  if item[1] ~= '' then games[#games + 1] = item[1] end
end
local seqs, recorded = {}, {}
for i, state in ipairs(mget(p .. $STATE, rated)) do seqs[rated[i]] = seq_in(state) end
for i, record in ipairs(mget(p .. $GAME, games)) do if record then recorded[games[i]] = true end end
for n, item in ipairs(items) do
  local game_id, digest, reads, writes = item[1], item[2], item[3], item[4]
  local ok = true
  for k = 1, #reads, 2 do
    if tainted[reads[k]] or seqs[reads[k]] ~= reads[k + 1] then ok = false end
  end
  if ok and game_id ~= '' and recorded[game_id] then ok = false end
  if ok then
    for _, w in ipairs(writes) do
      if not states[w[1]] then written[#written + 1] = w[1] end
      states[w[1]] = w[2]
      seqs[w[1]] = seq_in(w[2])
      lengths[w[1]] = redis.call('RPUSH', p .. $OUTBOX .. w[1], w[3])
      appended[w[1]] = (appended[w[1]] or 0) + 1
      touch(w[1])
    end
    if game_id ~= '' then
      redis.call('SET', p .. $GAME .. game_id, digest, 'PX', retention_ms)
      recorded[game_id] = true
    end
    results[n] = 1
    wrote = true
  else
    for k = 1, #reads, 2 do tainted[reads[k]] = true end
    results[n] = 0
    all_applied = false
  end
end
local pairs_written = {}
for _, r in ipairs(written) do
  pairs_written[#pairs_written + 1] = p .. $STATE .. r
  pairs_written[#pairs_written + 1] = states[r]
end
each_thousand('MSET', pairs_written)
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
local claimed, blocked = claim(p, token, lease_ms, touched, appended, lengths)
return {results, claimed, blocked, epoch, mine}
"""
)

_ACK = (
    _GUARD
    + _MGET
    + """
local p, token, lease_ms = ARGV[1], ARGV[2], tonumber(ARGV[5])
-- Sent: {rating, event sent, 1 to release the lease or 0 to renew it, ...}.
local sent = cmsgpack.unpack(ARGV[6])
local ratings = {}
for i = 1, #sent, 3 do ratings[#ratings + 1] = sent[i] end
local holders = mget(p .. $LEASE, ratings)
local lost, released = {}, {}
for n, r in ipairs(ratings) do
  local i = 3 * n - 2
  if holders[n] == token then
    local outbox = p .. $OUTBOX .. r
    local head = redis.call('LPOP', outbox)  -- put back at once if it is not the event sent
    if head and head ~= sent[i + 1] then redis.call('LPUSH', outbox, head) end
    if sent[i + 2] == 1 then
      released[#released + 1] = p .. $LEASE .. r
    else
      redis.call('PEXPIRE', p .. $LEASE .. r, lease_ms)
    end
  else
    lost[#lost + 1] = r
  end
end
each_thousand('DEL', released)
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
