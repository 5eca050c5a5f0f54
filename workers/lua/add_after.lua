-- Schedule a key: the earliest due time wins (ZADD LT, Redis >= 6.2). Returns the due time in effect.
-- KEYS: delayed (zset key->due time)   ARGV: key, seconds
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
redis.call('ZADD', KEYS[1], 'LT', now + tonumber(ARGV[2]), ARGV[1])
return redis.call('ZSCORE', KEYS[1], ARGV[1])
