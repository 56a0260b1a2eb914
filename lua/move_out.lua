-- move_out.lua: first step of moving units of an item from a donor shard to a
-- receiver shard (both of one sale). Journals the move on the donor, in the
-- same slot, so a crash between the steps is finished by replaying the journal.
--
-- KEYS[1] donor stock key, KEYS[2] donor journal hash, KEYS[3] donor fence
-- ARGV[1] move id (unique), ARGV[2] units wanted (> 0), ARGV[3] receiver tag,
-- ARGV[4] item id
--
-- Reply: units taken (0..wanted; 0 writes nothing), the recorded amount on a
-- replay of the same move id, or -1 when the donor is frozen.
-- Journal value: "<units>|<receiver tag>|<item>"; removed once the receiver is credited.
if #KEYS ~= 3 or #ARGV ~= 4 then
  return redis.error_reply('ERR move_out: want 3 keys and 4 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local want = tonumber(ARGV[2])
if ARGV[1] == '' or not want or want < 1 or want ~= math.floor(want) or ARGV[3] == '' or not tonumber(ARGV[4]) then
  return redis.error_reply('ERR move_out: bad arguments (move id, units, receiver tag, item)')
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  return -1
end
local rec = redis.call('HGET', KEYS[2], ARGV[1])
if rec then
  return tonumber(string.match(rec, '^(%d+)|'))
end
local raw = redis.call('GET', KEYS[1])
local n = raw and tonumber(raw)
if not n or n ~= math.floor(n) or n < 0 then
  return redis.error_reply('ERR move_out: stock key missing or not a non-negative integer: ' .. KEYS[1])
end
local k = math.min(n, want)
if k == 0 then
  return 0
end
redis.call('DECRBY', KEYS[1], k)
redis.call('HSET', KEYS[2], ARGV[1], k .. '|' .. ARGV[3] .. "|" .. ARGV[4])
return k
