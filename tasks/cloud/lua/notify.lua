-- A runtime-watcher event for an SKR. Accepted (the caller enqueues a connect) unless the SKR is not
-- active, its rotation connect is already queued or running, a notification is already pending, or
-- its last notification-driven connect ended less than min_interval ago. Never touches the rotation.
-- KEYS: rotation, inflight, notified, pending   ARGV: kyma, min_interval
-- Returns 'accepted' | 'inactive' | 'queued' | 'coalesced' | 'rate_limited'
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local kyma = ARGV[1]
if redis.call('ZSCORE', KEYS[2], kyma) then return 'queued' end
if not redis.call('ZSCORE', KEYS[1], kyma) then return 'inactive' end
if redis.call('SISMEMBER', KEYS[4], kyma) == 1 then return 'coalesced' end
local last = redis.call('HGET', KEYS[3], kyma)
if last and now - tonumber(last) < tonumber(ARGV[2]) then return 'rate_limited' end
redis.call('SADD', KEYS[4], kyma)
return 'accepted'
