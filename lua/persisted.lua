-- persisted.lua: mark order records as held by PostgreSQL, after the writer
-- committed their orders (the gateway's GET answers "persisted": true from
-- it). One call marks every order of one batch that lives on one shard.
--
-- KEYS[1]     fence of the shard (see reserve.lua)
-- KEYS[2..n]  order record hashes, on the same shard
--
-- Reply: for each order record in turn, 1 when marked, 0 when there is no
-- record to mark (gone, or VOID: an attempt undone before its client heard of
-- it); or -1 alone, nothing marked, when the shard is frozen (a reshard moves
-- the records; the writer marks them again later). A record's lifetime is
-- left as it is, and a missing record is not recreated: the mark only tells
-- what PostgreSQL holds, it is never the order itself.
if #KEYS < 2 or #ARGV ~= 0 then
  return redis.error_reply('ERR persisted: want the fence and at least one order key and no args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return -1
end
local out = {}
for i = 2, #KEYS do
  local st = redis.call('HGET', KEYS[i], 'status')
  if not st or st == 'VOID' then
    out[i - 1] = 0
  else
    redis.call('HSET', KEYS[i], 'p', '1')
    out[i - 1] = 1
  end
end
return out
