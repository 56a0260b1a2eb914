-- room_freeze.lua: freeze the entrants of a sale's draw, then reveal its
-- seed (SPEC "Fair access": commit, then reveal). Every gateway calls it
-- from its tick once the entries have closed, with the Merkle root and the
-- count it computed from the frozen entrants (package draw); the first call
-- records them, the others get them back and compare. The seed, written by
-- `flashctl sale create` (its SHA-256 is the sale's published commitment),
-- is copied into the state, where the draw is served from, only a reveal
-- delay after the root was recorded: the root is public before the seed.
--
-- KEYS[1] the room's state (hash), KEYS[2] the sale's secret seed
-- ARGV[1] root (64 hex), ARGV[2] entrant count (integer >= 0), ARGV[3] a
-- seed (64 hex) used only when the sale has none (a sale created without a
-- commitment: its draw is then not verifiable against one), ARGV[4] reveal
-- delay (ms), ARGV[5] expiry of the keys (unix ms), ARGV[6] the earliest
-- freeze (unix ms: the close plus a margin), ARGV[7] the signature of the
-- sale's beacon round (96 hex), verified by the caller, or '' when it has
-- none yet, ARGV[8] '1' when the sale's draw is sealed by a beacon round
-- (its seed is revealed only once a round's signature is recorded), else '0'
--
-- The first signature recorded stands: a gateway reads it back and verifies
-- it itself before using it.
--
-- Reply: {root, count, frozen at (unix ms), seed or '' before the reveal,
-- committed (1: the seed is the one written at creation, 0: drawn here),
-- the beacon's signature or ''},
-- or {'early'} when nothing is recorded yet and this server's clock is
-- before the earliest freeze: room_join.lua closes the entries by the
-- clocks of Redis, so a gateway whose clock runs ahead must not freeze a
-- reading it took before they closed.
if #KEYS ~= 2 or #ARGV ~= 8 then
  return redis.error_reply('ERR room_freeze: want 2 keys and 8 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local function hex64(s) return #s == 64 and string.match(s, '^[0-9a-f]+$') ~= nil end
local count, delay, expire, earliest = tonumber(ARGV[2]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
if not hex64(ARGV[1]) or not string.match(ARGV[2], '^%d+$') or not hex64(ARGV[3])
  or not delay or delay < 0 or not expire or expire < 0 or not earliest or earliest < 0
  or (ARGV[7] ~= '' and (#ARGV[7] ~= 96 or not string.match(ARGV[7], '^[0-9a-f]+$'))) or (ARGV[8] ~= '0' and ARGV[8] ~= '1') then
  return redis.error_reply('ERR room_freeze: bad arguments (root hex, count, seed hex, reveal delay ms, expiry ms, earliest ms, beacon signature hex or empty, sealed 0 or 1)')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local st = redis.call('HMGET', KEYS[1], 'root', 'count', 'frozen', 'seed', 'committed', 'beacon')
if not st[1] and now < earliest then
  return {'early'}
end
if not st[1] then
  st = {ARGV[1], ARGV[2], tostring(now), false, false, false}
  redis.call('HSET', KEYS[1], 'root', st[1], 'count', st[2], 'frozen', st[3])
end
local sig = st[6]
if not sig and ARGV[7] ~= '' then
  sig = ARGV[7]
  redis.call('HSET', KEYS[1], 'beacon', sig)
end
local seed, committed = st[4], st[5]
if not seed and now >= tonumber(st[3]) + delay and (ARGV[8] == '0' or sig) then
  seed, committed = redis.call('GET', KEYS[2]), '1'
  if not seed then
    seed, committed = ARGV[3], '0'
    redis.call('SET', KEYS[2], seed)
  end
  redis.call('HSET', KEYS[1], 'seed', seed, 'committed', committed)
end
redis.call('PEXPIREAT', KEYS[1], expire)
redis.call('PEXPIREAT', KEYS[2], expire)
return {st[1], st[2], st[3], seed or '', committed or '0', sig or ''}
