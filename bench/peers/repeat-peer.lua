-- wrk script: purchase clicks from users 1..$USERS of the OpenResty peer, all
-- of whom already bought (bench/peers.sh preloads them): every click is one
-- EVALSHA answering "already purchased".
-- Usage: USERS=N wrk -t1 -c64 -d5s -s repeat-peer.lua URL -- ITEM
local item, n = "1", 1
function init(args)
  if args[1] then item = args[1] end
  n = tonumber(os.getenv("USERS"))
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
end
function request()
  return wrk.format("POST", "/api/flash-sales/items/" .. item .. "/purchase",
    {["X-User-Id"] = tostring(math.random(1, n)), ["Content-Length"] = "0"}, nil)
end
