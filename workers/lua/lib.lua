-- Shared helpers: prepended to every script of this folder by workers/workqueue.py (not a script itself).
--
-- Key layout (per controller c and per Celery queue name q; the engine's README section says why):
--   rq:ctl:<c>:waiting     ZSET key -> time enqueued: the key needs a reconcile (at most once: dedupe)
--   rq:ctl:<c>:resync      SET  waiting keys whose only reason is a periodic resync (low priority)
--   rq:ctl:<c>:processing  HASH key -> fencing token of the reconcile holding it
--   rq:ctl:<c>:leases      ZSET key -> lease expiry; renewed while the reconcile runs
--   rq:ctl:<c>:delayed     ZSET key -> due time (requeue_after, failure backoff; earliest wins)
--   rq:ctl:<c>:failures    HASH key -> consecutive failures (forgotten on success)
--   rq:ctl:<c>:lapses      HASH key -> consecutive lease lapses (its reconcile took its worker down);
--                          forgotten when a reconcile of the key ends and records its result
--   rq:ctl:<c>:parked      ZSET key -> time parked: lapsed `max_lapses` times in a row; neither waiting
--                          nor delayed until a fresh add (add.lua, add_after.lua) un-parks it
--   rq:<q>:ready           LIST "<c> <key>" ready to take, fresh changes (FIFO)
--   rq:<q>:ready-resync    LIST "<c> <key>" ready to take, resync backlog (taken only when ready is empty)
--   rq:<q>:stale           STRING count of list entries known to be superseded (skipped when popped)
--   rq:<q>:controllers     SET  controllers that ever enqueued on q (for the audit)
--   rq:<q>:wake            LIST wake-up tokens: dispatchers block on it (BLPOP) when there is nothing to take
--   rq:fence               STRING the last fencing token handed out (strictly increasing, even across a
--                          restart that lost the last writes: tokens are at least the server time in us)
--   rq:epoch, rq:run-id    STRING the data set's identity and the server run that last served it
--   rq:quiet               STRING with a TTL: while it exists no key is taken (see guard below)
-- A parked key is never waiting, delayed or processing.
-- Invariant kept by every script: a key that is waiting and not processing has an entry in its queue's
-- ready lists; entries beyond that are counted in rq:<q>:stale.
local function now_s()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1e6
end
local function ck(c, s) return 'rq:ctl:' .. c .. ':' .. s end
local function qk(q, s) return 'rq:' .. q .. ':' .. s end
local WAKE_CAP = 64
local function push_ready(q, c, key, resync)
  if resync then redis.call('RPUSH', qk(q, 'ready-resync'), c .. ' ' .. key)
  else redis.call('RPUSH', qk(q, 'ready'), c .. ' ' .. key) end
end
local function wake(q, n)
  local room = WAKE_CAP - redis.call('LLEN', qk(q, 'wake'))
  if n > room then n = room end
  for _ = 1, n do redis.call('RPUSH', qk(q, 'wake'), '1') end
end
-- Wake a sleeping dispatcher when `key` became the earliest due time of c (it recomputes its timer).
local function wake_if_head(q, c, zset, key)
  local head = redis.call('ZRANGE', ck(c, zset), 0, 0)
  if head[1] == key then wake(q, 1) end
end

-- A fencing token: the server time in microseconds, or one more than the last token when that is not
-- larger. Strictly increasing, and never handed out twice even when Redis restarts and loses the last
-- second of writes (AOF everysec): by then the clock has moved past every token issued before.
local function next_token()
  local t = redis.call('TIME')
  local tok = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local last = tonumber(redis.call('GET', 'rq:fence') or '0')
  if tok <= last then tok = last + 1 end
  local text = string.format('%.0f', tok)
  redis.call('SET', 'rq:fence', text)
  return text
end

-- Redis restarted (run_id changed: the last writes may be lost, a replica may have lagged) or lost its
-- data set (the epoch is gone) under running processes: hold back every take for one lease (rq:quiet),
-- so that each reconcile that held a key before has been fenced (its renewal failed or its lease lapsed
-- locally) before the key can be handed out again. `known` is the epoch the caller saw before ('' if
-- none: a new process on a new Redis waits for nothing); `fresh` is the epoch to write if there is none.
-- Returns the epoch and the run_id.
local function guard(quiet_s, known, fresh)
  local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') or ''
  local seen_run = redis.call('GET', 'rq:run-id')
  local epoch = redis.call('GET', 'rq:epoch')
  local quiet = false
  if seen_run ~= run then
    redis.call('SET', 'rq:run-id', run)
    if seen_run then quiet = true end
  end
  if not epoch then
    epoch = fresh
    redis.call('SET', 'rq:epoch', epoch)
  end
  if known ~= '' and known ~= epoch and redis.call('GET', 'rq:quieted') ~= epoch then
    redis.call('SET', 'rq:quieted', epoch)
    quiet = true
  end
  if quiet and quiet_s > 0 then redis.call('SET', 'rq:quiet', '1', 'PX', math.floor(quiet_s * 1000)) end
  return epoch, run
end

-- Un-park `key` of c (a fresh enqueue: the user or a watch event says something changed): it gets
-- `max_lapses` more tries. Returns true when it was parked.
local function unpark(c, key)
  if redis.call('ZREM', ck(c, 'parked'), key) == 1 then
    redis.call('HDEL', ck(c, 'lapses'), key)
    return true
  end
  return false
end
