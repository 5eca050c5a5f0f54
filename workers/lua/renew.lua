-- Extend the lease of a key this token holds. Returns 1, or 0 when the key was taken over.
-- KEYS: processing, leases   ARGV: key, token, lease_seconds
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[3]), ARGV[1])
return 1
