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

-- order_write writes the order record of an order held lazily by a buyer
-- record of user whose fields (buyer_fields) are f, as order_open does.
local function order_write(kOrder, user, f)
  redis.call('HSET', kOrder, 'user', user, 'item', f[2], 'status', 'PENDING', 'created', f[3], 'expires', f[4],
    'j', f[5], 'a', f[6], 'ac', f[7])
  if f[9] == '1' then
    redis.call('HSET', kOrder, 'p', '1')
  end
  redis.call('PEXPIREAT', kOrder, f[8])
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
  order_write(kOrder, user, f)
end

-- The holders of an order: its record's 'a' lists, comma-separated, every
-- attempt of the order id that may have been told 202 (the one that
-- reserved, and each replay answered RESERVED after it), or is '*' once
-- more than 16 did (then held for good: no void undoes it). A void lets go
-- of its own attempt only, and undoes the order when the last holder lets
-- go (void.lua). A VOID record's 'a' names the attempt it refuses.

-- holders_has reports whether attempt is in the holders list a.
local function holders_has(a, attempt)
  return a ~= nil and a ~= false and string.find(',' .. a .. ',', ',' .. attempt .. ',', 1, true) ~= nil
end

-- holders_add returns the holders list a with attempt in it.
local function holders_add(a, attempt)
  if not a or a == '' then
    return attempt
  end
  if a == '*' or holders_has(a, attempt) then
    return a
  end
  local _, commas = string.gsub(a, ',', '')
  if commas >= 15 then
    return '*'
  end
  return a .. ',' .. attempt
end

-- holders_drop returns the holders list a without attempt ('' when none is
-- left).
local function holders_drop(a, attempt)
  local rest = {}
  for x in string.gmatch(a, '[^,]+') do
    if x ~= attempt then
      rest[#rest + 1] = x
    end
  end
  return table.concat(rest, ',')
end

-- order_fences returns, as field, value pairs, the fences a record about to
-- be replaced carries to its successor: its own ('v' .. attempt) and one for
-- each attempt it names. A VOID record replaced by a new attempt's purchase
-- (a retry after a 503) must still refuse the attempts it refused: their
-- clients were told 503, and a late run of one of them must neither buy
-- anew nor become a holder of the new order.
local function order_fences(kOrder)
  local out = {}
  local h = redis.call('HGETALL', kOrder)
  for i = 1, #h, 2 do
    if string.sub(h[i], 1, 1) == 'v' then
      out[#out + 1] = h[i]
      out[#out + 1] = '1'
    elseif h[i] == 'a' then
      for x in string.gmatch(h[i + 1], '[^,]+') do
        if x ~= '*' then
          out[#out + 1] = 'v' .. x
          out[#out + 1] = '1'
        end
      end
    end
  end
  return out
end
