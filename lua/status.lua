-- status.lua: record an order's status after the writer committed it.
--
-- KEYS[1] order record hash
-- KEYS[2] fence of the shard (see reserve.lua)
-- KEYS[3] buyers hash of the shard (an order held there lazily is opened first: order.lua)
-- ARGV[1] status (PENDING, PAID, EXPIRED, CANCELLED, FAILED), ARGV[2] record TTL (s)
-- ARGV[3..6] user, item, created ms, expires ms (used only when the record is missing,
--            for example after a failover lost it; '' leaves them out)
--
-- Reply: 1 when written, 0 when left alone, -1 when the shard is frozen. A final status is never overwritten by PENDING, so a
-- late replay of the reservation cannot undo a payment or an expiry.
if #KEYS ~= 3 or #ARGV ~= 6 then
  return redis.error_reply('ERR status: want 3 keys and 6 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local st = ARGV[1]
local ttl = tonumber(ARGV[2])
if not (st == 'PENDING' or st == 'PAID' or st == 'EXPIRED' or st == 'CANCELLED' or st == 'FAILED') or not ttl or ttl <= 0 then
  return redis.error_reply('ERR status: bad arguments (status, ttl s, user, item, created ms, expires ms)')
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  return -1
end
if ARGV[3] ~= '' then
  order_open(KEYS[1], KEYS[3], ARGV[3], key_oid(KEYS[1]))
end
local cur = redis.call('HGET', KEYS[1], 'status')
if cur and cur ~= 'PENDING' and st == 'PENDING' then
  return 0
end
if not cur then
  if ARGV[3] == '' then
    return 0
  end
  redis.call('HSET', KEYS[1], 'user', ARGV[3], 'item', ARGV[4], 'created', ARGV[5], 'expires', ARGV[6])
end
redis.call('HSET', KEYS[1], 'status', st)
redis.call('EXPIRE', KEYS[1], ttl)
return 1
