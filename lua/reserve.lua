-- reserve.lua: one purchase click against one stock shard, journaled.
--
-- The unit, the buyer record (which carries the order: see order.lua) and
-- the order's event in the shard's journal (a stream the relay moves to
-- Kafka) are written together in this one atomic step, or none of them is: a
-- reservation without its event, or an event without its unit, cannot exist.
-- No order record is written: it is made on the order's first change. An
-- order id is its user's own (the gateway derives it from the user and a
-- random or Idempotency-Key part), so an id in use is found in the user's
-- buyer record, and a finished or voided one in its record.
--
-- KEYS[1] stock key of the item on this shard (integer units left)
-- KEYS[2] buyers hash of this shard: user id -> the order (order.lua; the user's home shard)
-- KEYS[3] order record hash of the new order id (read, and written only over a VOID one)
-- KEYS[4] fence of the shard: present while the shard is frozen for a reshard
-- KEYS[5] journal stream of the shard
-- KEYS[6] receiver marker of move ARGV[11] (only touched when ARGV[10] > 0)
-- KEYS[7] halt key of the shard: 'PAUSED' or 'ENDED' while an operator halted the sale
-- ARGV[1] user id, ARGV[2] order id, ARGV[3] item id,
-- ARGV[4] created (unix ms), ARGV[5] expires (unix ms), ARGV[6] order record TTL (s),
-- ARGV[7] sale id, ARGV[8] journal bound (entries), ARGV[9] attempt id (unique
-- per request: a void names the attempt it undoes),
-- ARGV[10] units to credit first (a borrow's move_out took them from a donor;
-- 0 for none), ARGV[11] move id, ARGV[12] move marker lifetime (s)
--
-- Reply: {code, order id, units left}, the code one of these names (the
-- local below; stock.Outcome numbers them alike, checked by a test):
--   SOLD_OUT           no unit on this shard: {0, '', 0}
--   RESERVED           the unit is held for the order id; units left, or -1 on
--                      an idempotent replay of the same order id (nothing
--                      written but the attempt, added to the PENDING order's
--                      holders)
--   ALREADY_PURCHASED  the user holds another active order: its id
--   ID_USED            the order id was used and finished (or this very
--                      attempt was voided)
--   FROZEN             a reshard fences the shard (reload the sale, retry on
--                      its new layout)
--   JOURNAL_FULL       the journal holds its bound: nothing written (503)
--   PAUSED, ENDED      an operator halted the sale: no reservation (503
--                      SALE_PAUSED, 410 SALE_ENDED); a borrow's credit still
--                      arrives, so no unit is lost
-- A halted shard still answers a holder its order (RESERVED on a replay,
-- ALREADY_PURCHASED).
-- Everything is checked before the first write, so an error reply changes nothing.
local SOLD_OUT, RESERVED, ALREADY_PURCHASED, ID_USED, FROZEN, JOURNAL_FULL, PAUSED, ENDED = 0, 1, 2, 3, 4, 5, 6, 7
if #KEYS ~= 7 or #ARGV ~= 12 then
  return redis.error_reply('ERR reserve: want 7 keys and 12 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local user, oid, attempt = ARGV[1], ARGV[2], ARGV[9]
local ttl, bound, credit, mttl = tonumber(ARGV[6]), tonumber(ARGV[8]), tonumber(ARGV[10]), tonumber(ARGV[12])
if user == '' or oid == '' or not tonumber(ARGV[3]) or not tonumber(ARGV[4]) or not tonumber(ARGV[5])
    or not ttl or ttl <= 0 or not tonumber(ARGV[7]) or not bound or bound < 1 or attempt == ''
    or not credit or credit < 0 or credit ~= math.floor(credit) or (credit > 0 and (ARGV[11] == '' or not mttl or mttl < 1)) then
  return redis.error_reply('ERR reserve: bad arguments (user, order id, item, created ms, expires ms, ttl s, sale, bound, attempt, credit, move id, marker ttl s)')
end
if redis.call('EXISTS', KEYS[4]) == 1 then
  return {FROZEN, '', -1}
end
if redis.call('XLEN', KEYS[5]) >= bound then
  return {JOURNAL_FULL, '', -1}
end
local raw = redis.call('GET', KEYS[1])
local n = raw and tonumber(raw)
if not n or n ~= math.floor(n) or n < 0 then
  return redis.error_reply('ERR reserve: stock key missing or not a non-negative integer: ' .. KEYS[1])
end
-- A borrow's units arrive first and whatever happens next, at most once per
-- move id (as move_in.lua): the buyer may turn out to hold an order already,
-- and the units must not be lost then.
if credit > 0 and redis.call('EXISTS', KEYS[6]) == 0 then
  n = redis.call('INCRBY', KEYS[1], credit)
  redis.call('SET', KEYS[6], tostring(credit), 'EX', mttl)
end
local held = redis.call('HGET', KEYS[2], user)
if held then
  local f = buyer_fields(held)
  if f[1] == oid then
    -- A retry of this order (the same Idempotency-Key) is answered RESERVED
    -- and becomes one of the order's holders (order.lua): a void of another
    -- attempt, the one whose reply was lost, then leaves the order to it
    -- (void.lua undoes an order only when its last holder lets go). The
    -- attempts of one key may overlap (a hedged client, a second tap, a
    -- load balancer's retry), in any order. An attempt void.lua fenced ('v'
    -- .. attempt: its client was told 503) joins nothing. An order still
    -- held lazily (no record: nothing fenced it) gets its record first.
    local r = redis.call('HMGET', KEYS[3], 'status', 'v' .. attempt, 'a')
    if not r[1] and #f == 9 and tonumber(f[8]) and tonumber(f[8]) > tonumber(ARGV[4]) then
      order_write(KEYS[3], user, f)
      r = {'PENDING', false, f[6]}
    end
    if r[1] == 'PENDING' and not r[2] then
      local a = holders_add(r[3], attempt)
      if a ~= r[3] then
        redis.call('HSET', KEYS[3], 'a', a)
      end
    end
    return {RESERVED, oid, -1}
  end
  return {ALREADY_PURCHASED, f[1], -1}
end
local st, sa = unpack(redis.call('HMGET', KEYS[3], 'status', 'a'))
-- A VOID record lets another attempt of the order id buy anew (a retry
-- with the same Idempotency-Key after a 503), but not the attempt it names
-- nor one void.lua fenced on it ('v' .. attempt): their late runs are refused.
if st and not (st == 'VOID' and not holders_has(sa, attempt)
    and not redis.call('HGET', KEYS[3], 'v' .. attempt)) then
  return {ID_USED, oid, -1}
end
local halt = redis.call('GET', KEYS[7])
if halt == 'PAUSED' then
  return {PAUSED, '', -1}
elseif halt then
  return {ENDED, '', -1}
end
if n == 0 then
  return {SOLD_OUT, '', 0}
end
redis.call('DECR', KEYS[1])
-- The entry's second version (orderevent.FromFields): the sale is the order id's.
local eid = redis.call('XADD', KEYS[5], '*', 't', 'r', 'o', oid, 'i', ARGV[3], 'u', user, 'c', ARGV[4], 'x', ARGV[5])
local deadline = string.format('%.0f', tonumber(ARGV[4]) + ttl * 1000)
redis.call('HSET', KEYS[2], user, buyer_value(oid, ARGV[3], ARGV[4], ARGV[5], eid, attempt, ARGV[4], deadline, ''))
if st then
  -- A retry after a void: the VOID record goes (as the order's first
  -- change, the reservation over it is written as its record), its fences
  -- kept (order_fences).
  local fences = order_fences(KEYS[3])
  redis.call('DEL', KEYS[3])
  redis.call('HSET', KEYS[3], 'user', user, 'item', ARGV[3], 'status', 'PENDING', 'created', ARGV[4], 'expires', ARGV[5],
    'a', attempt, 'ac', ARGV[4], 'j', eid, unpack(fences))
  redis.call('PEXPIREAT', KEYS[3], deadline)
end
return {RESERVED, oid, n - 1}
