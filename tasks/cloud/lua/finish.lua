-- A connect of an SKR ended. A connect the rotation dispatched (the SKR is in flight) puts the SKR back
-- at the tail: due now when the fleet is at least the threshold, else after the min interval; a failed
-- one also waits its backoff. Any other connect (a notification's) never touches the rotation: it
-- only records its end for the notification rate limit. In the same call (one round trip per connect)
-- the SKR's health entry '<status>|<since>' (the fleet metrics) is kept: its since stays while the status
-- does; an inactive SKR's is removed; an empty status leaves it alone (the one writer of the entry).
-- KEYS: rotation, inflight, failures, notified, pending[, health]
-- ARGV: kyma, ok ('1'|'0'), threshold, min_interval, backoff_base, backoff_cap[, status]
-- Returns {kind ('rotation'|'notification'|'inactive'), failures, delay_seconds}
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local kyma, ok = ARGV[1], ARGV[2] == '1'
local function health(kind)
  if not KEYS[6] then return end
  if kind == 'inactive' then redis.call('HDEL', KEYS[6], kyma) return end
  local status = ARGV[7] or ''
  if status == '' then return end
  local previous = redis.call('HGET', KEYS[6], kyma)
  if previous and string.match(previous, '^[^|]*') == status then return end
  redis.call('HSET', KEYS[6], kyma, status .. '|' .. string.format('%.3f', now))
end
local failures = 0
if ok then redis.call('HDEL', KEYS[3], kyma) else failures = redis.call('HINCRBY', KEYS[3], kyma, 1) end
local pending = redis.call('SREM', KEYS[5], kyma)
if redis.call('ZREM', KEYS[2], kyma) == 1 then
  local fleet = redis.call('ZCARD', KEYS[1]) + redis.call('ZCARD', KEYS[2]) + 1
  local delay = 0
  if fleet < tonumber(ARGV[3]) then delay = tonumber(ARGV[4]) end
  if failures > 0 then
    local backoff = tonumber(ARGV[6])
    if failures <= 62 then backoff = math.min(backoff, tonumber(ARGV[5]) * 2 ^ (failures - 1)) end
    if backoff > delay then delay = backoff end
  end
  redis.call('ZADD', KEYS[1], now + delay, kyma)
  health('rotation')
  return {'rotation', failures, tostring(delay)}
end
if redis.call('ZSCORE', KEYS[1], kyma) then
  redis.call('HSET', KEYS[4], kyma, now)
  health('notification')
  return {'notification', failures, '0'}
end
redis.call('HDEL', KEYS[3], kyma)
health('inactive')
return {'inactive', failures, '0'}
