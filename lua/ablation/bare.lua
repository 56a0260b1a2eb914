-- Ablation (c) of issue 58 (deploy/ablation.sh): reserve_many.lua's
-- redis.calls for new buyers (the load the ablation sends: every buyer
-- new, every order id new), with no validation and no string building:
-- the reads once per distinct key, a journal entry per reservation, the
-- stock decrement and the buyer records once per key at the end. The
-- buyer record holds the bare order id (no lazy order), the journal entry
-- the same fields as today's.
local NK, NA = 7, 12
local n = #KEYS / NK
local seen, users, orders = {}, {}, {}
for i = 0, n - 1 do
  local k = i * NK
  if not seen[KEYS[k + 4]] then
    seen[KEYS[k + 4]] = true
    redis.call('EXISTS', KEYS[k + 4])
    redis.call('XLEN', KEYS[k + 5])
    redis.call('GET', KEYS[k + 7])
    redis.call('GET', KEYS[k + 1])
  end
  users[#users + 1] = ARGV[i * NA + 1]
  orders[#orders + 1] = KEYS[k + 3]
end
redis.call('HMGET', KEYS[2], unpack(users))
redis.call('EXISTS', unpack(orders))
local out, bl = {}, {}
for i = 0, n - 1 do
  local k, a = i * NK, i * NA
  redis.call('XADD', KEYS[k + 5], '*', 't', 'r', 'o', ARGV[a + 2], 'i', ARGV[a + 3], 'u', ARGV[a + 1], 'c', ARGV[a + 4], 'x', ARGV[a + 5])
  bl[#bl + 1] = ARGV[a + 1]
  bl[#bl + 1] = ARGV[a + 2]
  out[i + 1] = {1, ARGV[a + 2], 1000000}
end
redis.call('DECRBY', KEYS[1], n)
redis.call('HSET', KEYS[2], unpack(bl))
return out
