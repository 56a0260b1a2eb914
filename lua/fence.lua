-- fence.lua: a gateway's beat on one shard, which tells the shard's relays
-- how far back the gateway's purchase, pay and cancel attempts there are
-- settled (see relay.lua and sharding/journal/DESIGN.md, "The fence").
--
-- Every beat answers this server's time. The gateway keeps that answer,
-- checks its voids (none for the shard may wait to land), and hands it back
-- with its next beat, which records it as the gateway's mark. Every attempt
-- whose entry is older than a mark by the relay hold was sent that long
-- before the gateway checked: the hold exceeds the request budget and the
-- release budget, so by then it was answered for good, or voided, or its
-- void queued (and then the gateway hands nothing back). A mark is a time
-- of this server's own clock, taken before the check: no clock of the
-- gateway's is compared with it, and a beat held up in the network for any
-- time still tells the truth.
--
-- KEYS[1] the shard's fence marks (hash: gateway id -> unix ms of its last
-- mark, this server's clock)
-- ARGV[1] gateway id, ARGV[2] 'beat' or 'leave', ARGV[3] the time the
-- gateway's previous beat on the shard answered, to record ('' for none)
--
-- Reply: for a beat, {this server's time now (unix ms), 1 when the handed
-- back time was recorded (or the mark was already past it), else 0: none
-- was handed back, or it is later than this server's time (it came from
-- another server's clock: a failover)}; for a leave, 2 (LEFT: the gateway's
-- mark is removed, a clean stop with no void queued).
local LEFT = 2
if #KEYS ~= 1 or #ARGV ~= 3 then
  return redis.error_reply('ERR fence: want 1 key and 3 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local id, op, prev = ARGV[1], ARGV[2], ARGV[3]
if id == '' or (op ~= 'beat' and op ~= 'leave') or (prev ~= '' and not string.match(prev, '^%d+$')) then
  return redis.error_reply('ERR fence: bad arguments (gateway id, beat|leave, previous answer ms or empty)')
end
if op == 'leave' then
  redis.call('HDEL', KEYS[1], id)
  return LEFT
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local recorded = 0
local p = tonumber(prev)
if p and p <= now then
  local cur = tonumber(redis.call('HGET', KEYS[1], id))
  if not cur or cur < p then
    redis.call('HSET', KEYS[1], id, string.format('%.0f', p))
  end
  recorded = 1
end
return {now, recorded}
