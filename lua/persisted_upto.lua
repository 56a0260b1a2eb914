-- persisted_upto.lua: raise a shard's persisted watermarks, after the writer
-- committed a batch: for each item, the highest journal entry id whose event
-- PostgreSQL holds. The writer consumes an item's events in the order the
-- shard's relay produced them, which is journal order, so every entry of the
-- item at or below the watermark is held too. The gateway's GET answers
-- "persisted": true for an order whose reservation entry is at or below its
-- item's watermark: one write per shard and batch instead of one per order.
--
-- KEYS[1] fence of the shard (see reserve.lua)
-- KEYS[2] the shard's watermarks (hash: item id -> entry id)
-- ARGV    item id, entry id, item id, entry id, ...
--
-- Reply: the number of watermarks raised (a lower or equal id leaves its
-- watermark as it is), or -1 when the shard is frozen (a reshard carries
-- the marks it knows into the new shards; the writer marks the new shards
-- from their own journals).
if #KEYS ~= 2 or #ARGV < 2 or #ARGV % 2 ~= 0 then
  return redis.error_reply('ERR persisted_upto: want 2 keys and item, entry id pairs, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  if not ms or #ms > 15 or #seq > 15 then
    return nil
  end
  return tonumber(ms), tonumber(seq)
end
for i = 1, #ARGV, 2 do
  if not string.match(ARGV[i], '^%d+$') or not parse(ARGV[i + 1]) then
    return redis.error_reply('ERR persisted_upto: bad arguments (item id, entry id) at ' .. i)
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return -1
end
local raised = 0
for i = 1, #ARGV, 2 do
  local cur = redis.call('HGET', KEYS[2], ARGV[i])
  local m, s = parse(ARGV[i + 1])
  local cm, cs
  if cur then cm, cs = parse(cur) end
  if not cm or m > cm or (m == cm and s > cs) then
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
    raised = raised + 1
  end
end
return raised
