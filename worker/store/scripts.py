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

# The compact records' buckets: 2^18 hashes, each within Redis's listpack encoding (512 entries by
# default) from about 0.5 to 100 million live records (see worker.store.records). Kept in the store
# (`record_bits`) when its first record is written, so that a later default cannot move them.
RECORD_BITS = 18
# Every bucket is swept once per pass, at most SWEEP_MAX buckets by one script call.
SWEEP_PASS_SECONDS = 12 * 3600
SWEEP_MAX = 32

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

# The idempotency records (see `worker.store.records`). A game is looked up by the 16-byte hash of
# its id: in the compact layout, the first `record_bits` bits name the bucket (a hash), the next
# 10 bytes are the field; the value is the facts digest (none for a game restored without its
# facts) followed by the hour, 3 bytes big-endian, from which the sweep may delete it. The
# legacy key of the game id is read as well: records written by earlier releases, or by this
# one while the store's `records` is `both`.
_RECORDS = """
local function layout(p)  -- `both` or `compact` and the bucket bits; nil before the first record
  local v = redis.call('HMGET', p .. $STORE, 'records', 'record_bits')
  return v[1], tonumber(v[2])
end
-- The layout for a writer, set by this release's first write to the store (each apply calls
-- it first): a store written before, by a release that kept legacy records only (its workers
-- may still run, in a rolling upgrade), gets `both`; a new one `compact`.
local function writer_layout(p)
  local mode, bits = layout(p)
  if not mode then
    mode, bits = 'compact', $RECORD_BITS
    if redis.call('HEXISTS', p .. $STORE, 'writes') == 1 then mode = 'both' end
    redis.call('HSET', p .. $STORE, 'records', mode, 'record_bits', bits)
  end
  return mode, bits
end
local function address(p, bits, h)
  local b1, b2, b3, b4 = string.byte(h, 1, 4)
  local bucket = math.floor((((b1 * 256 + b2) * 256 + b3) * 256 + b4) / 2 ^ (32 - bits))
  return p .. $RECORDS .. string.format('%x', bucket), string.sub(h, 5, 14)
end
-- For each game: its facts digest (binary; '' if restored without facts) or false.
local function lookup(p, ids, hashes)
  local found = {}
  for i, value in ipairs(mget(p .. $GAME, ids)) do
    found[i] = value and string.gsub(value, '%x%x', function(x) return string.char(tonumber(x, 16)) end) or false
  end
  local mode, bits = layout(p)
  if bits then
    for i, h in ipairs(hashes) do
      local key, field = address(p, bits, h)
      local value = redis.call('HGET', key, field)
      if value then found[i] = string.sub(value, 1, -4) end
    end
  end
  return found
end
-- The expiry hour of a record written at `now` (the caller's clock, in seconds: Redis's TIME
-- would need one more command in the worker's ACL), 3 bytes: an hour after the retention, so a
-- clock up to an hour ahead of the writer's never sweeps a record before its retention.
local function expiry(now, retention_ms)
  local hour = math.floor(now / 3600) + math.ceil(retention_ms / 3600000) + 1
  return string.char(math.floor(hour / 65536) % 256, math.floor(hour / 256) % 256, hour % 256)
end
local function to_hex(digest)
  return (string.gsub(digest, '.', function(c) return string.format('%02x', string.byte(c)) end))
end
-- Records a game (`keep`: not over an existing record); returns whether it wrote.
local function record(p, mode, bits, game_id, h, digest, ends, retention_ms, keep)
  local key, field = address(p, bits, h)
  local wrote
  if keep then
    wrote = redis.call('HSETNX', key, field, digest .. ends) == 1
  else
    redis.call('HSET', key, field, digest .. ends)
    wrote = true
  end
  if mode == 'both' then
    if keep then
      redis.call('SET', p .. $GAME .. game_id, to_hex(digest), 'PX', retention_ms, 'NX')
    else
      redis.call('SET', p .. $GAME .. game_id, to_hex(digest), 'PX', retention_ms)
    end
  end
  return wrote
end
-- Deletes the expired records of the buckets due: every bucket once per $SWEEP_PASS_SECONDS s,
-- at most $SWEEP_MAX buckets per call (each script call of each worker, and the health check
-- every 2 s, takes its turn).
local function sweep(p, now)
  local store = p .. $STORE
  local v = redis.call('HMGET', store, 'record_bits', 'sweep_next', 'sweep_pass')
  if not v[1] then return end
  local buckets = 2 ^ tonumber(v[1])
  if not v[3] then
    redis.call('HSET', store, 'sweep_next', 0, 'sweep_pass', now)
    return
  end
  local first, pass = tonumber(v[2]), tonumber(v[3])
  local last = math.min(math.floor(buckets * (now - pass) / $SWEEP_PASS_SECONDS), first + $SWEEP_MAX, buckets)
  if last <= first then return end
  local hour = math.floor(now / 3600)
  for b = first, last - 1 do
    local key = p .. $RECORDS .. string.format('%x', b)
    local entries = redis.call('HGETALL', key)
    local stale = {}
    for i = 2, #entries, 2 do
      local x, y, z = string.byte(entries[i], -3, -1)
      if (x * 256 + y) * 256 + z <= hour then stale[#stale + 1] = entries[i - 1] end
    end
    for s = 1, #stale, 1000 do redis.call('HDEL', key, unpack(stale, s, math.min(s + 999, #stale))) end
  end
  if last >= buckets then
    redis.call('HSET', store, 'sweep_next', 0, 'sweep_pass', now)
  else
    redis.call('HSET', store, 'sweep_next', last)
  end
end
"""

_READ = (
    _GUARD
    + _MGET
    + _RECORDS
    + """
local p, now = ARGV[1], tonumber(ARGV[8])
local ratings, games, hashes = cmsgpack.unpack(ARGV[5]), cmsgpack.unpack(ARGV[6]), cmsgpack.unpack(ARGV[7])
sweep(p, now)
local out = {}
local states = mget(p .. $STATE, ratings)
for i, r in ipairs(ratings) do
  out[#out + 1] = states[i]
  out[#out + 1] = redis.call('LLEN', p .. $OUTBOX .. r)
end
for _, found in ipairs(lookup(p, games, hashes)) do out[#out + 1] = found end
if ARGV[9] == '1' then  -- a per-period system: its calendar's version (marks made) and value
  local v = redis.call('HMGET', p .. $PERIODS, 'marks', 'calendar')
  out[#out + 1] = tonumber(v[1] or '0')
  out[#out + 1] = v[2] or ''
  -- ARGV[10], a calendar read by its marks: the places of these periods' marks (false: not marked)
  local wanted = ARGV[10] and cmsgpack.unpack(ARGV[10]) or {}
  if #wanted > 0 then out[#out + 1] = redis.call('HMGET', p .. $MARKED, unpack(wanted)) end
end
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
    + _RECORDS
    + _CLAIM
    + """
local p, token = ARGV[1], ARGV[2]
local lease_ms, retention_ms, now = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[10])
-- Items: {game_id, digest, {rating, seq read, ...}, {{rating, state, event[, periods]}, ...}, hash of the id};
-- `periods`: a per-period system's, the periods whose index the rating enters.
-- Marks: {topic, partition, offset, ...}: raised only if every item of this call applies.
-- ARGV[11]: the calendar version the items were computed with (-1: not a per-period system).
local items, flush, marks = cmsgpack.unpack(ARGV[7]), cmsgpack.unpack(ARGV[8]), cmsgpack.unpack(ARGV[9])
local calendar_version = tonumber(ARGV[11])
local moved = calendar_version >= 0 and tonumber(redis.call('HGET', p .. $PERIODS, 'marks') or '0') ~= calendar_version
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
local rated, games, hashes, listed = {}, {}, {}, {}
for _, item in ipairs(items) do
  local reads = item[3]
  for k = 1, #reads, 2 do
    if not listed[reads[k]] then listed[reads[k]] = true; rated[#rated + 1] = reads[k] end
  end
  if item[1] ~= '' then games[#games + 1] = item[1]; hashes[#hashes + 1] = item[5] end
end
local seqs, recorded = {}, {}
for i, state in ipairs(mget(p .. $STATE, rated)) do seqs[rated[i]] = seq_in(state) end
for i, found in ipairs(lookup(p, games, hashes)) do if found then recorded[games[i]] = true end end
local mode, bits = writer_layout(p)
local ends = #games > 0 and expiry(now, retention_ms) or ''
for n, item in ipairs(items) do
  local game_id, digest, reads, writes = item[1], item[2], item[3], item[4]
  local ok = not moved  -- a period was marked closed since the items were computed
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
      if w[4] then
        for _, period in ipairs(w[4]) do
          if redis.call('SADD', p .. $INDEX .. period, w[1]) == 1
            and redis.call('SADD', p .. $INDEXED, period) == 1 then
            redis.call('HSETNX', p .. $OPENED, period, now)
          end
        end
      end
    end
    if game_id ~= '' then
      record(p, mode, bits, game_id, item[5], digest, ends, retention_ms, false)
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
sweep(p, now)
local claimed, blocked = claim(p, token, lease_ms, touched, appended, lengths)
return {results, claimed, blocked, epoch, mine}
"""
)

_ACK = (
    _GUARD
    + _MGET
    + """
local p, token = ARGV[1], ARGV[2]
-- Sent: {rating, event sent, what becomes of the lease, ...}: 0 releases it; n > 0 keeps it n ms
-- more (renewed for the next round, or held after a send whose outcome is unknown).
local sent = cmsgpack.unpack(ARGV[5])
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
    if sent[i + 2] == 0 then
      released[#released + 1] = p .. $LEASE .. r
    else
      redis.call('PEXPIRE', p .. $LEASE .. r, sent[i + 2])
    end
  else
    lost[#lost + 1] = r
  end
end
each_thousand('DEL', released)
return lost
"""
)

# Renews the leases still ours before a send is tried again: ARGV[5] {rating, ...}, ARGV[6] the lease
# (ms). Returns the ratings whose lease was lost (it expired, and maybe another process holds it).
_RENEW = (
    _GUARD
    + """
local p, token, lease_ms = ARGV[1], ARGV[2], tonumber(ARGV[6])
local lost = {}
for _, r in ipairs(cmsgpack.unpack(ARGV[5])) do
  local lease = p .. $LEASE .. r
  if redis.call('GET', lease) == token then redis.call('PEXPIRE', lease, lease_ms) else lost[#lost + 1] = r end
end
return lost
"""
)

# The records of games, for the commands (switch-over): {digest or false, ...}. No guard: it
# only reads.
_LOOKUP = (
    _MGET
    + _RECORDS
    + """
return lookup(ARGV[1], cmsgpack.unpack(ARGV[2]), cmsgpack.unpack(ARGV[3]))
"""
)

# Records games done elsewhere (restore, rebuild): {game_id, digest, hash of the id, ...};
# ARGV[3]: 1 to keep a record that exists; ARGV[5]: the time (seconds). Returns how many it wrote.
_REMEMBER = (
    _MGET
    + _RECORDS
    + """
local p, retention_ms, keep = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1'
local games = cmsgpack.unpack(ARGV[4])
if #games == 0 then return 0 end
local mode, bits = writer_layout(p)
local ends, wrote = expiry(tonumber(ARGV[5]), retention_ms), 0
for i = 1, #games, 3 do
  if record(p, mode, bits, games[i], games[i + 2], games[i + 1], ends, retention_ms, keep) then wrote = wrote + 1 end
end
return wrote
"""
)


# A per-period system's mark (see `worker.operate.close_period`): ARGV[5] the calendar version the
# caller read, ARGV[6] the calendar once the period is marked, ARGV[7] the period. Marks it only if
# the calendar is still the one read and no close is in progress: 1; -1 another close is in
# progress; 0 the calendar moved (read it again). Counted as a write of the store (see _GUARD).
# ARGV[8] '1': a calendar read by its marks, the period's place recorded in `marked`.
_MARK = (
    _GUARD
    + """
local p, token, key = ARGV[1], ARGV[2], ARGV[1] .. $PERIODS
local v = redis.call('HMGET', key, 'marks', 'closing')
if tonumber(v[1] or '0') ~= tonumber(ARGV[5]) then return 0 end
if v[2] then return -1 end
redis.call('HSET', key, 'calendar', ARGV[6], 'marks', tonumber(v[1] or '0') + 1, 'closing', ARGV[7])
if ARGV[8] == '1' then redis.call('HSET', p .. $MARKED, ARGV[7], tonumber(v[1] or '0')) end
local mine = redis.call('HINCRBY', p .. $STORE, 'writes', 1)
redis.call('SET', p .. $SEEN .. token, mine, 'PX', $SEEN_TTL_MS)
return 1
"""
)

# The close in progress of the period ARGV[5] finished, if its index is empty: 1; -1 its index still
# holds ratings; 0 it is not the close in progress. ARGV[6]: the time (seconds), kept as `closed_at`.
_FINISH = (
    _GUARD
    + """
local p, key, period = ARGV[1], ARGV[1] .. $PERIODS, ARGV[5]
if redis.call('HGET', key, 'closing') ~= period then return 0 end
if redis.call('SCARD', p .. $INDEX .. period) > 0 then return -1 end
redis.call('HDEL', key, 'closing')
redis.call('HSET', key, 'closed_at', ARGV[6])
redis.call('SREM', p .. $INDEXED, period)
redis.call('HDEL', p .. $OPENED, period)
return 1
"""
)


def _lua(source: str) -> str:
    """The script with the key kinds of `worker.store.keys` put in, so that they are defined once."""
    for name, value in (
        ("SEEN_TTL_MS", SEEN_TTL_MS),
        ("RECORD_BITS", RECORD_BITS),
        ("SWEEP_PASS_SECONDS", SWEEP_PASS_SECONDS),
        ("SWEEP_MAX", SWEEP_MAX),
    ):
        source = source.replace(f"${name}", str(value))
    for name in (
        "STATE",
        "OUTBOX",
        "LEASE",
        "GAME",
        "RECORDS",
        "WATERMARK",
        "STORE",
        "UNTRUSTED",
        "SEEN",
        "PERIODS",
        "MARKED",
        "OPENED",
        "INDEXED",  # before INDEX, which it starts with
        "INDEX",
    ):
        source = source.replace(f"${name}", repr(getattr(keys, name)))
    return source


READ, APPLY, ACK, RENEW = _lua(_READ), _lua(_APPLY), _lua(_ACK), _lua(_RENEW)
LOOKUP, REMEMBER = _lua(_LOOKUP), _lua(_REMEMBER)
MARK, FINISH = _lua(_MARK), _lua(_FINISH)
