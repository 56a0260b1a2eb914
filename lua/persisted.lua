-- persisted.lua: mark orders as held by PostgreSQL, after the writer
-- committed them (the gateway's GET answers "persisted": true from it). One
-- call marks every order of one batch that lives on one shard.
--
-- KEYS[1]     fence of the shard (see reserve.lua)
-- KEYS[2]     buyers hash of the shard
-- KEYS[3..n]  order record hashes, on the same shard
-- ARGV[i]     the user id of the order of KEYS[i + 2]
--
-- An order with a record is marked there ('p'); one held lazily by its buyer
-- record (order.lua) is marked in the buyer record, without opening a record.
--
-- Reply: for each order in turn, 1 when marked, 0 when there is nothing to
-- mark (gone, or VOID: an attempt undone before its client heard of it); or
-- -1 alone, nothing marked, when the shard is frozen (a reshard moves the
-- records; the writer marks them again later). A record's lifetime is left as
-- it is, and a missing record is not recreated: the mark only tells what
-- PostgreSQL holds, it is never the order itself.
if #KEYS < 3 or #ARGV ~= #KEYS - 2 then
  return redis.error_reply('ERR persisted: want the fence, the buyers, at least one order key and a user per order, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
for i = 1, #ARGV do
  if ARGV[i] == '' then
    return redis.error_reply('ERR persisted: bad arguments (a user id per order)')
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return -1
end
local out = {}
for i = 3, #KEYS do
  local st = redis.call('HGET', KEYS[i], 'status')
  if st then
    if st == 'VOID' then
      out[i - 2] = 0
    else
      redis.call('HSET', KEYS[i], 'p', '1')
      out[i - 2] = 1
    end
  else
    local user = ARGV[i - 2]
    local v = redis.call('HGET', KEYS[2], user)
    local f = v and buyer_fields(v)
    if f and #f == 9 and f[1] == key_oid(KEYS[i]) then
      if f[9] ~= '1' then
        redis.call('HSET', KEYS[2], user, buyer_value(f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], '1'))
      end
      out[i - 2] = 1
    else
      out[i - 2] = 0
    end
  end
end
return out
