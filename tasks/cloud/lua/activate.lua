-- Make an SKR active: it joins the rotation at the tail (due now). Idempotent: a member (waiting in
-- the rotation or in flight) is left exactly as it is (the original's "stranded SKR" fix, #2083/#2088).
-- KEYS: rotation (zset kyma->due time), inflight (zset kyma->dispatch time)   ARGV: kyma
-- Returns 1 when the SKR was not active before, else 0.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now, ARGV[1])
return 1
