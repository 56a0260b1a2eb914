-- persisted.lua: mark an order record as held by PostgreSQL, after the writer
-- committed the order (the gateway's GET answers "persisted": true from it).
--
-- KEYS[1] order record hash
-- KEYS[2] fence of the shard (see reserve.lua)
--
-- Reply: 1 when marked, 0 when there is no record to mark (gone, or VOID: an
-- attempt undone before its client heard of it), -1 when the shard is frozen
-- (a reshard moves the record; the writer marks it again later). The record's
-- lifetime is left as it is, and a missing record is not recreated: the mark
-- only tells what PostgreSQL holds, it is never the order itself.
if #KEYS ~= 2 or #ARGV ~= 0 then
  return redis.error_reply('ERR persisted: want 2 keys and no args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  return -1
end
local st = redis.call('HGET', KEYS[1], 'status')
if not st or st == 'VOID' then
  return 0
end
redis.call('HSET', KEYS[1], 'p', '1')
return 1
