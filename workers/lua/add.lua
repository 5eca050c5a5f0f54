-- Add a key to the waiting set (dedupe). Returns 1 when the caller must publish a Celery message.
-- KEYS: waiting (zset key->enqueue time), processing (hash key->token), low (set: waiting at resync priority)
-- ARGV: key, low ("1" for a resync add)
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local key, low = ARGV[1], ARGV[2] == '1'
if redis.call('ZADD', KEYS[1], 'NX', now, key) == 1 then
  if low then redis.call('SADD', KEYS[3], key) end
  if redis.call('HEXISTS', KEYS[2], key) == 1 then return 0 end -- runs again when its reconcile ends
  return 1
end
-- already waiting: a fresh add overtakes a resync message by publishing at fresh priority
if not low and redis.call('SREM', KEYS[3], key) == 1 and redis.call('HEXISTS', KEYS[2], key) == 0 then
  return 1
end
return 0
