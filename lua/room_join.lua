-- room_join.lua: a user joins the random draw of a sale's waiting room (the
-- pre-queue and the first moments of the sale). The gateway draws the
-- user's place (a uniform integer from crypto/rand); the first draw stays:
-- asking again answers the stored one, so a user cannot draw twice.
--
-- KEYS[1] the draw shard of the user (a sorted set: user -> draw)
-- ARGV[1] user id (decimal, > 0), ARGV[2] draw (integer in [0, 2^52)),
-- ARGV[3] close of the draw (unix ms), ARGV[4] expiry of the key (unix ms)
--
-- Reply: {1, draw} (joined now or before; draw is the stored one), or {0}
-- when this server's clock says the draw closed and the user is not in it
-- (the gateway then puts the user at the end).
if #KEYS ~= 1 or #ARGV ~= 4 then
  return redis.error_reply('ERR room_join: want 1 key and 4 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local draw, close, expire = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if not string.match(ARGV[1], '^[1-9]%d*$') or not string.match(ARGV[2], '^%d+$')
  or not draw or draw >= 4503599627370496 or not close or close < 0 or not expire or expire <= close then
  return redis.error_reply('ERR room_join: bad arguments (user id, draw < 2^52, close ms, expiry ms after close)')
end
local had = redis.call('ZSCORE', KEYS[1], ARGV[1])
if had then
  return {1, had}
end
local t = redis.call('TIME')
if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) >= close then
  return {0}
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
return {1, ARGV[2]}
