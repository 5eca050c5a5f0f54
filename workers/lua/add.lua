-- Enqueue keys, many per call (dedupe: a key already waiting is not queued twice; a key being
-- reconciled is marked waiting and queued when its reconcile ends).
-- A fresh add of a key waiting at resync priority moves it ahead (a second entry on the fresh list;
-- the resync entry is counted stale). Wakes up to one blocked dispatcher per queued entry.
-- KEYS: none
-- ARGV: groups, then per group: controller, queue, resync '0'|'1', n, key1..keyn
-- Returns: one integer per key in order, 1 when the key was not waiting before (or only at resync
-- priority and this add is fresh), else 0
local now = now_s()
local out, woken = {}, {}
local i = 2
for _ = 1, tonumber(ARGV[1]) do
  local c, q, resync, n = ARGV[i], ARGV[i + 1], ARGV[i + 2] == '1', tonumber(ARGV[i + 3])
  i = i + 4
  local waiting, processing, resyncs = ck(c, 'waiting'), ck(c, 'processing'), ck(c, 'resync')
  local upgrades = (not resync) and redis.call('SCARD', resyncs) > 0
  local queued = 0
  for j = i, i + n - 1 do
    local key = ARGV[j]
    local flag = 0
    if not resync then unpark(c, key) end
    if resync and redis.call('ZSCORE', ck(c, 'parked'), key) then
      -- parked: a periodic resync is no reason to take a worker down again
    elseif redis.call('ZADD', waiting, 'NX', now, key) == 1 then
      flag = 1
      if resync then redis.call('SADD', resyncs, key) end
      if redis.call('HEXISTS', processing, key) == 0 then
        push_ready(q, c, key, resync)
        queued = queued + 1
      end
    elseif upgrades and redis.call('SREM', resyncs, key) == 1 then
      flag = 1
      if redis.call('HEXISTS', processing, key) == 0 then
        push_ready(q, c, key, false)
        redis.call('INCR', qk(q, 'stale'))
        queued = queued + 1
      end
    end
    out[#out + 1] = flag
  end
  i = i + n
  if queued > 0 then redis.call('SADD', qk(q, 'controllers'), c) end
  woken[q] = (woken[q] or 0) + queued
end
for q, k in pairs(woken) do if k > 0 then wake(q, k) end end
return out
