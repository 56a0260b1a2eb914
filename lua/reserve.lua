-- reserve.lua: one purchase click against one stock shard.
--
-- KEYS[1] stock key of the item on this shard (integer units left)
-- KEYS[2] buyers hash of this shard: user id -> order id (the user's home shard)
-- KEYS[3] order record hash of the new order id
-- KEYS[4] fence of the shard: present while the shard is frozen for a reshard
-- ARGV[1] user id, ARGV[2] order id, ARGV[3] item id,
-- ARGV[4] created (unix ms), ARGV[5] expires (unix ms), ARGV[6] order record TTL (s)
--
-- Reply: {code, order id, units left}. code 1 reserved (units left -1 on an
-- idempotent replay of the same order id), 0 sold out on this shard,
-- 2 already purchased (the held order id), 3 order id already used and finished,
-- 4 shard frozen (a reshard moved it: reload the sale and retry on its new layout).
-- Everything is checked before the first write, so an error reply changes nothing.
if #KEYS ~= 4 or #ARGV ~= 6 then
  return redis.error_reply('ERR reserve: want 4 keys and 6 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local user, oid = ARGV[1], ARGV[2]
local ttl = tonumber(ARGV[6])
if user == '' or oid == '' or ARGV[3] == '' or not tonumber(ARGV[4]) or not tonumber(ARGV[5]) or not ttl or ttl <= 0 then
  return redis.error_reply('ERR reserve: bad arguments (user, order id, item, created ms, expires ms, ttl s)')
end
if redis.call('EXISTS', KEYS[4]) == 1 then
  return {4, '', -1}
end
local held = redis.call('HGET', KEYS[2], user)
if held then
  if held == oid then return {1, oid, -1} end
  return {2, held, -1}
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  return {3, oid, -1}
end
local raw = redis.call('GET', KEYS[1])
if not raw then
  return redis.error_reply('ERR reserve: stock key missing: ' .. KEYS[1])
end
local n = tonumber(raw)
if not n or n ~= math.floor(n) or n < 0 then
  return redis.error_reply('ERR reserve: stock is not a non-negative integer: ' .. KEYS[1])
end
if n == 0 then
  return {0, '', 0}
end
redis.call('DECR', KEYS[1])
redis.call('HSET', KEYS[2], user, oid)
redis.call('HSET', KEYS[3], 'user', user, 'item', ARGV[3], 'status', 'PENDING', 'created', ARGV[4], 'expires', ARGV[5])
redis.call('EXPIRE', KEYS[3], ttl)
return {1, oid, n - 1}
