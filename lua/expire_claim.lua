-- expire_claim.lua: the writer's claim, before it expires an unpaid order, that
-- the order may be expired; from then on act.lua refuses to pay or cancel it.
--
-- KEYS[1] order record, KEYS[2] fence of the shard, KEYS[3] buyers hash of the
-- shard (the order's record is opened from it: order.lua)
-- ARGV[1] user id, ARGV[2] order id
--
-- Reply: 1 claimed (or claimed before, or no record: nothing can accept a pay
-- for it), 0 not due by this server's clock (the clock act.lua reads), 2 a pay
-- was accepted (never expire it: the pay event is on its way), 3 a cancel was
-- accepted (its event returns the unit), -1 frozen (retry later).
if #KEYS ~= 3 or #ARGV ~= 2 then
  return redis.error_reply('ERR expire_claim: want 3 keys and 2 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
if ARGV[1] == '' or ARGV[2] == '' then
  return redis.error_reply('ERR expire_claim: bad arguments (user, order id)')
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  return -1
end
order_open(KEYS[1], KEYS[3], ARGV[1], ARGV[2])
local r = redis.call('HMGET', KEYS[1], 'expires', 'q', 'status')
if r[3] == false then
  return 1
end
if r[2] == 'exp' then
  return 1
elseif r[2] == 'pay' then
  return 2
elseif r[2] == 'cancel' then
  return 3
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = tonumber(r[1])
if exp and now < exp then
  return 0
end
redis.call('HSET', KEYS[1], 'q', 'exp')
return 1
