-- Schedule keys: each is enqueued once its delay has passed; an earlier due time already set wins
-- (ZADD LT, Redis >= 6.2). A new earliest due time wakes a dispatcher so that it recomputes its timer.
-- A parked key is un-parked (a delayed add is a fresh add of a controller with a sync delay).
-- KEYS: none   ARGV: n, then n x (controller, queue, key, seconds)
-- Returns: the due time in effect per item (Redis server clock, epoch seconds, as strings)
local now = now_s()
local out = {}
local n = tonumber(ARGV[1])
for i = 0, n - 1 do
  local c, q, key, secs = ARGV[2 + 4 * i], ARGV[3 + 4 * i], ARGV[4 + 4 * i], tonumber(ARGV[5 + 4 * i])
  redis.call('SADD', qk(q, 'controllers'), c)
  unpark(c, key)
  redis.call('ZADD', ck(c, 'delayed'), 'LT', now + secs, key)
  wake_if_head(q, c, 'delayed', key)
  out[#out + 1] = redis.call('ZSCORE', ck(c, 'delayed'), key)
end
return out
