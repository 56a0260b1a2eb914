-- reserve_many.lua: several purchase clicks on one Redis slot in one call.
--
-- Each reservation is exactly reserve.lua's, with its 7 keys and 12
-- arguments laid out so that what the reservations of one shard share is
-- sent, and checked, once per call. Reservations come in groups: a group is
-- six keys and seven arguments that reserve.lua's calls share (stock,
-- buyers, fence, journal, move marker and halt keys; item, order record
-- TTL, sale, journal bound, credit, move id, marker TTL), usually one group
-- per call (sharding/stock's joinCalls builds the layout):
--
-- KEYS[6*(g-1)+1..6*g] group g's KEYS 1, 2, 4, 5, 6, 7 of reserve.lua
-- KEYS[6*G+i]          reservation i's order key (reserve.lua's KEYS[3])
-- ARGV[1]              G, the number of groups
-- ARGV[1+7*(g-1)+1..]  group g's ARGV 3, 6, 7, 8, 10, 11, 12 of reserve.lua
-- ARGV[1+7*G+6*(i-1)+1..] reservation i: its group g, then ARGV 1, 2, 4, 5,
--                      9 of reserve.lua (user, order id, created, expires,
--                      attempt)
--
-- The reply holds, for each reservation in order, what reserve.lua would
-- have replied had the calls run one after another in this order: {code,
-- order id, units left} (reserve.lua's codes), or an error for a
-- reservation whose arguments or stock key are malformed (the others still
-- run).
--
-- Why: a script call costs Redis far more than the commands it runs (the
-- call's setup, its arguments turned into Lua strings, each redis.call's
-- bridge, and on the replica one MULTI/EXEC per call). Here the keys every
-- reservation reads (fence, journal length, halt, stock, buyer records,
-- whether an order record exists) are read once per distinct key, the
-- shared arguments are sent and checked once per group, and the stock
-- decrement and buyer records (which carry the orders: order.lua) are
-- written once per key at the end: a reservation then costs its journal
-- entry. (bench/MEASUREMENTS.md, issue 58's ablation: the arguments and
-- their checks per reservation were over a third of Redis's CPU per 202.)
--
-- Every key is read (and so type-checked) before the first write, so the
-- writes that follow cannot fail on a key's type, and Redis refuses a script
-- for lack of memory only at its first write: the stock decrements, buyer
-- records and journal entries of one call are made together or not at all.
local SOLD_OUT, RESERVED, ALREADY_PURCHASED, ID_USED, FROZEN, JOURNAL_FULL, PAUSED, ENDED = 0, 1, 2, 3, 4, 5, 6, 7
local GK, GA, RA = 6, 7, 6
local G = tonumber(ARGV[1])
local n = G and G >= 1 and G == math.floor(G) and #KEYS - GK * G or 0
if n < 1 or #ARGV ~= 1 + GA * G + RA * n then
  return redis.error_reply('ERR reserve_many: want a group count, 6 keys and 7 args per group, 1 key and 6 args per reservation, got '
    .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local R0 = 1 + GA * G -- ARGV before the first reservation's

-- Each group's shared arguments, checked once: its good flag and numbers.
local gok, gttl, gcredit, gmttl = {}, {}, {}, {}
for g = 1, G do
  local a = 1 + GA * (g - 1)
  local ttl, bound, credit, mttl = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]), tonumber(ARGV[a + 7])
  gok[g] = tonumber(ARGV[a + 1]) and ttl and ttl > 0 and tonumber(ARGV[a + 3]) and bound and bound >= 1
    and credit and credit >= 0 and credit == math.floor(credit) and (credit == 0 or (ARGV[a + 6] ~= '' and mttl and mttl >= 1)) or false
  gttl[g], gcredit[g], gmttl[g] = ttl, credit, mttl
end
-- grp[i] is reservation i's group (1..G), or false for a bad index.
local grp = {}
for i = 0, n - 1 do
  local g = tonumber(ARGV[R0 + RA * i + 1])
  grp[i] = g and g >= 1 and g <= G and g == math.floor(g) and g or false
end

-- Every key any reservation reads, read once per distinct key before the
-- first write: fence, journal length, halt, stock, the buyer records (one
-- HMGET per buyers key) and the order records (one EXISTS for all of them,
-- and their status only when one exists).
local fence, jlen, halt, stock, held, ord = {}, {}, {}, {}, {}, {}
local users, orders = {}, {}
for i = 0, n - 1 do
  local k = GK * ((grp[i] or 1) - 1)
  local kStock, kBuyers, kFence, kJournal, kHalt = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 6]
  if fence[kFence] == nil then fence[kFence] = redis.call('EXISTS', kFence) == 1 end
  if jlen[kJournal] == nil then jlen[kJournal] = redis.call('XLEN', kJournal) end
  if halt[kHalt] == nil then halt[kHalt] = redis.call('GET', kHalt) or false end
  if stock[kStock] == nil then
    local raw = redis.call('GET', kStock)
    local v = raw and tonumber(raw)
    stock[kStock] = (v and v == math.floor(v) and v >= 0) and v or false
  end
  users[kBuyers] = users[kBuyers] or {}
  table.insert(users[kBuyers], ARGV[R0 + RA * i + 2])
  orders[#orders + 1] = KEYS[GK * G + i + 1]
end
for b, us in pairs(users) do
  local vals = redis.call('HMGET', b, unpack(us))
  local h = {}
  for j, u in ipairs(us) do
    if vals[j] then h[u] = vals[j] end
  end
  held[b] = h
end
if redis.call('EXISTS', unpack(orders)) > 0 then
  for _, o in ipairs(orders) do
    if ord[o] == nil then
      local v = redis.call('HMGET', o, 'status', 'a')
      ord[o] = v[1] and {v[1], v[2]} or false
    end
  end
end

local out = {}
local taken = {}  -- stock key -> units taken by this call
local buyers = {} -- buyers key -> {user, buyer record, ...} to write
local added = {}  -- journal key -> entries added by this call

local function one(i)
  local g, r = grp[i], R0 + RA * i
  local user, oid, created, expires, attempt = ARGV[r + 2], ARGV[r + 3], ARGV[r + 4], ARGV[r + 5], ARGV[r + 6]
  local createdN = tonumber(created)
  if not g or not gok[g] or user == '' or oid == '' or not createdN or not tonumber(expires) or attempt == '' then
    return redis.error_reply('ERR reserve: bad arguments (user, order id, item, created ms, expires ms, ttl s, sale, bound, attempt, credit, move id, marker ttl s)')
  end
  local k, a = GK * (g - 1), 1 + GA * (g - 1)
  local kStock, kBuyers, kOrder, kFence, kJournal, kMove, kHalt =
    KEYS[k + 1], KEYS[k + 2], KEYS[GK * G + i + 1], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], KEYS[k + 6]
  local item, bound, credit, mttl = ARGV[a + 1], tonumber(ARGV[a + 4]), gcredit[g], gmttl[g]
  if fence[kFence] then
    return {FROZEN, '', -1}
  end
  if jlen[kJournal] + (added[kJournal] or 0) >= bound then
    return {JOURNAL_FULL, '', -1}
  end
  local units = stock[kStock]
  if not units then
    return redis.error_reply('ERR reserve: stock key missing or not a non-negative integer: ' .. kStock)
  end
  units = units - (taken[kStock] or 0)
  if credit > 0 and redis.call('EXISTS', kMove) == 0 then
    units = redis.call('INCRBY', kStock, credit) - (taken[kStock] or 0)
    stock[kStock] = stock[kStock] + credit
    redis.call('SET', kMove, tostring(credit), 'EX', mttl)
  end
  local h = held[kBuyers][user]
  if h then
    local f = buyer_fields(h)
    if f[1] == oid then
      -- reserve.lua's replay: the attempt joins the PENDING order's holders
      -- unless void.lua fenced it ('v' .. attempt); an order held lazily
      -- gets its record first (its buyer record may be this call's, not
      -- written yet: the record is written from its fields).
      local rec = ord[kOrder]
      if not rec and #f == 9 and tonumber(f[8]) and tonumber(f[8]) > createdN then
        order_write(kOrder, user, f)
        rec = {'PENDING', f[6]}
        ord[kOrder] = rec
      end
      if rec and rec[1] == 'PENDING' and not redis.call('HGET', kOrder, 'v' .. attempt) then
        local na = holders_add(rec[2], attempt)
        if na ~= rec[2] then
          redis.call('HSET', kOrder, 'a', na)
          rec[2] = na
        end
      end
      return {RESERVED, oid, -1}
    end
    return {ALREADY_PURCHASED, f[1], -1}
  end
  local st, sa
  if ord[kOrder] then
    st, sa = ord[kOrder][1], ord[kOrder][2]
  end
  -- reserve.lua's rule: a VOID record refuses the attempt it names and the
  -- attempts fenced on it ('v' .. attempt).
  if st and not (st == 'VOID' and not holders_has(sa, attempt) and not redis.call('HGET', kOrder, 'v' .. attempt)) then
    return {ID_USED, oid, -1}
  end
  local hv = halt[kHalt]
  if hv == 'PAUSED' then
    return {PAUSED, '', -1}
  elseif hv then
    return {ENDED, '', -1}
  end
  if units == 0 then
    return {SOLD_OUT, '', 0}
  end
  taken[kStock] = (taken[kStock] or 0) + 1
  added[kJournal] = (added[kJournal] or 0) + 1
  local eid = redis.call('XADD', kJournal, '*', 't', 'r', 'o', oid, 'i', item, 'u', user, 'c', created, 'x', expires)
  local deadline = string.format('%.0f', createdN + gttl[g] * 1000)
  local v = buyer_value(oid, item, created, expires, eid, attempt, created, deadline, '')
  held[kBuyers][user] = v
  local bl = buyers[kBuyers]
  if not bl then bl = {}; buyers[kBuyers] = bl end
  bl[#bl + 1] = user
  bl[#bl + 1] = v
  if st then
    -- reserve.lua's retry after a void: the VOID record becomes the
    -- reservation's record, its fences kept.
    local fences = order_fences(kOrder)
    redis.call('DEL', kOrder)
    redis.call('HSET', kOrder, 'user', user, 'item', item, 'status', 'PENDING', 'created', created, 'expires', expires,
      'a', attempt, 'ac', created, 'j', eid, unpack(fences))
    redis.call('PEXPIREAT', kOrder, deadline)
    ord[kOrder] = {'PENDING', attempt}
  end
  return {RESERVED, oid, units - 1}
end

for i = 0, n - 1 do
  out[i + 1] = one(i)
end
for k, t in pairs(taken) do
  redis.call('DECRBY', k, t)
end
for b, bl in pairs(buyers) do
  redis.call('HSET', b, unpack(bl))
end
return out
