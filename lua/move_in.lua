-- move_in.lua: second step of a move: credit the receiver shard once per move id.
--
-- KEYS[1] receiver stock key, KEYS[2] receiver's marker of this move id,
-- KEYS[3] receiver fence
-- ARGV[1] move id, ARGV[2] units (> 0), ARGV[3] 'force' to credit a frozen
-- shard (only the reshard, which finishes moves before it copies, does that),
-- ARGV[4] marker lifetime (s): longer than any move can stay in flight
--
-- Reply: units credited, 0 when this move was credited before, -1 when frozen.
if #KEYS ~= 3 or #ARGV ~= 4 then
  return redis.error_reply('ERR move_in: want 3 keys and 4 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local k, ttl = tonumber(ARGV[2]), tonumber(ARGV[4])
if ARGV[1] == '' or not k or k < 1 or k ~= math.floor(k) or not ttl or ttl < 1 then
  return redis.error_reply('ERR move_in: bad arguments (move id, units, force, marker ttl s)')
end
if ARGV[3] ~= 'force' and redis.call('EXISTS', KEYS[3]) == 1 then
  return -1
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
local raw = redis.call('GET', KEYS[1])
local n = raw and tonumber(raw)
if not n or n ~= math.floor(n) or n < 0 then
  return redis.error_reply('ERR move_in: stock key missing or not a non-negative integer: ' .. KEYS[1])
end
redis.call('INCRBY', KEYS[1], k)
redis.call('SET', KEYS[2], tostring(k), 'EX', ttl)
return k
