-- void.lua: undo one purchase attempt whose answer never reached its client
-- (the reserve reply was lost or came after the request's budget), so that
-- the 503 the client gets is true: nothing reserved, and nothing will be.
--
-- KEYS[1] stock key of the item on the buyer's home shard, KEYS[2] buyers
-- hash, KEYS[3] order record, KEYS[4] fence, KEYS[5] journal stream,
-- KEYS[6] the shard's relay watermark (the last entry a relay has taken)
-- ARGV[1] user id, ARGV[2] order id, ARGV[3] attempt id, ARGV[4] lifetime of
-- the VOID record (s)
--
-- Reply, by the names of the local below (stock.VoidOutcome numbers them
-- alike, checked by a test):
--   1 VOIDED   the attempt had reserved: unit returned, journal entry removed, record VOID;
--   2 STANDS   the attempt had reserved and a relay already took its event: the order
--      stands (the caller answers 202, which is then true);
--   3 FENCED   the attempt had not run: a VOID record now refuses it if it runs later
--      (reserve.lua answers ID_USED to the attempt a VOID record names, or
--      marks with 'v' .. attempt when the record is another attempt's);
--   0 NOTHING  the order is held by other attempts (retries with the same
--      Idempotency-Key, which may have been told 202: order.lua's holders)
--      or already finished: nothing to undo, and this attempt lets go;
--  -1 FROZEN   the shard is frozen by a reshard: retry on the new layout.
local NOTHING, VOIDED, STANDS, FENCED, FROZEN = 0, 1, 2, 3, -1
if #KEYS ~= 6 or #ARGV ~= 4 then
  return redis.error_reply('ERR void: want 6 keys and 4 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local user, oid, attempt, ttl = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
if user == '' or oid == '' or attempt == '' or not ttl or ttl < 1 then
  return redis.error_reply('ERR void: bad arguments (user, order id, attempt, ttl s)')
end
if redis.call('EXISTS', KEYS[4]) == 1 then
  return FROZEN
end
order_open(KEYS[3], KEYS[2], user, oid)
local function id_le(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  if not am or not bm then return false end
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as <= bs)
end
local rec = redis.call('HMGET', KEYS[3], 'a', 'j', 'status')
if rec[1] == false and rec[3] == false then
  redis.call('HSET', KEYS[3], 'status', 'VOID', 'a', attempt, 'user', user)
  redis.call('EXPIRE', KEYS[3], ttl)
  return FENCED
end
-- Whatever follows, a late run of this attempt must change nothing: not
-- reserve anew after a VOID (reserve.lua lets a new attempt buy then), nor
-- join the order's holders by a replay (which would hold the order for an
-- attempt whose client was told 503). Fence it on the record.
redis.call('HSET', KEYS[3], 'v' .. attempt, '1')
local a = rec[1] or ''
if a == '*' or not holders_has(a, attempt) then
  -- Another attempt of this order id holds the order (a retry with the same
  -- Idempotency-Key, which may have been told 202), or held it for good
  -- ('*'), or was voided or fenced on the record.
  if rec[3] == 'VOID' then
    return FENCED
  end
  return NOTHING
end
if rec[3] ~= 'PENDING' then
  return NOTHING
end
local rest = holders_drop(a, attempt)
if rest ~= '' then
  -- Other attempts that may have been told 202 hold the order: it stands
  -- for them, and this attempt lets go.
  redis.call('HSET', KEYS[3], 'a', rest)
  return NOTHING
end
local hv = redis.call('HGET', KEYS[2], user)
if not hv or buyer_oid(hv) ~= oid then
  return NOTHING
end
local raw = redis.call('GET', KEYS[1])
local n = raw and tonumber(raw)
if not n or n ~= math.floor(n) or n < 0 then
  return redis.error_reply('ERR void: stock key missing or not a non-negative integer: ' .. KEYS[1])
end
local j = rec[2]
if j then
  local taken = redis.call('GET', KEYS[6])
  if taken and id_le(j, taken) then
    return STANDS
  end
  if redis.call('XDEL', KEYS[5], j) == 0 then
    return STANDS
  end
end
redis.call('HDEL', KEYS[2], user)
redis.call('INCR', KEYS[1])
redis.call('HSET', KEYS[3], 'status', 'VOID')
redis.call('EXPIRE', KEYS[3], ttl)
return VOIDED
