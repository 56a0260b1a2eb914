-- persisted_upto.lua: raise a shard's persisted watermarks after the writer
-- committed a batch, over the runs of each item's chain that PostgreSQL now
-- holds. The relay names, in every record, the entry of the same shard and
-- item produced before it (the item's chain: orderevent.JournalHeader); a
-- run is a stretch of one item's records each naming the one before it, so
-- PostgreSQL holds every entry of the item after the run's prev up to its
-- last. An item's watermark W says PostgreSQL holds every entry of the item
-- up to W; a run whose prev is at or below W extends it to the run's last.
-- A run that does not link (an entry between W and its prev never reached
-- PostgreSQL: a dead letter, records split over partitions, a batch whose
-- marks failed and wait for a retry) raises nothing: the writer marks its
-- orders one by one (persisted.lua), and the run is kept as the item's
-- pending run, which joins the watermark once a later run reaches it (the
-- retried batch). The gateway's GET answers "persisted": true for an order
-- whose reservation entry is at or below its item's watermark: one write per
-- shard and batch instead of one per order, and never over a gap.
--
-- KEYS[1] fence of the shard (see reserve.lua)
-- KEYS[2] the shard's watermarks (hash: item id -> entry id; item id .. '>'
--         -> the item's pending run, "<prev> <last>"; 'since' -> the first
--         entry of a journal a reshard made, below which no watermark of
--         this shard speaks: sharding.AppendPersistedKey)
-- ARGV    item id, prev, last, item id, prev, last, ... (prev '0-0' at the
--         chain's start; prev before last)
--
-- Reply: the 1-based numbers of the runs that did not link (an empty array
-- when all did), or -1 when the shard is frozen (a reshard carries the marks
-- it knows into the new shards; the writer marks the new shards from their
-- own journals).
if #KEYS ~= 2 or #ARGV < 3 or #ARGV % 3 ~= 0 then
  return redis.error_reply('ERR persisted_upto: want 2 keys and item, prev, last triples, got ' .. #KEYS .. ' keys and ' .. #ARGV .. ' args')
end
local function parse(id)
  local ms, seq = string.match(id or '', '^(%d+)-(%d+)$')
  if not ms or #ms > 15 or #seq > 15 then
    return nil
  end
  return tonumber(ms), tonumber(seq)
end
local function le(a, b)
  local am, as = parse(a)
  local bm, bs = parse(b)
  return am < bm or (am == bm and as <= bs)
end
local function maxid(a, b)
  if le(a, b) then return b end
  return a
end
local function minid(a, b)
  if le(a, b) then return a end
  return b
end
for i = 1, #ARGV, 3 do
  if not string.match(ARGV[i], '^%d+$') or not parse(ARGV[i + 1]) or not parse(ARGV[i + 2])
      or le(ARGV[i + 2], ARGV[i + 1]) then
    return redis.error_reply('ERR persisted_upto: bad arguments (item id, prev, last: prev before last) at ' .. i)
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return -1
end
local unlinked = {}
for i = 1, #ARGV, 3 do
  local item, prev, last = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local w = redis.call('HGET', KEYS[2], item)
  if not parse(w) then w = '0-0' end
  local pend = redis.call('HGET', KEYS[2], item .. '>')
  local pp, pl
  if pend then
    pp, pl = string.match(pend, '^(%S+) (%S+)$')
    if not parse(pp) or not parse(pl) then pp, pl = nil, nil end
  end
  if le(prev, w) then
    local nw = maxid(w, last)
    if pp and le(pp, nw) then
      nw = maxid(nw, pl)
      redis.call('HDEL', KEYS[2], item .. '>')
    end
    if nw ~= w then
      redis.call('HSET', KEYS[2], item, nw)
    end
  else
    if pp and le(prev, pl) and le(pp, last) then
      prev, last = minid(pp, prev), maxid(pl, last)
    end
    redis.call('HSET', KEYS[2], item .. '>', prev .. ' ' .. last)
    unlinked[#unlinked + 1] = (i + 2) / 3
  end
end
return unlinked
