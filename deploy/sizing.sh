#!/usr/bin/env bash
# sizing.sh: the per-path figures behind the runbook's sizing (deploy/README.md),
# measured on this machine against the local stack: for each gateway path, the
# gateway's CPU time per request (so requests per core = 1e6 / µs), and for the
# Redis paths the Redis CPU per script call (so calls per master core).
#
# CPU is read from /proc (gateway) and INFO cpu (all six Redis nodes) around a
# wrk run of each path, so the figures do not depend on how the two cores are
# shared with wrk. Needs `make build` and `make up`; installs wrk and bc when
# missing (as root; need_debian, shared with bench/peers.sh).
#
# Redis CPU is counted over all six nodes (replication and AOF included) less
# their idle CPU.
#
# For reservations it also prints what the masters replicate per 202 (the
# commands the replicas run, from INFO commandstats, and the bytes of
# replication stream, from master_repl_offset: deterministic, low-noise) and
# the reservations per reserve script call (the gateway's metrics).
#
# Usage: deploy/sizing.sh [SECONDS]   (default 5 per path; GATEWAY=path measures another
# gateway binary, e.g. a build of an older commit, against the same stack;
# RES_CONNS=n the reservation crowd's connections, default 256)
set -euo pipefail
DUR=${1:-5}
cd "$(dirname "$0")/.."
source .run/env
source bench/peers/cpu.sh # redis_cpu, node_cpu, replicas, masters, repl_bytes, repl_cmds, reserve_calls, open_sales_warning, need_debian
need_debian sizing "wrk bc" wrk bc
open_sales_warning
RUN=.run/sizing
rm -rf "$RUN" && mkdir -p "$RUN"
PEERS=${PEERS:-$(cd ../shared/peers 2>/dev/null && pwd || echo /work/shared/peers)}
secret=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
base=$(( ( $(date +%s) % 1000000 ) * 1000 + RANDOM % 1000 ))
starts=$(date -u -d '-1 second' +%Y-%m-%dT%H:%M:%SZ); ends=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
for s in 1 2 3; do # 1: sold out, 2: repeat clicks, 3: fresh reservations
  q=1; [ $s != 1 ] && q=10000000
  echo "{\"id\": $((base + s)), \"name\": \"sizing $s\", \"startsAt\": \"$starts\", \"endsAt\": \"$ends\",
    \"items\": [{\"id\": $(( (base + s) * 10 + 1 )), \"name\": \"x\", \"price\": 1, \"currency\": \"JPY\", \"quantity\": $q}]}" >"$RUN/sale$s.json"
  # The reservations' sale has flashctl's default shard count (one per
  # master, as bench-peers' accepted rows): a batch then joins every purchase
  # a master gets into one script call. RES_SHARDS=n for another.
  n=(--shards 8); [ $s = 3 ] && n=(${RES_SHARDS:+--shards $RES_SHARDS})
  bin/flashctl sale create --file "$RUN/sale$s.json" "${n[@]}" >/dev/null
done
sold=$(( (base + 1) * 10 + 1 )); repeat=$(( (base + 2) * 10 + 1 )); fresh=$(( (base + 3) * 10 + 1 ))
bin/bench -tokens-out "$RUN/tokens.txt" -users 20000 -jwt-secret "$secret" 2>/dev/null

gw=""
start_gateway() {
  [ -n "$gw" ] && { kill "$gw"; wait "$gw" 2>/dev/null || true; }
  ${GATEWAY:-bin/gateway} -listen 127.0.0.1:18190 -admin 127.0.0.1:18192 -jwt-secret "$secret" -user-rate 1e9 -user-burst 1000000000 \
    -max-conns-per-ip 0 "$@" >>"$RUN/gateway.log" 2>&1 &
  gw=$!
  for _ in $(seq 100); do curl -fsS -o /dev/null http://127.0.0.1:18192/readyz 2>/dev/null && break; sleep 0.1; done
  sleep 1.2 # the catalog loads sales every second
}
trap '[ -n "$gw" ] && kill "$gw" 2>/dev/null || true' EXIT
ticks() { awk '{print $14 + $15}' "/proc/$gw/stat"; }
hz=$(getconf CLK_TCK)
# redis_parts N CALLS: where the nodes' CPU per 202 went during the
# reservation row (N 202s, CALLS reserve script calls): on the masters, the
# scripts (EVALSHA with the commands they run: the reserve calls, and the
# fence beats and relay rounds beside them) and all the rest (commands sent
# on their own, such as the relay's XRANGE and WAIT, the event loop, reading
# and writing sockets, TLS to the replicas, the AOF); on the replicas,
# applying what the masters replicate (EXEC with the commands in it) and the
# rest (reading the TLS stream, the AOF). From INFO commandstats and INFO cpu.
redis_parts() {
  local n=$1 calls=$2
  paste "$RUN/node-cpu0.txt" "$RUN/node-cpu1.txt" | awk '{print $2, $6 - $3}' >"$RUN/node-cpu.txt"
  awk -v n="$n" -v calls="$calls" '
    FNR == NR {cpu[$1] += $2 * 1e6; next}
    /^(master|slave) cmdstat_(evalsha|eval|exec):/ {
      split($2, a, ":"); split(a[2], f, "[=,]")
      if ($1 == "master" && a[1] != "cmdstat_exec") { script += f[4]; evals += f[2] }
      if ($1 == "slave" && a[1] == "cmdstat_exec") apply += f[4]
    }
    END {
      printf "%-24s Redis CPU per 202: masters %.1f µs (in scripts %.1f, the rest %.1f), replicas %.1f µs (applying %.1f, the rest %.1f); %d script calls, %d of them reserve calls\n", "",
        cpu["master"] / n, script / n, (cpu["master"] - script) / n, cpu["slave"] / n, apply / n, (cpu["slave"] - apply) / n, evals, calls
    }' "$RUN/node-cpu.txt" "$RUN/commandstats.txt"
}
# Redis spends CPU when idle too (cluster bus gossip, cron); subtract it.
r0=$(redis_cpu); sleep "$DUR"; idle=$(echo "$(redis_cpu) - $r0" | bc -l)
measure() { # name, redis? (1/0), connections, wrk args...
  local name=$1 redis=$2 conns=$3; shift 3
  local t0 r0 out n t1 r1
  t0=$(ticks); r0=$(redis_cpu)
  out=$(wrk -t1 -c"$conns" -d${DUR}s "$@")
  t1=$(ticks); r1=$(redis_cpu)
  n=$(echo "$out" | awk '/requests in/ {print $1}')
  local us; us=$(echo "($t1 - $t0) * 1000000 / $hz / $n" | bc -l)
  local rus; rus=$(echo "($r1 - $r0 - $idle) * 1000000 / $n" | bc -l)
  printf '%-24s %9.0f req/s  gateway %6.1f µs/req = %7.0f req/s per core' "$name" "$(echo "$out" | awk '/Requests\/sec/ {print $2}')" "$us" "$(echo "1000000 / $us" | bc -l)"
  if [ "$redis" = 1 ]; then printf '   Redis %5.1f µs/call = %7.0f calls/s per master core' "$rus" "$(echo "1000000 / $rus" | bc -l)"; fi
  echo
  echo "$name $us $rus" >>"$RUN/figures.txt"
  echo "$out" >"$RUN/wrk-${name%% *}.txt"
}

start_gateway -ip-rate 1e9 -ip-burst 1000000000
tok=$(head -1 "$RUN/tokens.txt")
curl -s -o /dev/null -X POST -H "Authorization: Bearer $tok" "http://127.0.0.1:18190/api/flash-sales/items/$sold/purchase"
curl -s -o /dev/null -X POST -H "Authorization: Bearer $(sed -n 2p "$RUN/tokens.txt")" "http://127.0.0.1:18190/api/flash-sales/items/$sold/purchase"
TOKENS=$RUN/tokens.txt WARMUP=1 wrk -t1 -c64 -d3s -s bench/peers/repeat-gateway.lua http://127.0.0.1:18190 -- $repeat >/dev/null
TOKENS=$RUN/tokens.txt wrk -t1 -c64 -d1s -s bench/peers/repeat-gateway.lua http://127.0.0.1:18190 -- $repeat >/dev/null
echo "path                         rate        gateway CPU per request               Redis CPU per call"
measure "sold-out (410)" 0 64 -s "$PEERS/wrk-purchase.lua" http://127.0.0.1:18190 -- $sold
measure "unauthorized (401)" 0 64 -s "$PEERS/wrk-purchase.lua" http://127.0.0.1:18190 -- $repeat
TOKENS=$RUN/tokens.txt measure "already purchased (409)" 1 64 -s bench/peers/repeat-gateway.lua http://127.0.0.1:18190 -- $repeat
# Reservations: fresh users from the bench (wrk's Lua cannot feed 10^5 distinct
# tokens fast enough), one click each in a closed loop; the count is of 202s.
bin/bench -url http://127.0.0.1:18190 -items $fresh -scenario steady -users 1000000 -user-base 4000000 -c 256 \
  -duration 2s -jwt-secret "$secret" -quiet -out "$RUN/bench-warm" >/dev/null 2>&1 # warms the Kafka producer
for p in 7001 7002 7003 7004 7005 7006; do redis-cli -p $p config resetstat >/dev/null; done
node_cpu >"$RUN/node-cpu0.txt"
t0=$(ticks); r0=$(redis_cpu); c0=$(repl_cmds $(replicas)); b0=$(repl_bytes); read -r k0 v0 <<<"$(reserve_calls 127.0.0.1:18192)"
bin/bench -url http://127.0.0.1:18190 -items $fresh -scenario steady -users 1000000 -c "${RES_CONNS:-256}" -idempotency-keys=false \
  -duration ${DUR}s -jwt-secret "$secret" -quiet -out "$RUN/bench-res" >"$RUN/bench-res.txt" 2>&1
t1=$(ticks); r1=$(redis_cpu); c1=$(repl_cmds $(replicas)); b1=$(repl_bytes); read -r k1 v1 <<<"$(reserve_calls 127.0.0.1:18192)"
node_cpu >"$RUN/node-cpu1.txt"
for p in 7001 7002 7003 7004 7005 7006; do redis-cli -p $p info commandstats | tr -d '\r' | sed "s/^/$(redis-cli -p $p role | head -1) /"; done >"$RUN/commandstats.txt"
n=$(awk '$1 == "purchase" && $2 == "202" {gsub(",", "", $3); print $3}' "$RUN/bench-res.txt")
all=$(awk '/^elapsed/ {for (i=1;i<=NF;i++) if ($i=="responses") {gsub(",","",$(i+1)); print $(i+1)}}' "$RUN/bench-res.txt")
us=$(echo "($t1 - $t0) * 1000000 / $hz / $all" | bc -l); rus=$(echo "($r1 - $r0 - $idle) * 1000000 / $all" | bc -l)
printf '%-24s %9.0f req/s  gateway %6.1f µs/req = %7.0f req/s per core   Redis %5.1f µs/call = %7.0f calls/s per master core  (%s of %s were 202)\n' \
  "reservation (202)" "$(echo "$all / $DUR" | bc -l)" "$us" "$(echo "1000000 / $us" | bc -l)" "$rus" "$(echo "1000000 / $rus" | bc -l)" "$n" "$all"
echo "reservation $us $rus" >>"$RUN/figures.txt"
printf '%-24s replicated per 202: %.2f commands, %.0f bytes; %.2f reservations per script call (%s connections)\n' "" \
  "$(echo "($c1 - $c0) / $n" | bc -l)" "$(echo "($b1 - $b0) / $n" | bc -l)" "$(echo "($v1 - $v0) / ($k1 - $k0)" | bc -l)" "${RES_CONNS:-256}"
echo "reservation-replication $(echo "($c1 - $c0) / $n" | bc -l) $(echo "($b1 - $b0) / $n" | bc -l) $(echo "($v1 - $v0) / ($k1 - $k0)" | bc -l)" >>"$RUN/figures.txt"
redis_parts "$n" "$((k1 - k0))"
start_gateway -ip-rate 1 -ip-burst 1
measure "rate-limited (429)" 0 64 -s "$PEERS/wrk-purchase.lua" http://127.0.0.1:18190 -- $repeat
# The 409 path again with every repeat click running the reserve script
# (-repeat-read=false): the cost of a script call that refuses.
start_gateway -ip-rate 1e9 -ip-burst 1000000000 -repeat-read=false
TOKENS=$RUN/tokens.txt wrk -t1 -c64 -d2s -s bench/peers/repeat-gateway.lua http://127.0.0.1:18190 -- $repeat >/dev/null
TOKENS=$RUN/tokens.txt measure "409 by script" 1 64 -s bench/peers/repeat-gateway.lua http://127.0.0.1:18190 -- $repeat
echo "figures in $RUN/figures.txt (name, gateway µs/req, Redis µs/call)"
