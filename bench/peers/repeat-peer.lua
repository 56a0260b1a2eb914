-- wrk script: purchase clicks from users 1..$USERS of the OpenResty peer, all
-- of whom already bought (bench/peers.sh preloads them): every click runs
-- the peer's reserve script and answers "already purchased".
-- Requests are formatted once in init, as in repeat-gateway.lua.
-- Usage: USERS=N wrk -t1 -c64 -d5s -s repeat-peer.lua URL -- ITEM
local reqs, n = {}, 1
local random = math.random
function init(args)
  local item = args[1] or "1"
  n = tonumber(os.getenv("USERS"))
  for u = 1, n do
    reqs[u] = wrk.format("POST", "/api/flash-sales/items/" .. item .. "/purchase",
      {["X-User-Id"] = tostring(u), ["Content-Length"] = "0"}, nil)
  end
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
end
function request()
  return reqs[random(n)]
end
