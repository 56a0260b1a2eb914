-- fence.lua: a gateway's beat on one shard, which tells the shard's relays
-- how far back the gateway's purchase, pay and cancel attempts there are
-- settled (see relay.lua and sharding/journal/DESIGN.md, "The fence").
--
-- A gateway beats a shard only while none of its voids for the shard waits
-- to land, and stamps the beat with the time it checked that (its own
-- clock). A beat that arrives later than the allowed transit after that
-- stamp is refused: it may have been held up across a partition while a
-- void was queued since. Every attempt the gateway sent at least the relay
-- hold before an accepted beat has been answered for good, or voided: the
-- hold exceeds the request budget, the release budget and the transit.
--
-- KEYS[1] the shard's fence marks (hash: gateway id -> unix ms of its last
-- accepted beat, this server's clock)
-- ARGV[1] gateway id, ARGV[2] 'beat' or 'leave', ARGV[3] the beat's stamp
-- (unix ms, the gateway's clock), ARGV[4] the allowed transit (ms)
--
-- Reply, by the names of the local below (journal.Fence numbers them alike):
--   BEAT  the mark is this server's time now;
--   LATE  the beat came too late, or the clocks disagree by more than the
--         transit: nothing written;
--   LEFT  the gateway's mark is removed (a clean stop with no void queued).
local LATE, BEAT, LEFT = 0, 1, 2
if #KEYS ~= 1 or #ARGV ~= 4 then
  return redis.error_reply('ERR fence: want 1 key and 4 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local id, op, stamp, transit = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
if id == '' or (op ~= 'beat' and op ~= 'leave') or not stamp or not transit or transit < 0 then
  return redis.error_reply('ERR fence: bad arguments (gateway id, beat|leave, stamp ms, transit ms)')
end
if op == 'leave' then
  redis.call('HDEL', KEYS[1], id)
  return LEFT
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if math.abs(now - stamp) > transit then
  return LATE
end
local prev = tonumber(redis.call('HGET', KEYS[1], id))
if not prev or prev < now then
  redis.call('HSET', KEYS[1], id, string.format('%.0f', now))
end
return BEAT
