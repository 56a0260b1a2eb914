-- Ablation (c) of issue 58 (deploy/ablation.sh): reserve_many.lua's
-- redis.calls for new buyers (the load the ablation sends: every buyer
-- new, every order id new, one group), with no validation and no string
-- building: the reads once per call, a journal entry per reservation, the
-- stock decrement and the buyer records once at the end. The buyer record
-- holds the bare order id (no lazy order), the journal entry the same
-- fields as today's.
local G = tonumber(ARGV[1])
local n, r0 = #KEYS - 6 * G, 1 + 7 * G
redis.call('EXISTS', KEYS[3])
redis.call('XLEN', KEYS[4])
redis.call('GET', KEYS[6])
redis.call('GET', KEYS[1])
local users, orders = {}, {}
for i = 0, n - 1 do
  users[#users + 1] = ARGV[r0 + 6 * i + 2]
  orders[#orders + 1] = KEYS[6 * G + i + 1]
end
redis.call('HMGET', KEYS[2], unpack(users))
redis.call('EXISTS', unpack(orders))
local out, bl = {}, {}
for i = 0, n - 1 do
  local r = r0 + 6 * i
  redis.call('XADD', KEYS[4], '*', 't', 'r', 'o', ARGV[r + 3], 'i', ARGV[2], 'u', ARGV[r + 2], 'c', ARGV[r + 4], 'x', ARGV[r + 5])
  bl[#bl + 1] = ARGV[r + 2]
  bl[#bl + 1] = ARGV[r + 3]
  out[i + 1] = {1, ARGV[r + 3], 1000000}
end
redis.call('DECRBY', KEYS[1], n)
redis.call('HSET', KEYS[2], unpack(bl))
return out
