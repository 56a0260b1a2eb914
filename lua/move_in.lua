-- move_in.lua: second step of a move: credit the receiver shard once per move id.
--
-- KEYS[1] receiver stock key, KEYS[2] receiver journal hash, KEYS[3] receiver fence
-- ARGV[1] move id, ARGV[2] units (> 0), ARGV[3] 'force' to credit a frozen
-- shard (only the reshard, which finishes moves before it copies, does that)
--
-- Reply: units credited, 0 when this move was credited before, -1 when frozen.
if #KEYS ~= 3 or #ARGV ~= 3 then
  return redis.error_reply('ERR move_in: want 3 keys and 3 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local k = tonumber(ARGV[2])
if ARGV[1] == '' or not k or k < 1 or k ~= math.floor(k) then
  return redis.error_reply('ERR move_in: bad arguments (move id, units, force)')
end
if ARGV[3] ~= 'force' and redis.call('EXISTS', KEYS[3]) == 1 then
  return -1
end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return 0
end
local raw = redis.call('GET', KEYS[1])
local n = raw and tonumber(raw)
if not n or n ~= math.floor(n) or n < 0 then
  return redis.error_reply('ERR move_in: stock key missing or not a non-negative integer: ' .. KEYS[1])
end
redis.call('INCRBY', KEYS[1], k)
redis.call('HSET', KEYS[2], ARGV[1], tostring(k))
return k
