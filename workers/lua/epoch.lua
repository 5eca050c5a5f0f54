-- Check in with the data set's identity (see guard in lib.lua): notices restarts and data loss and
-- holds back takes for `quiet_seconds` when they happened under a caller that knew the old epoch.
-- KEYS: none   ARGV: quiet_seconds, known epoch ('' none), epoch to write if none
-- Returns: {epoch, run_id}
local epoch, run = guard(tonumber(ARGV[1]), ARGV[2], ARGV[3])
return {epoch, run}
