-- Shared helpers: prepended to every script of this folder by workers/workqueue.py (not a script itself).
--
-- Key layout (per controller c and per Celery queue name q; the engine's README section says why):
--   rq:ctl:<c>:waiting     ZSET key -> time enqueued: the key needs a reconcile (at most once: dedupe)
--   rq:ctl:<c>:resync      SET  waiting keys whose only reason is a periodic resync (low priority)
--   rq:ctl:<c>:processing  HASH key -> fencing token of the reconcile holding it
--   rq:ctl:<c>:leases      ZSET key -> lease expiry; renewed while the reconcile runs
--   rq:ctl:<c>:delayed     ZSET key -> due time (requeue_after, failure backoff; earliest wins)
--   rq:ctl:<c>:failures    HASH key -> consecutive failures (forgotten on success)
--   rq:<q>:ready           LIST "<c> <key>" ready to take, fresh changes (FIFO)
--   rq:<q>:ready-resync    LIST "<c> <key>" ready to take, resync backlog (taken only when ready is empty)
--   rq:<q>:stale           STRING count of list entries known to be superseded (skipped when popped)
--   rq:<q>:controllers     SET  controllers that ever enqueued on q (for the audit)
--   rq:<q>:wake            LIST wake-up tokens: dispatchers block on it (BLPOP) when there is nothing to take
--   rq:fence               STRING the last fencing token handed out (strictly increasing)
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
