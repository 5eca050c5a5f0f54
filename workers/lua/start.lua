-- A worker wants to reconcile a key. Returns {status, waited_seconds}:
--   'ok'    the caller holds the key (lease until now + lease_seconds);
--   'busy'  another live worker holds it (it runs again after, if waiting);
--   'stale' nothing waits for this key (a duplicate message): drop it.
-- A message redelivered after its worker died carries the same token and takes the key over.
-- KEYS: waiting, processing, leases (zset key->lease expiry), low   ARGV: key, token, lease_seconds
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local key, token = ARGV[1], ARGV[2]
local holder = redis.call('HGET', KEYS[2], key)
if holder and holder ~= token then
  local expiry = redis.call('ZSCORE', KEYS[3], key)
  if expiry and tonumber(expiry) > now then return {'busy', '0'} end
end
local enqueued = redis.call('ZSCORE', KEYS[1], key)
if not holder and not enqueued then return {'stale', '0'} end
redis.call('ZREM', KEYS[1], key)
redis.call('SREM', KEYS[4], key)
redis.call('HSET', KEYS[2], key, token)
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), key)
local waited = 0
if enqueued then waited = now - tonumber(enqueued) end
return {'ok', tostring(waited)}
