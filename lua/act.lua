-- act.lua: journal an owner's pay or cancel request for an order, on the
-- order's home shard, after checking it against the order record in the same
-- atomic step. The request's mark on the record ('q') decides every race that
-- follows: a pay accepted here is never expired (expire_claim.lua refuses to
-- expire a record marked 'pay'), a cancel and a pay exclude each other, and
-- an order the writer has claimed for expiry ('exp') takes neither.
--
-- KEYS[1] order record, KEYS[2] fence of the shard, KEYS[3] journal stream,
-- KEYS[4] buyers hash of the shard (the order's record is opened from it: order.lua)
-- ARGV[1] 'pay' or 'cancel', ARGV[2] user id, ARGV[3] order id, ARGV[4] sale id,
-- ARGV[5] journal bound (entries), ARGV[6] request time (unix ms, the gateway's),
-- ARGV[7] attempt id (unique per request: void_act.lua names the attempt it undoes)
--
-- The record keeps, beside the mark, the request's entry id ('qj') and the
-- attempts that were told about it ('qa', comma-separated): the one that
-- journaled it, and each later one answered AGAIN. A gateway that could not
-- give an attempt its answer voids it (void_act.lua) before answering 503;
-- the entry goes only when no attempt that may have been told 202 is left.
-- A voided attempt is fenced ('v' .. attempt): when its script runs late it
-- changes nothing and answers VOIDED.
--
-- The deadline is read from this server's clock (TIME), the same clock
-- expire_claim.lua reads, so the gateway's and the writer's clocks cannot
-- disagree about it.
--
-- Reply (a status string): OK (journaled), AGAIN (this request was already
-- accepted), NOTFOUND (no such order of this user), PAID, CANCELLED, EXPIRED,
-- FAILED (the order is past that state), FULL (journal full, nothing written),
-- FROZEN (reshard: retry on the new layout), VOIDED (this attempt was voided
-- before it ran: nothing written).
if #KEYS ~= 4 or #ARGV ~= 7 then
  return redis.error_reply('ERR act: want 4 keys and 7 args, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local act, user, bound, attempt = ARGV[1], ARGV[2], tonumber(ARGV[5]), ARGV[7]
if (act ~= 'pay' and act ~= 'cancel') or user == '' or ARGV[3] == '' or not tonumber(ARGV[4])
    or not bound or bound < 1 or not tonumber(ARGV[6]) or not string.match(attempt, '^%d+$') then
  return redis.error_reply('ERR act: bad arguments (pay|cancel, user, order id, sale, bound, at ms, attempt)')
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  return 'FROZEN'
end
order_open(KEYS[1], KEYS[4], user, ARGV[3])
local r = redis.call('HMGET', KEYS[1], 'user', 'item', 'status', 'created', 'expires', 'q', 'qa', 'v' .. attempt)
if r[8] then
  return 'VOIDED'
end
if r[1] ~= user or r[3] == false or r[3] == 'VOID' then
  return 'NOTFOUND'
end
local st, q = r[3], r[6]
if st ~= 'PENDING' then
  return st
end
if q == 'exp' then
  return 'EXPIRED'
elseif q == act then
  -- Told AGAIN, which the gateway answers 202: this attempt too now holds
  -- the entry (a void of the one that journaled it leaves it then).
  local qa = r[7] or ''
  if qa ~= '*' and not string.find(',' .. qa .. ',', ',' .. attempt .. ',', 1, true) then
    -- Past 16 holders the entry is held for good: no void removes it.
    local _, commas = string.gsub(qa, ',', '')
    redis.call('HSET', KEYS[1], 'qa', (qa == '' or commas >= 15) and '*' or (qa .. ',' .. attempt))
  end
  return 'AGAIN'
elseif q == 'pay' then
  return 'PAID'
elseif q == 'cancel' then
  return 'CANCELLED'
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = tonumber(r[5])
if not exp or now >= exp then
  return 'EXPIRED'
end
if redis.call('XLEN', KEYS[3]) >= bound then
  return 'FULL'
end
local eid = redis.call('XADD', KEYS[3], '*', 't', act, 'o', ARGV[3], 's', ARGV[4], 'i', r[2], 'u', user,
  'c', r[4], 'x', r[5], 'at', ARGV[6])
redis.call('HSET', KEYS[1], 'q', act, 'qa', attempt, 'qj', eid)
return 'OK'
