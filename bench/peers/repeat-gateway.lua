-- wrk script: purchase clicks with bearer tokens read from $TOKENS (one a
-- line). With WARMUP=1 it walks the tokens in order (each user buys once);
-- otherwise it picks users at random (each click is a repeat: 409).
--
-- Every request is formatted once in init: wrk.format per request costs wrk
-- more CPU than the server spends answering (the tokens are long), and wrk
-- shares the two cores with the servers it measures. repeat-peer.lua does
-- the same for the OpenResty peer, so both are driven alike.
-- Usage: TOKENS=file wrk -t1 -c64 -d5s -s repeat-gateway.lua URL -- ITEM
local reqs, n, i = {}, 0, 0
local warm = os.getenv("WARMUP") == "1"
local random = math.random
function init(args)
  local item = args[1] or "1"
  for line in io.lines(os.getenv("TOKENS")) do
    n = n + 1
    reqs[n] = wrk.format("POST", "/api/flash-sales/items/" .. item .. "/purchase",
      {["Authorization"] = "Bearer " .. line, ["Content-Length"] = "0"}, nil)
  end
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
end
function request()
  if warm then i = i % n + 1; return reqs[i] end
  return reqs[random(n)]
end
