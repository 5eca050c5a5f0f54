-- Extend the leases of keys this process holds, all in one call.
-- KEYS: none   ARGV: lease_seconds, n, then n x (controller, key, token)
-- Returns: one integer per item: 1 extended, 0 lost (the key was recovered and handed to another token)
local now = now_s()
local lease, n = tonumber(ARGV[1]), tonumber(ARGV[2])
local out = {}
for i = 0, n - 1 do
  local c, key, token = ARGV[3 + 3 * i], ARGV[4 + 3 * i], ARGV[5 + 3 * i]
  if redis.call('HGET', ck(c, 'processing'), key) == token then
    redis.call('ZADD', ck(c, 'leases'), 'XX', now + lease, key)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
