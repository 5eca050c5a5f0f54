-- A reconcile ended. Releases the key, records the outcome, and tells whether to publish again.
-- KEYS: waiting, processing, leases, delayed, failures, low
-- ARGV: key, token, outcome ('success'|'requeue_after'|'error'|'terminal_error'), requeue_after,
--       backoff_base, backoff_cap, jitter_factor (1 - jitter * rand, computed by the caller)
-- Returns {again (0|1|-1 lost lease), failures, delay_seconds}
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local key, token, outcome = ARGV[1], ARGV[2], ARGV[3]
if redis.call('HGET', KEYS[2], key) ~= token then return {-1, 0, '0'} end
redis.call('HDEL', KEYS[2], key)
redis.call('ZREM', KEYS[3], key)
local failures, delay = 0, 0
if outcome == 'error' then
  failures = redis.call('HINCRBY', KEYS[5], key, 1)
  local base, cap = tonumber(ARGV[5]), tonumber(ARGV[6])
  if failures > 64 then delay = cap else delay = math.min(cap, base * 2 ^ (failures - 1)) end
  delay = delay * tonumber(ARGV[7])
  redis.call('ZADD', KEYS[4], 'LT', now + delay, key)
else
  redis.call('HDEL', KEYS[5], key)
  if outcome == 'requeue_after' then
    delay = tonumber(ARGV[4])
    redis.call('ZADD', KEYS[4], 'LT', now + delay, key)
  end
end
local again = 0
if redis.call('ZSCORE', KEYS[1], key) then again = 1 end
return {again, failures, tostring(delay)}
