-- wrk script: purchase clicks of new buyers of the OpenResty peer: users
-- BASE+1 .. BASE+USERS in order, one click each, so every click runs the
-- peer's reserve script and takes a unit (202). Requests are formatted once
-- in init, as in repeat-gateway.lua.
-- Usage: BASE=N USERS=N wrk -t1 -c64 -d5s -s accept-peer.lua URL -- ITEM
local reqs, n, i = {}, 0, 0
function init(args)
  local item = args[1] or "1"
  local base = tonumber(os.getenv("BASE") or "0")
  n = tonumber(os.getenv("USERS"))
  for u = 1, n do
    reqs[u] = wrk.format("POST", "/api/flash-sales/items/" .. item .. "/purchase",
      {["X-User-Id"] = tostring(base + u), ["Content-Length"] = "0"}, nil)
  end
end
function request()
  i = i % n + 1
  return reqs[i]
end
