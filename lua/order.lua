-- order.lua: the lazy order record, shared by every script that reads or
-- changes an order (lua.go puts it in front of them).
--
-- A reservation writes no order record: the buyer record carries the order.
-- buyers[user] is either a bare order id (a record the ops tool restored) or
--
--   oid|item|created ms|expires ms|journal entry id|attempt|attempt created ms|record deadline ms|persisted
--
-- (persisted '1' once PostgreSQL holds the order, else ''). The order record
-- {tag}:o:<oid> is created from it on the order's first change of state
-- (pay, cancel, void, expiry, a status from the writer, a release) by
-- order_open, exactly as reserve.lua used to write it at reserve time, and
-- from then on the record is the order and the buyer record only says who
-- holds it. Every script that changes an order, or removes a buyer record,
-- opens the order first; so an order id that was used always leaves a record
-- (or a buyer record naming it) for reserve.lua's "order id used" check.
local function buyer_fields(v)
  local f = {}
  for s in string.gmatch(v .. '|', '([^|]*)|') do
    f[#f + 1] = s
  end
  return f
end

-- buyer_oid returns the order id a buyer record names.
local function buyer_oid(v)
  return string.match(v, '^[^|]*')
end

-- buyer_value returns the buyer record of a new reservation.
local function buyer_value(oid, item, created, expires, eid, attempt, ac, deadline, persisted)
  return oid .. '|' .. item .. '|' .. created .. '|' .. expires .. '|' .. eid .. '|' .. attempt .. '|' .. ac .. '|' .. deadline .. '|' .. persisted
end

-- key_oid returns the order id an order record's key names ({tag}:o:<oid>).
local function key_oid(k)
  return string.match(k, ':o:(.*)$') or ''
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- order_open writes the order record of oid from user's buyer record when
-- the record does not exist and the buyer record holds oid lazily (and its
-- record would not have expired yet). It changes nothing otherwise.
local function order_open(kOrder, kBuyers, user, oid)
  if user == '' or redis.call('EXISTS', kOrder) == 1 then
    return
  end
  local v = redis.call('HGET', kBuyers, user)
  if not v then
    return
  end
  local f = buyer_fields(v)
  local dl = tonumber(f[8])
  if #f ~= 9 or f[1] ~= oid or not dl or dl <= now_ms() then
    return
  end
  redis.call('HSET', kOrder, 'user', user, 'item', f[2], 'status', 'PENDING', 'created', f[3], 'expires', f[4],
    'j', f[5], 'a', f[6], 'ac', f[7])
  if f[9] == '1' then
    redis.call('HSET', kOrder, 'p', '1')
  end
  redis.call('PEXPIREAT', kOrder, f[8])
end

