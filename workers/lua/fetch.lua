-- A dispatcher's one look at its queues, atomically:
--   1. due delayed keys become waiting (fresh priority) and are queued;
--   2. keys whose lease lapsed (holder dead or cut off: it is fenced from now on) count as a failure:
--      they are delayed by the controller's backoff (an add made while they ran is folded into that
--      retry), or, after `max_lapses` lapses in a row, parked (see lib.lua) and returned;
--   3. with audit='1', each queue's ready lists are checked against the waiting sets and rebuilt if
--      entries went missing outside these scripts (so no waiting key is ever stranded);
--   4. up to `max` ready keys are taken, fresh lists first (round robin over the queues in the order
--      given), then the resync lists; each gets a new fencing token and a lease. A suspect (a key
--      whose last run lapsed) never shares a process with another suspect: it is taken only by a
--      caller that runs none (`suspects` 0), one per fetch; a skipped suspect keeps its place at the
--      head of its list ('held': the caller waits for its own suspect to end, not for a wake-up);
--   5. wake-up tokens are trimmed to what is left to take.
-- Entries of controllers this process does not run are put back and not taken (every worker of a
-- queue must run all of its controllers). Nothing is taken while rq:quiet exists (see guard in lib.lua).
-- KEYS: none
-- ARGV: lease_seconds, max, audit '0'|'1', known epoch ('' none), epoch to write if none,
--       max_lapses (0: never park), rand in [0, 1) (the backoff's jitter draw), suspects (suspects
--       the caller runs now), nq, q1..qnq, then per queue in that order: k, then k x (controller,
--       backoff base, cap, jitter)
-- Returns: {next_due seconds ('-1': nothing scheduled), recovered, repaired, epoch, quiet seconds,
--           held '0'|'1', parked n, then n x (controller, key, lapses),
--           then per taken key: controller, key, token, waited seconds, failures, suspect '0'|'1'}
local now = now_s()
local lease, max, audit = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == '1'
local epoch = guard(lease, ARGV[4], ARGV[5])
local quiet = redis.call('PTTL', 'rq:quiet')
if quiet > 0 then max = 0 else quiet = 0 end
local max_lapses, rand, suspects = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local nq = tonumber(ARGV[9])
local queues, ctls, known = {}, {}, {}
local i = 10
for j = 1, nq do queues[j] = ARGV[i]; i = i + 1 end
for j = 1, nq do
  local k = tonumber(ARGV[i]); i = i + 1
  local list = {}
  for m = 1, k do
    list[m] = ARGV[i]
    known[ARGV[i]] = {tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])}
    i = i + 4
  end
  ctls[queues[j]] = list
end

-- Backoff.delay of workers/controller.py: min(cap, base * 2^(failures-1)), scaled by 1 - jitter * rand.
local function backoff(c, failures)
  local b = known[c]
  local d = b[2]
  if failures - 1 < 64 then d = math.min(b[2], b[1] * 2 ^ (failures - 1)) end
  if b[3] > 0 then d = d * (1 - b[3] * rand) end
  return d
end
local parked = {}
local LIMIT = 1000
local recovered, repaired = 0, 0
local pushed = {}

local function audit_queue(q)
  local entries = redis.call('LLEN', qk(q, 'ready')) + redis.call('LLEN', qk(q, 'ready-resync'))
  local stale = tonumber(redis.call('GET', qk(q, 'stale')) or '0')
  local cs = redis.call('SMEMBERS', qk(q, 'controllers'))
  local need = 0
  for _, c in ipairs(cs) do
    need = need + redis.call('ZCARD', ck(c, 'waiting'))
    for _, key in ipairs(redis.call('HKEYS', ck(c, 'processing'))) do
      if redis.call('ZSCORE', ck(c, 'waiting'), key) then need = need - 1 end
    end
  end
  if entries - stale >= need then
    if entries - stale > need then redis.call('SET', qk(q, 'stale'), entries - need) end
    return 0
  end
  redis.call('DEL', qk(q, 'ready'), qk(q, 'ready-resync'), qk(q, 'stale'))
  for _, c in ipairs(cs) do
    for _, key in ipairs(redis.call('ZRANGE', ck(c, 'waiting'), 0, -1)) do
      if redis.call('HEXISTS', ck(c, 'processing'), key) == 0 then
        push_ready(q, c, key, redis.call('SISMEMBER', ck(c, 'resync'), key) == 1)
      end
    end
  end
  return need - (entries - stale)
end

for _, q in ipairs(queues) do
  for _, c in ipairs(ctls[q]) do
    for _, key in ipairs(redis.call('ZRANGE', ck(c, 'delayed'), '-inf', now, 'BYSCORE', 'LIMIT', 0, LIMIT)) do
      redis.call('ZREM', ck(c, 'delayed'), key)
      local processing = redis.call('HEXISTS', ck(c, 'processing'), key) == 1
      if redis.call('ZADD', ck(c, 'waiting'), 'NX', now, key) == 1 then
        if not processing then push_ready(q, c, key, false) end
      elseif redis.call('SREM', ck(c, 'resync'), key) == 1 and not processing then
        push_ready(q, c, key, false)
        redis.call('INCR', qk(q, 'stale'))
      end
    end
    for _, key in ipairs(redis.call('ZRANGE', ck(c, 'leases'), '-inf', now, 'BYSCORE', 'LIMIT', 0, LIMIT)) do
      redis.call('ZREM', ck(c, 'leases'), key)
      redis.call('HDEL', ck(c, 'processing'), key)
      -- held, so it has no ready entry of its own: dropping a pending add keeps the invariant
      redis.call('ZREM', ck(c, 'waiting'), key)
      redis.call('SREM', ck(c, 'resync'), key)
      local failures = redis.call('HINCRBY', ck(c, 'failures'), key, 1)
      local lapses = redis.call('HINCRBY', ck(c, 'lapses'), key, 1)
      if max_lapses > 0 and lapses >= max_lapses then
        redis.call('ZREM', ck(c, 'delayed'), key)
        redis.call('ZADD', ck(c, 'parked'), now, key)
        parked[#parked + 1] = {c, key, lapses}
      else
        -- a crash is never retried sooner than its backoff, whatever was scheduled before
        redis.call('ZADD', ck(c, 'delayed'), now + backoff(c, failures), key)
      end
      recovered = recovered + 1
    end
  end
  if audit then repaired = repaired + audit_queue(q) end
end

local out = {'', recovered, repaired, epoch, tostring(quiet / 1000), '0', #parked}
for _, p in ipairs(parked) do
  out[#out + 1] = p[1]
  out[#out + 1] = p[2]
  out[#out + 1] = p[3]
end
local taken = 0
local blocked = {}
local skipped = {}  -- "<q> <list>" -> suspects popped and put back (in the order popped)

local function take_from(q, list)
  while true do
    local member = redis.call('LPOP', qk(q, list))
    if not member then return nil end
    local sp = string.find(member, ' ', 1, true)
    local c, key = string.sub(member, 1, sp - 1), string.sub(member, sp + 1)
    if not known[c] then
      redis.call('LPUSH', qk(q, list), member)
      blocked[q] = true
      return nil
    end
    if redis.call('HEXISTS', ck(c, 'processing'), key) == 0 and redis.call('ZSCORE', ck(c, 'waiting'), key) then
      if redis.call('HEXISTS', ck(c, 'lapses'), key) == 0 then return c, key, false end
      if suspects == 0 then
        suspects = 1
        return c, key, true
      end
      local at = q .. ' ' .. list
      skipped[at] = skipped[at] or {}
      table.insert(skipped[at], member)
    else
      -- superseded: the key was taken through its other entry, or is held and will be queued at its end
      if tonumber(redis.call('GET', qk(q, 'stale')) or '0') > 0 then redis.call('DECR', qk(q, 'stale')) end
    end
  end
end

for _, list in ipairs({'ready', 'ready-resync'}) do
  local progress = true
  while taken < max and progress do
    progress = false
    for _, q in ipairs(queues) do
      if taken >= max then break end
      if not blocked[q] then
        local c, key, is_suspect = take_from(q, list)
        if c then
          local enqueued = tonumber(redis.call('ZSCORE', ck(c, 'waiting'), key))
          redis.call('ZREM', ck(c, 'waiting'), key)
          redis.call('SREM', ck(c, 'resync'), key)
          local token = next_token()
          redis.call('HSET', ck(c, 'processing'), key, token)
          redis.call('ZADD', ck(c, 'leases'), now + lease, key)
          local failures = redis.call('HGET', ck(c, 'failures'), key) or '0'
          out[#out + 1] = c
          out[#out + 1] = key
          out[#out + 1] = tostring(token)
          out[#out + 1] = tostring(now - enqueued)
          out[#out + 1] = failures
          out[#out + 1] = is_suspect and '1' or '0'
          taken = taken + 1
          progress = true
        end
      end
    end
  end
end

local nxt = nil
for _, q in ipairs(queues) do
  for _, c in ipairs(ctls[q]) do
    for _, z in ipairs({'delayed', 'leases'}) do
      local head = redis.call('ZRANGE', ck(c, z), 0, 0, 'WITHSCORES')
      if head[2] then
        local d = tonumber(head[2]) - now
        if nxt == nil or d < nxt then nxt = d end
      end
    end
  end
end
if quiet > 0 and (nxt == nil or quiet / 1000 < nxt) then nxt = quiet / 1000 end
out[1] = tostring(nxt or -1)
-- skipped suspects go back to the head of their lists, in their order: the next caller takes them first
for _, q in ipairs(queues) do
  for _, list in ipairs({'ready', 'ready-resync'}) do
    local back = skipped[q .. ' ' .. list]
    if back then
      for j = #back, 1, -1 do redis.call('LPUSH', qk(q, list), back[j]) end
      out[6] = '1'
    end
  end
end

for _, q in ipairs(queues) do
  local left = redis.call('LLEN', qk(q, 'ready')) + redis.call('LLEN', qk(q, 'ready-resync'))
    - tonumber(redis.call('GET', qk(q, 'stale')) or '0')
  if left > WAKE_CAP then left = WAKE_CAP end
  local tokens = redis.call('LLEN', qk(q, 'wake'))
  if blocked[q] then
    -- entries of controllers this process does not run: tokens are for the processes that do
  elseif left <= 0 then
    -- nothing to take: stale tokens would only cause empty fetches; but a caller that is now full
    -- leaves the timer of a soon-due key to the others, so keep one token for them
    if taken >= max and nxt ~= nil and nxt < 2 then
      if tokens == 0 then redis.call('RPUSH', qk(q, 'wake'), '1') end
    else
      redis.call('DEL', qk(q, 'wake'))
    end
  elseif tokens > left then
    redis.call('LTRIM', qk(q, 'wake'), 0, left - 1)
  elseif tokens < left then
    wake(q, left - tokens)
  end
end
return out
