-- room_join.lua: a user enters the draw of a sale's waiting room or raffle
-- (the pre-queue and the first moments of a queue's sale, or a raffle's
-- registration window). The gateway draws the entrant's nonce (16 bytes
-- from crypto/rand, in hex); the first nonce stays: asking again answers
-- the stored one, so a user enters once, and keeps the entry after the
-- close. The nonce is the user's secret half of their leaf (package draw):
-- the place comes from the verifiable draw once the entrants are frozen.
--
-- KEYS[1] the draw shard of the user (a hash: user -> nonce)
-- ARGV[1] user id (decimal, > 0), ARGV[2] nonce (32 lower-case hex digits),
-- ARGV[3] close of the entries (unix ms), ARGV[4] expiry of the key (unix ms)
--
-- Reply: {1, nonce} (entered now or before; nonce is the stored one), or
-- {0} when this server's clock says the entries closed and the user is not
-- among them.
if #KEYS ~= 1 or #ARGV ~= 4 then
  return redis.error_reply('ERR room_join: want 1 key and 4 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local close, expire = tonumber(ARGV[3]), tonumber(ARGV[4])
if not string.match(ARGV[1], '^[1-9]%d*$') or #ARGV[1] > 20 or #ARGV[2] ~= 32 or not string.match(ARGV[2], '^[0-9a-f]+$')
  or not close or close < 0 or not expire or expire <= close then
  return redis.error_reply('ERR room_join: bad arguments (user id, nonce of 32 hex digits, close ms, expiry ms after close)')
end
local had = redis.call('HGET', KEYS[1], ARGV[1])
if had then
  return {1, had}
end
local t = redis.call('TIME')
if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) >= close then
  return {0}
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
return {1, ARGV[2]}
