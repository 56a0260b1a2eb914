-- wrk script: purchase clicks with bearer tokens read from $TOKENS (one a
-- line). With WARMUP=1 it walks the tokens in order (each user buys once);
-- otherwise it picks users at random (each click is a repeat: 409).
--
-- Every request is formatted once in init: wrk.format per request costs wrk
-- more CPU than the server spends answering (the tokens are long), and wrk
-- shares the two cores with the servers it measures. repeat-peer.lua does
-- the same for the OpenResty peer, so both are driven alike.
--
-- The X-Pad header (0-250 bytes, 125 on average) varies the requests' length:
-- LuaJIT interns every string, hashing a long one from its length and a few
-- bytes at fixed offsets, and tokens this alike then collide in one chain.
-- Without it, wrk's init took over a minute for 100,000 tokens of one key
-- and half a second for those of another (2026-12-02); with it, under a
-- second for 150,000 of either. The gateway parses the extra bytes, if
-- anything a cost against it.
-- Usage: TOKENS=file wrk -t1 -c64 -d5s -s repeat-gateway.lua URL -- ITEM
--        (or -- SALE ticket: the sale's ticket, which verifies each token)
local reqs, n, i = {}, 0, 0
local warm = os.getenv("WARMUP") == "1"
local random = math.random
function init(args)
  local path = "/api/flash-sales/items/" .. (args[1] or "1") .. "/purchase"
  if args[2] == "ticket" then path = "/api/flash-sales/sales/" .. args[1] .. "/ticket" end
  for line in io.lines(os.getenv("TOKENS")) do
    n = n + 1
    reqs[n] = wrk.format("POST", path,
      {["Authorization"] = "Bearer " .. line, ["Content-Length"] = "0",
       ["X-Pad"] = string.rep("p", n % 251)}, nil)
  end
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
end
function request()
  if warm then i = i % n + 1; return reqs[i] end
  return reqs[random(n)]
end
