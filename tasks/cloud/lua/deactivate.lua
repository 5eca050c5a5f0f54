-- Make an SKR inactive: it leaves the rotation (waiting or in flight) and the notification state.
-- A connect already running is not aborted; its finish finds no membership and does not re-add it.
-- KEYS: rotation, inflight, failures (hash kyma->n), notified (hash kyma->time), pending (set),
--       health (hash kyma->'<status>|<since>', the fleet metrics)
-- ARGV: kyma   Returns 1 when the SKR was active.
local was = redis.call('ZREM', KEYS[1], ARGV[1]) + redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
redis.call('SREM', KEYS[5], ARGV[1])
if KEYS[6] then redis.call('HDEL', KEYS[6], ARGV[1]) end
if was > 0 then return 1 end
return 0
