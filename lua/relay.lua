-- relay.lua: one round of a shard's relay: hold the shard's lease, drop the
-- entries Kafka has acknowledged, and close the entries old enough to take
-- to voids. The relay then reads them with a plain XRANGE of its own: a
-- script that returned them would build every entry as a Lua table and back,
-- which costs Redis 4 to 5 times the XRANGE (about 3 ms for 512 entries,
-- blocking the master meanwhile).
--
-- KEYS[1] journal stream, KEYS[2] lease of the shard's relay, KEYS[3] the
-- shard's relay watermark (entries at or below it may have been taken),
-- KEYS[4] the shard's ownership mark (set by the relay that takes the lease,
-- deleted with it by a clean release), KEYS[5] the shard's fence marks
-- (fence.lua: gateway id -> its last beat, ms), KEYS[6] the shard's freeze
-- (a reshard's fence, sharding.AppendFenceKey)
-- ARGV[1] lease token (unique per relay process), ARGV[2] lease lifetime (ms;
-- 0 releases the lease and closes nothing), ARGV[3] hold (ms), ARGV[4] how
-- long a fence mark holds (ms), ARGV[5]
-- (optional) the last entry id Kafka acknowledged: every entry up to it is
-- deleted. A relay takes entries oldest first and acknowledges a prefix of
-- what it took, so everything up to that id was produced; XTRIM MINID frees
-- whole stream nodes, where XDEL of each id cost hundreds of microseconds a
-- call.
--
-- An entry may be taken only once it is older than the hold by this server's
-- clock (the clock that stamped its id): that leaves a gateway whose reserve
-- reply was lost the time to void the attempt (void.lua) before any relay can
-- see it. This round raises the watermark to the last id of that age (the
-- cutoff's millisecond, any sequence), and void.lua refuses to undo an entry
-- at or below it: an entry is either voided or relayed, never both. Entries
-- at or below the watermark are never removed but by the lease holder's
-- XTRIM, and new ones get later ids, so the relay's XRANGE up to it reads
-- exactly what this round closed.
--
-- The fence: the cutoff is also no later than the oldest live fence mark
-- less the hold. A gateway marks a shard only when none of its voids for it
-- waits to land (fence.lua), so an entry older than the hold at its
-- gateway's last mark is settled: answered for good, or voided. A gateway
-- cut off from this master stops marking it, and its last entries wait
-- here, not taken, until its queued voids have landed and it marks again.
-- A mark older than ARGV[4] is a gateway gone (or cut off that long): it is
-- dropped, and its entries are taken as any others.
--
-- A shard frozen by a reshard closes nothing more: the reshard copies its
-- journal to the new shards, and what no relay had taken by the freeze goes
-- there untaken, where a void can still undo it (a relay that took it here
-- meanwhile would make that void undo an order already on its way to
-- Kafka). What was closed before is read again up to the watermark.
--
-- A lease taken while another relay's ownership mark is there was lost, not
-- released: its owner died, or could not renew it through an outage in
-- which a gateway may also have failed to void an attempt. That round closes
-- nothing and says so (lost = 1); the relay then holds off for its settle
-- time, so that such a void comes first. A lease never held, or released
-- cleanly, is taken and used at once.
--
-- Reply: {1, backlog (entries), oldest entry id or '', the id to read up to
-- or '' when no entry is old enough or the lease was just taken over from
-- a lost one, lost (1 or 0)}; {0} when another relay holds the lease; {2}
-- when the lease was released.
if #KEYS ~= 7 or #ARGV < 4 or (#ARGV > 5 and (#ARGV - 5) % 2 ~= 0) then
  return redis.error_reply('ERR relay: want 7 keys and 4 args, then the last acked id and item, entry id pairs, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local token, ttl, hold, fenceFor = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if token == '' or not ttl or ttl < 0 or not hold or hold < 0 or not fenceFor or fenceFor <= 0 then
  return redis.error_reply('ERR relay: bad arguments (token, lease ms, hold ms, fence ms, last acked id)')
end
local ackMs, ackSeq
if #ARGV >= 5 then
  ackMs, ackSeq = string.match(ARGV[5], '^(%d+)%-(%d+)$')
  if not ackMs then
    return redis.error_reply('ERR relay: bad entry id ' .. ARGV[5])
  end
  for i = 6, #ARGV, 2 do
    if not string.match(ARGV[i], '^%d+$') or not string.match(ARGV[i + 1], '^%d+%-%d+$') then
      return redis.error_reply('ERR relay: bad item, entry id pair at ' .. i)
    end
  end
end
local function id_lt(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as < bs)
end
local cur = redis.call('GET', KEYS[2])
if cur and cur ~= token then
  return {0}
end
if ackMs then
  -- MINID is exclusive: the id just after the last acknowledged one.
  redis.call('XTRIM', KEYS[1], 'MINID', ackMs .. '-' .. string.format('%.0f', tonumber(ackSeq) + 1))
  for i = 6, #ARGV, 2 do
    local cur = redis.call('HGET', KEYS[7], ARGV[i])
    if not cur or not string.match(cur, '^%d+%-%d+$') or id_lt(cur, ARGV[i + 1]) then
      redis.call('HSET', KEYS[7], ARGV[i], ARGV[i + 1])
    end
  end
end
if ttl == 0 then
  if cur then redis.call('DEL', KEYS[2], KEYS[4]) end
  return {2}
end
local lost = 0
if not cur then
  local mark = redis.call('GET', KEYS[4])
  if mark and mark ~= token then
    lost = 1 -- another relay's lease ran out (this relay's own only ran out
             -- if it was slow to renew it: had Redis been away, its rounds
             -- would have failed, and it holds off for that already)
  end
  redis.call('SET', KEYS[4], token)
end
redis.call('SET', KEYS[2], token, 'PX', ttl)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local fence = now
local marks = redis.call('HGETALL', KEYS[5])
for i = 1, #marks, 2 do
  local at = tonumber(marks[i + 1])
  if not at or at < now - fenceFor then
    redis.call('HDEL', KEYS[5], marks[i])
  elseif at < fence then
    fence = at
  end
end
local cutoff = fence - hold
local out = {1, redis.call('XLEN', KEYS[1]), '', '', lost}
local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
if #first == 0 then
  return out
end
local oldest = first[1][1]
out[3] = oldest
if lost == 1 then
  return out
end
if redis.call('EXISTS', KEYS[6]) == 1 then
  local taken = redis.call('GET', KEYS[3])
  if taken and string.match(taken, '^%d+%-%d+$') and not id_lt(taken, oldest) then
    out[4] = taken
  end
  return out
end
local upto = string.format('%.0f', cutoff) .. '-18446744073709551615'
if cutoff < 0 or id_lt(upto, oldest) then
  return out
end
local taken = redis.call('GET', KEYS[3])
if taken and string.match(taken, '^%d+%-%d+$') and id_lt(upto, taken) then
  upto = taken -- this server's clock went back: what was closed stays closed
else
  redis.call('SET', KEYS[3], upto)
end
out[4] = upto
return out
