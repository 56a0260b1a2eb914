-- wrk script: purchase clicks with bearer tokens read from $TOKENS (one a
-- line). With WARMUP=1 it walks the tokens in order (each user buys once);
-- otherwise it picks users at random (each click is a repeat: 409).
-- Usage: TOKENS=file wrk -t1 -c64 -d5s -s repeat-gateway.lua URL -- ITEM
local item, toks, n, i = "1", {}, 0, 0
local warm = os.getenv("WARMUP") == "1"
function init(args)
  if args[1] then item = args[1] end
  for line in io.lines(os.getenv("TOKENS")) do n = n + 1; toks[n] = "Bearer " .. line end
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
end
function request()
  local k
  if warm then i = i % n + 1; k = i else k = math.random(1, n) end
  return wrk.format("POST", "/api/flash-sales/items/" .. item .. "/purchase",
    {["Authorization"] = toks[k], ["Content-Length"] = "0"}, nil)
end
