-- Ablation (b) of issue 58 (deploy/ablation.sh): reserve_many.lua's keys
-- and arguments, and a reply of its shape at once: every reservation
-- RESERVED with a million units left. No key is read or written: what is
-- left of a call's cost is Redis's and the bridge's around a script.
local G = tonumber(ARGV[1])
local n, r0 = #KEYS - 6 * G, 1 + 7 * G
local out = {}
for i = 0, n - 1 do
  out[i + 1] = {1, ARGV[r0 + 6 * i + 3], 1000000}
end
return out
