-- Replace the per-(kind, state) object counts one owner contributes, keeping the totals in step.
-- An owner is one KCP object (kcp/<namespace>/<name>) or one SKR (skr/<kyma>: all its objects, per connect).
-- KEYS: owners (hash owner -> cjson {"<kind>|<state>": n}), totals (hash "<kind>|<state>" -> n)
-- ARGV: owner, cjson counts ('{}' or '': the owner is gone)   Returns the owners left.
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old then
  for field, n in pairs(cjson.decode(old)) do
    if redis.call('HINCRBY', KEYS[2], field, -n) <= 0 then redis.call('HDEL', KEYS[2], field) end
  end
end
local new = {}
if ARGV[2] ~= '' then new = cjson.decode(ARGV[2]) end
local any = false
for field, n in pairs(new) do
  redis.call('HINCRBY', KEYS[2], field, n)
  any = true
end
if any then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) else redis.call('HDEL', KEYS[1], ARGV[1]) end
return redis.call('HLEN', KEYS[1])
