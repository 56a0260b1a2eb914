-- draw_log.lua: append one entry to a sale's draw log (package draw's Log),
-- compare-and-append on its sequence number: every gateway that sees a step
-- of the draw done tries to log it, and only the first is appended. The
-- entry's hash chains it to the one before; Redis cannot compute SHA-256,
-- so every reader checks the chain (draw.CheckLog), and this script checks
-- only that the entry names the last one's hash as its previous.
--
-- KEYS[1] the log (a list of "<hash hex> <body>")
-- ARGV[1] the entry's sequence number (0 for the first), ARGV[2] the hash
-- of the entry before (64 hex; 64 zeros for the first), ARGV[3] the entry
-- ("<hash hex> <body>"), ARGV[4] expiry of the log (unix ms)
--
-- Reply: {1, length} when appended, {0, length} when the log holds another
-- entry at that number (or a previous hash other than ARGV[2]).
if #KEYS ~= 1 or #ARGV ~= 4 then
  return redis.error_reply('ERR draw_log: want 1 key and 4 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local seq, expire = tonumber(ARGV[1]), tonumber(ARGV[4])
if not string.match(ARGV[1], '^%d+$') or not string.match(ARGV[2], '^[0-9a-f]+$') or #ARGV[2] ~= 64
  or not string.match(ARGV[3], '^[0-9a-f]+ {') or string.sub(ARGV[3], 65, 65) ~= ' ' or not expire or expire < 0 then
  return redis.error_reply('ERR draw_log: bad arguments (seq, previous hash hex, "<hash> <json body>", expiry ms)')
end
local n = redis.call('LLEN', KEYS[1])
if n ~= seq then
  return {0, n}
end
if n > 0 then
  local last = redis.call('LINDEX', KEYS[1], -1)
  if string.sub(last, 1, 64) ~= ARGV[2] then
    return {0, n}
  end
elseif ARGV[2] ~= string.rep('0', 64) then
  return {0, n}
end
n = redis.call('RPUSH', KEYS[1], ARGV[3])
local at = redis.call('PEXPIRETIME', KEYS[1])
if at < 0 or at < expire then
  redis.call('PEXPIREAT', KEYS[1], expire) -- the log's expiry only grows
end
return {1, n}
