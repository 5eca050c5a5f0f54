-- A reconcile ended: release the key, record the outcome, queue the key again if it was added meanwhile.
-- KEYS: none
-- ARGV: controller, queue, key, token, outcome ('success'|'requeue_after'|'error'|'terminal_error'),
--       requeue_after seconds, backoff seconds for this failure (computed by Backoff.delay in Python:
--       the failure count it needs was handed out with the key by fetch.lua, so one source of truth)
-- Returns: {again (1 queued again | 0 | -1 lost: the token no longer holds the key; nothing recorded),
--           failures, delay seconds (string)}
local now = now_s()
local c, q, key, token, outcome = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if redis.call('HGET', ck(c, 'processing'), key) ~= token then return {-1, 0, '0'} end
redis.call('HDEL', ck(c, 'processing'), key)
redis.call('ZREM', ck(c, 'leases'), key)
redis.call('HDEL', ck(c, 'lapses'), key)  -- it ended without taking its worker down
local failures, delay = 0, 0
if outcome == 'error' then
  failures = redis.call('HINCRBY', ck(c, 'failures'), key, 1)
  delay = tonumber(ARGV[7])
  redis.call('ZADD', ck(c, 'delayed'), 'LT', now + delay, key)
  wake_if_head(q, c, 'delayed', key)
else
  redis.call('HDEL', ck(c, 'failures'), key)
  if outcome == 'requeue_after' then
    delay = tonumber(ARGV[6])
    redis.call('ZADD', ck(c, 'delayed'), 'LT', now + delay, key)
    wake_if_head(q, c, 'delayed', key)
  end
end
local again = 0
if redis.call('ZSCORE', ck(c, 'waiting'), key) then
  again = 1
  push_ready(q, c, key, redis.call('SISMEMBER', ck(c, 'resync'), key) == 1)
  wake(q, 1)
end
return {again, failures, tostring(delay)}
