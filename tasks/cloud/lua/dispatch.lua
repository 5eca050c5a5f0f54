-- One look of the sweep: move the due SKRs from the rotation to in-flight, oldest due first, and
-- take back in-flight SKRs whose connect never reported (stranded). The caller enqueues a connect key
-- for each returned kyma, in the returned order (the rotation's order).
-- KEYS: rotation (zset kyma->due time), inflight (zset kyma->dispatch time)
-- ARGV: limit, stranded_seconds
-- Returns {kyma...}
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local limit = tonumber(ARGV[1])
local out = {}
for _, kyma in ipairs(redis.call('ZRANGE', KEYS[1], '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)) do
  redis.call('ZREM', KEYS[1], kyma)
  redis.call('ZADD', KEYS[2], now, kyma)
  table.insert(out, kyma)
end
for _, kyma in ipairs(redis.call('ZRANGE', KEYS[2], '-inf', now - tonumber(ARGV[2]), 'BYSCORE', 'LIMIT', 0, limit)) do
  redis.call('ZADD', KEYS[2], now, kyma)
  table.insert(out, kyma)
end
return out
