-- room_tick.lua: one tick of a sale's waiting room, run by every gateway
-- about every 100 ms: it records the count of entrants, advances the
-- admission cursor by the time since the last advance (whichever gateway
-- made it) at a rate of remaining units x admit factor per second, and
-- answers the state every gateway serves its polls from until its next
-- tick. The script is atomic, so concurrent ticks never advance twice for
-- the same time; the clock is this server's.
--
-- KEYS[1] the room's state (hash: draw, the entrant count; final, cursor,
-- last), KEYS[2] the
-- room's counter of late arrivals (INCR per arrival)
-- ARGV[1] admission start (unix ms: close of the entries plus a grace),
-- ARGV[2] the entrant count this gateway read (sum of the entrants shards'
-- HLEN, integer >= 0), ARGV[3] 1 when that reading started after the
-- entries closed (the count is final), else 0, ARGV[4] remaining units (integer >= 0; 0
-- holds the cursor, as while sold out or paused), ARGV[5] admit factor
-- (admissions per second per remaining unit, > 0), ARGV[6] expiry of the
-- keys (unix ms)
--
-- Reply: {cursor (whole admitted places), entrant count, final (0/1), late
-- arrivals, server time (unix ms)}. Places 1..count belong to the entrants,
-- count+n to the n-th late arrival. The cursor never passes the last place
-- taken, so an idle room saves no admissions for a later burst, and it moves
-- only once the count is final.
if #KEYS ~= 2 or #ARGV ~= 6 then
  return redis.error_reply('ERR room_tick: want 2 keys and 6 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local admitAt, reading, final, remaining, factor, expire =
  tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local function whole(x) return x and x >= 0 and x == math.floor(x) end
if not whole(admitAt) or not whole(reading) or (final ~= '0' and final ~= '1') or not whole(remaining)
  or not factor or not (factor > 0 and factor <= 1000) or not whole(expire) then
  return redis.error_reply('ERR room_tick: bad arguments (admission ms, entrant count, final 0/1, remaining, factor, expiry ms)')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local st = redis.call('HMGET', KEYS[1], 'draw', 'final', 'cursor', 'last')
local draw, isFinal, cursor, last = tonumber(st[1]) or 0, st[2] == '1', tonumber(st[3]) or 0, tonumber(st[4])
local tail = tonumber(redis.call('GET', KEYS[2]) or '0')
if not isFinal then
  if reading > draw then draw = reading end
  if final == '1' then isFinal = true end
end
if isFinal and now >= admitAt then
  if not last or last < admitAt then last = admitAt end
  -- A tick after a long silence (every gateway down) adds at most a second.
  local dt = math.min(now - last, 1000)
  if dt > 0 and remaining > 0 then
    cursor = math.min(cursor + remaining * factor * dt / 1000, draw + tail)
  end
  last = now
end
redis.call('HSET', KEYS[1], 'draw', draw, 'final', isFinal and '1' or '0', 'cursor', string.format('%.6f', cursor), 'last', last or 0)
redis.call('PEXPIREAT', KEYS[1], expire)
if tail > 0 then redis.call('PEXPIREAT', KEYS[2], expire) end
return {math.floor(cursor), draw, isFinal and 1 or 0, tail, now}
