-- cas.lua: compare-and-set of a shard's stock, the only way the ops tool
-- repairs drift: it never blindly overwrites a counter that purchases change.
--
-- KEYS[1] stock key, KEYS[2] fence of the shard
-- ARGV[1] expected value (integer, or '' for a missing key), ARGV[2] new value
-- (non-negative integer)
--
-- Reply: 1 when set, 0 when the value was not the expected one (re-read and
-- retry), -1 when the shard is frozen.
if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('ERR cas: want 2 keys and 2 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local new = tonumber(ARGV[2])
if not new or new < 0 or new ~= math.floor(new) or (ARGV[1] ~= '' and not tonumber(ARGV[1])) then
  return redis.error_reply('ERR cas: bad arguments (expected, new non-negative integer)')
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  return -1
end
local cur = redis.call('GET', KEYS[1]) or ''
if cur ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2])
return 1
