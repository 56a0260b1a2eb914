-- relay.lua: one round of a shard's relay: hold the shard's lease, drop the
-- entries Kafka has acknowledged, and take the next entries to produce.
--
-- KEYS[1] journal stream, KEYS[2] lease of the shard's relay, KEYS[3] the
-- shard's relay watermark (the last entry id a relay has taken)
-- ARGV[1] lease token (unique per relay process), ARGV[2] lease lifetime (ms;
-- 0 releases the lease and takes nothing), ARGV[3] hold (ms), ARGV[4] most
-- entries to take, ARGV[5] (optional) the last entry id Kafka acknowledged:
-- every entry up to it is deleted. A relay takes entries oldest first and
-- acknowledges a prefix of what it took, so everything up to that id was
-- produced; XTRIM MINID frees whole stream nodes, where XDEL of each id cost
-- hundreds of microseconds a call.
--
-- An entry is taken only once it is older than the hold by this server's
-- clock (the clock that stamped its id): that leaves a gateway whose reserve
-- reply was lost the time to void the attempt (void.lua) before any relay can
-- see it. Taking raises the watermark, and void.lua refuses to undo an entry
-- at or below it: an entry is either voided or relayed, never both.
--
-- Reply: {1, backlog (entries), oldest entry id or '', entries...} with each
-- entry as XRANGE gives it ({id, {field, value, ...}}); {0} when another relay
-- holds the lease; {2} when the lease was released.
if #KEYS ~= 3 or #ARGV < 4 or #ARGV > 5 then
  return redis.error_reply('ERR relay: want 3 keys and 4 or 5 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local token, ttl, hold, count = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if token == '' or not ttl or ttl < 0 or not hold or hold < 0 or not count or count < 1 then
  return redis.error_reply('ERR relay: bad arguments (token, lease ms, hold ms, count, last acked id)')
end
local ackMs, ackSeq
if #ARGV == 5 then
  ackMs, ackSeq = string.match(ARGV[5], '^(%d+)%-(%d+)$')
  if not ackMs then
    return redis.error_reply('ERR relay: bad entry id ' .. ARGV[5])
  end
end
local cur = redis.call('GET', KEYS[2])
if cur and cur ~= token then
  return {0}
end
if ackMs then
  -- MINID is exclusive: the id just after the last acknowledged one.
  redis.call('XTRIM', KEYS[1], 'MINID', ackMs .. '-' .. string.format('%.0f', tonumber(ackSeq) + 1))
end
if ttl == 0 then
  if cur then redis.call('DEL', KEYS[2]) end
  return {2}
end
redis.call('SET', KEYS[2], token, 'PX', ttl)
local t = redis.call('TIME')
local cutoff = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - hold
local out = {1, redis.call('XLEN', KEYS[1]), ''}
local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
if #first == 0 then
  return out
end
out[3] = first[1][1]
if cutoff < 0 then
  return out
end
local es = redis.call('XRANGE', KEYS[1], '-', tostring(cutoff), 'COUNT', count)
if #es == 0 then
  return out
end
local last = es[#es][1]
local taken = redis.call('GET', KEYS[3])
local function id_lt(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as < bs)
end
if not taken or id_lt(taken, last) then
  redis.call('SET', KEYS[3], last)
end
for _, e in ipairs(es) do
  out[#out + 1] = e
end
return out
