-- void_act.lua: undo one pay or cancel attempt whose answer never reached its
-- client (act.lua's reply was lost, or came after the request's budget), so
-- that the 503 the client gets is true: this request changed nothing, and
-- nothing will come of it.
--
-- KEYS[1] order record, KEYS[2] fence of the shard, KEYS[3] journal stream,
-- KEYS[4] the shard's relay watermark (the last entry a relay has taken),
-- KEYS[5] buyers hash of the shard (the order's record is opened from it: order.lua)
-- ARGV[1] attempt id, ARGV[2] user id, ARGV[3] order id
--
-- The attempt is fenced first ('v' .. attempt on the record), so that a late
-- run of it changes nothing (act.lua answers VOIDED). Then, when the attempt
-- holds the record's request (see act.lua: 'qa' lists the attempts told of
-- it), it lets go; the last holder to let go takes the request back: its
-- journal entry is deleted and the mark cleared, so the order is PENDING
-- again (and expires at its deadline as if the request never came).
--
-- Reply, by the names of the local below (stock.VoidOutcome numbers them
-- alike, checked by a test):
--   1 VOIDED   the attempt had journaled the request, no other holds it: entry
--      deleted, mark cleared;
--   2 STANDS   a relay already took the entry (or the writer committed it): the
--      request stands (the caller answers 202, which is then true);
--   3 FENCED   the attempt had not run: it is fenced;
--   0 NOTHING  nothing to undo: no such record, the attempt voided before, or the
--      request still held by another attempt (which may have been told
--      202), or for good;
--  -1 FROZEN   the shard is frozen by a reshard: retry on the new layout.
local NOTHING, VOIDED, STANDS, FENCED, FROZEN = 0, 1, 2, 3, -1
if #KEYS ~= 5 or #ARGV ~= 3 then
  return redis.error_reply('ERR void_act: want 5 keys and 3 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local attempt = ARGV[1]
if not string.match(attempt, '^%d+$') or ARGV[2] == '' or ARGV[3] == '' then
  return redis.error_reply('ERR void_act: bad arguments (attempt, user, order id)')
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  return FROZEN
end
order_open(KEYS[1], KEYS[5], ARGV[2], ARGV[3])
local r = redis.call('HMGET', KEYS[1], 'status', 'q', 'qa', 'qj', 'v' .. attempt)
if r[1] == false or r[5] then
  return NOTHING -- no such order, or this attempt was voided before
end
redis.call('HSET', KEYS[1], 'v' .. attempt, '1')
local qa = r[3]
if not qa or qa == '*' then
  return r[2] and NOTHING or FENCED
end
local rest, held = {}, false
for a in string.gmatch(qa, '[^,]+') do
  if a == attempt then held = true else rest[#rest + 1] = a end
end
if not held then
  return r[2] and NOTHING or FENCED
end
if r[1] ~= 'PENDING' then
  return STANDS
end
if #rest > 0 then
  redis.call('HSET', KEYS[1], 'qa', table.concat(rest, ','))
  return NOTHING
end
local function id_le(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  if not am or not bm then return false end
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as <= bs)
end
local j = r[4]
local taken = redis.call('GET', KEYS[4])
if not j or (taken and id_le(j, taken)) or redis.call('XDEL', KEYS[3], j) == 0 then
  return STANDS
end
redis.call('HDEL', KEYS[1], 'q', 'qa', 'qj')
return VOIDED
