-- drop_buyer.lua: remove one buyer record only while it still names the given
-- order; the ops tool's repair of a reservation that neither PostgreSQL nor an
-- order record knows (its unit comes back through the item's drift repair).
--
-- KEYS[1] buyers hash of the shard, KEYS[2] fence of the shard (see reserve.lua)
-- ARGV[1] user id, ARGV[2] order id
--
-- Reply: 1 when dropped, 0 when the record names another order or none (left
-- alone), -1 when the shard is frozen (retry on the sale's new layout).
if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('ERR drop_buyer: want 2 keys and 2 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local user, oid = ARGV[1], ARGV[2]
if user == '' or oid == '' then
  return redis.error_reply('ERR drop_buyer: bad arguments (user, order id)')
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  return -1
end
-- The buyer record names its order first (order.lua: 'oid|...' or a bare id).
local held = redis.call('HGET', KEYS[1], user)
if not held or string.match(held, '^[^|]*') ~= oid then
  return 0
end
return redis.call('HDEL', KEYS[1], user)
