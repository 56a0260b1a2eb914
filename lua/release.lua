-- release.lua: give one reserved unit back, at most once per order.
--
-- KEYS[1] stock key of the item on the buyer's home shard
-- KEYS[2] buyers hash of that shard
-- KEYS[3] order record hash
-- KEYS[4] fence of the shard (see reserve.lua)
-- ARGV[1] user id, ARGV[2] order id,
-- ARGV[3] final status to record (EXPIRED, CANCELLED, FAILED), or '-' to delete
--         the order record (a hand-off that never reached the client)
--
-- Reply: 1 when the unit went back, 0 when the order no longer held it (a second
-- release, or an order the user replaced), -1 when the shard is frozen (retry
-- on the sale's new layout). The guard is the buyers entry: only the
-- release that removes user -> order id returns the unit.
if #KEYS ~= 4 or #ARGV ~= 3 then
  return redis.error_reply('ERR release: want 4 keys and 3 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local user, oid, st = ARGV[1], ARGV[2], ARGV[3]
if user == '' or oid == '' or st == '' then
  return redis.error_reply('ERR release: bad arguments (user, order id, status)')
end
if redis.call('EXISTS', KEYS[4]) == 1 then
  return -1
end
local held = redis.call('HGET', KEYS[2], user)
if not held or buyer_oid(held) ~= oid then
  return 0
end
local raw = redis.call('GET', KEYS[1])
local n = raw and tonumber(raw)
if not n or n ~= math.floor(n) or n < 0 then
  return redis.error_reply('ERR release: stock key missing or not a non-negative integer: ' .. KEYS[1])
end
order_open(KEYS[3], KEYS[2], user, oid)
redis.call('HDEL', KEYS[2], user)
redis.call('INCR', KEYS[1])
if st == '-' then
  redis.call('DEL', KEYS[3])
elseif redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('HSET', KEYS[3], 'status', st)
end
return 1
