-- Move due keys from the delayed set to the waiting set, take over expired leases (dead workers) and
-- re-publish orphaned waiting keys. Returns the keys the caller must publish, then the next due time.
-- KEYS: waiting, processing, leases, delayed, low   ARGV: limit, orphan_seconds
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local limit = tonumber(ARGV[1])
local out = {}
for _, key in ipairs(redis.call('ZRANGE', KEYS[4], '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)) do
  redis.call('ZREM', KEYS[4], key)
  local new = redis.call('ZADD', KEYS[1], 'NX', now, key) == 1
  if not new and redis.call('SREM', KEYS[5], key) == 1 then new = true end -- overtake a resync message
  if new and redis.call('HEXISTS', KEYS[2], key) == 0 then table.insert(out, key) end
end
for _, key in ipairs(redis.call('ZRANGE', KEYS[3], '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)) do
  redis.call('ZREM', KEYS[3], key)
  redis.call('HDEL', KEYS[2], key)
  redis.call('ZADD', KEYS[1], now, key)
  redis.call('SREM', KEYS[5], key)
  table.insert(out, key)
end
for _, key in ipairs(redis.call('ZRANGE', KEYS[1], '-inf', now - tonumber(ARGV[2]), 'BYSCORE', 'LIMIT', 0, limit)) do
  if redis.call('HEXISTS', KEYS[2], key) == 0 then
    redis.call('ZADD', KEYS[1], now, key)
    redis.call('SREM', KEYS[5], key)
    table.insert(out, key)
  end
end
local nxt = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
local due = '-1'
if nxt[2] then due = tostring(tonumber(nxt[2]) - now) end
table.insert(out, due)
return out
