#!/usr/bin/env bash
# peers.sh (make bench-peers): the gateway against the peers in ../shared/peers,
# side by side in one run on this machine, A/B alternated, medians and ratios.
#
#   sold-out path:          gateway vs the bare fasthttp "limit" server and vs
#                           the OpenResty peer's shared-dict sold-out flag
#   accepted path:          every click a new buyer: the gateway (token cache
#                           hit, reserve script with its journal entry, WAIT
#                           for a replica; its relay produces the journal to
#                           Kafka meanwhile, on the same cores) vs the OpenResty
#                           peer's reserve script (no journal, no Kafka); under
#                           each accepted row, each process group's share of
#                           the two cores while it ran (bench/peers/cpu.sh)
#                           and its cost per 202 (front and Redis CPU,
#                           replicated commands, reservations per script
#                           call), with their medians at the end;
#                           and the same against the peer doing the hand-off's
#                           Redis work (bench/peers/openresty-journal: its
#                           script also writes the order record and journals
#                           the event, then WAIT 1 on a master with a replica
#                           and the AOF; it still relays nothing to Kafka)
#   already-purchased path: gateway (token cache hit + one Redis round trip:
#                           the buyer record of a buyer it answered before)
#                           vs the OpenResty peer (its reserve script, no JWT);
#                           also the gateway with -repeat-read=false, which
#                           runs the reserve script like the peer does
#
# Every target gets the same wrk (-t1 -c64, same duration) on the same two
# cores, and the wrk scripts format their requests once, in init (see
# bench/peers/repeat-gateway.lua). The gateway runs with its rate limits
# lifted (the peer's limit_req allows 1,000,000 r/s) against the local Redis
# Cluster; the peer against a standalone redis-server of its own on 16379.
# Both Go servers (gateway and limit) run with GOMAXPROCS=$GO_PROCS (default
# 1: on two cores shared with wrk and Redis, one P measured faster for both);
# nginx keeps the peer's own worker_processes 2.
#
# Usage: bench/peers.sh [ROUNDS] [SECONDS]   (defaults: 3 rounds of 5s)
# GATEWAY=path runs that gateway binary instead of bin/gateway (an A/B of two builds).
set -euo pipefail
ROUNDS=${1:-3}
DUR=${2:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PEERS=${PEERS:-$(cd "$ROOT/../shared/peers" 2>/dev/null && pwd || echo /work/shared/peers)}
RUN=$ROOT/.run/peers
USERS=20000
# Each round buys in a sale of its own, and a row that used up its users
# answers repeat clicks 409, cheaper than a purchase: the ratio is then
# refused (see the end). 50,000 ran out on a quiet machine (2026-12-02: the
# gateway at 22,000/s, a quarter of its 3 s row answered 409); wrk formats
# 150,000 tokens in under half a second.
ACCEPT_USERS=${ACCEPT_USERS:-150000}
# The peer's buyers carry a short X-User-Id, cheap to format, and the peer ran
# out of 50,000 within its 3 s row on a quiet machine (2026-12-02: 20,000/s,
# about 10,000 of its clicks answered 409): it gets three times as many.
PEER_USERS=${PEER_USERS:-$((ACCEPT_USERS * 3))}
GO_PROCS=${GO_PROCS:-1}
# The accepted rows' sales have flashctl's default shard count, one per
# master (ACCEPT_SHARDS=N for another): a reservation batch then joins every
# purchase a master gets into one script call. With 8 shards on 3 masters
# the row measured 0.49-0.64 of the peer against 0.57-0.86 with 3
# (2026-12-02, alternated, four runs each way; medians 0.58 and 0.82).
ACCEPT_SHARDS=${ACCEPT_SHARDS:-}
rm -rf "$RUN" && mkdir -p "$RUN"
source .run/env
source bench/peers/cpu.sh # the CPU split, the per-202 figures' helpers
open_sales_warning # before this run's own sales
# The peers' tools come from Debian's packages; install what is missing.
need_debian peers "wrk nginx-light libnginx-mod-http-lua lua-nginx-redis redis-server bc" \
  wrk nginx redis-server bc /usr/lib/nginx/modules/ngx_http_lua_module.so

# A run stopped before its cleanup leaves its servers on these ports, and a new
# run would then measure them instead of the binaries it starts (their own
# start fails on the taken port): stop them first.
for port in 16379 16380 16381 18070 18081 18083 18090 18092 18094 18096; do
  for pid in $(ss -Hltnp "sport = :$port" 2>/dev/null | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u); do
    echo "peers: stopping $(ps -o comm= -p "$pid") (pid $pid), left on port $port by an earlier run" >&2
    kill "$pid" 2>/dev/null || true
  done
done
for _ in $(seq 50); do
  ss -Hltn 2>/dev/null | grep -qE ':(16379|16380|16381|18070|18081|18083|18090|18092|18094|18096) ' || break
  sleep 0.1
done

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$RUN/openresty/nginx.pid" ] && kill "$(cat "$RUN/openresty/nginx.pid")" 2>/dev/null || true
  [ -f "$RUN/openresty-journal/nginx.pid" ] && kill "$(cat "$RUN/openresty-journal/nginx.pid")" 2>/dev/null || true
  for p in 16379 16381 16380; do redis-cli -p $p shutdown nosave >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

# The limit peer has its own go.mod: build it in a copy, the shared tree stays read-only.
cp -r "$PEERS/limit" "$RUN/limit-src"
(cd "$RUN/limit-src" && { go build -o "$RUN/limit" . 2>/dev/null || { go mod tidy >/dev/null 2>&1 && go build -o "$RUN/limit" .; }; })
GOMAXPROCS=$GO_PROCS "$RUN/limit" -addr 127.0.0.1:18070 >"$RUN/limit.log" 2>&1 &
pids+=($!)

redis-server --port 16379 --bind 127.0.0.1 --save "" --appendonly no --daemonize yes --dir "$RUN" --logfile "$RUN/redis.log" >/dev/null
PEERDIR=$RUN/openresty PEER_REDIS_PORT=16379 sh "$PEERS/openresty/run.sh"
# The journaled peer (the accepted rows): a master with one replica, with the
# stack's persistence (bench/peers/openresty-journal/nginx.conf says what it does).
for p in 16380 16381; do
  mkdir -p "$RUN/redis-$p"
  redis-server --port $p --bind 127.0.0.1 --save "" --appendonly yes --appendfsync everysec --daemonize yes \
    --dir "$RUN/redis-$p" --logfile "$RUN/redis-$p/redis.log" $([ $p = 16381 ] && echo --replicaof 127.0.0.1 16380) >/dev/null
done
mkdir -p "$RUN/openresty-journal"
sed "s#PEERDIR#$RUN/openresty-journal#g" bench/peers/openresty-journal/nginx.conf >"$RUN/openresty-journal/nginx.conf"
PEER_REDIS_PORT=16380 nginx -c "$RUN/openresty-journal/nginx.conf" -p "$RUN/openresty-journal" -g "env PEER_REDIS_PORT;"
# The peer's buyers: users 1..USERS hold an order, and there is stock to spare,
# so every repeat click runs the script and answers -2 (409).
redis-cli -p 16379 set '{item:1}:stock' 1000000 >/dev/null
seq 1 $USERS | awk '{print "SADD {item:1}:buyers " $1}' | redis-cli -p 16379 >/dev/null

# The gateway: two sales, one sold out (1 unit, bought), one with plenty left.
secret=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
base=$(( ( $(date +%s) % 1000000 ) * 1000 + RANDOM % 1000 ))
starts=$(date -u -d '-1 second' +%Y-%m-%dT%H:%M:%SZ); ends=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
# Sales 3.. are the accepted path's, one per round (and one to warm the token
# cache): every user may buy once per sale.
for s in $(seq 1 $((ROUNDS + 3))); do
  q=1; [ $s = 2 ] && q=1000000; [ $s -ge 3 ] && q=3000000
  echo "{\"id\": $((base + s)), \"name\": \"peers $s\", \"startsAt\": \"$starts\", \"endsAt\": \"$ends\",
    \"items\": [{\"id\": $(( (base + s) * 10 + 1 )), \"name\": \"x\", \"price\": 1, \"currency\": \"JPY\", \"quantity\": $q}]}" >"$RUN/sale$s.json"
  n=(--shards 8); [ $s -ge 3 ] && n=(${ACCEPT_SHARDS:+--shards $ACCEPT_SHARDS})
  bin/flashctl sale create --file "$RUN/sale$s.json" "${n[@]}" >/dev/null
done
soldItem=$(( (base + 1) * 10 + 1 )); repeatItem=$(( (base + 2) * 10 + 1 ))
bin/bench -tokens-out "$RUN/tokens.txt" -users $USERS -jwt-secret "$secret" 2>/dev/null
bin/bench -tokens-out "$RUN/accept-tokens.txt" -users $ACCEPT_USERS -jwt-secret "$secret" 2>/dev/null
acceptItem() { echo $(( (base + 3 + $1) * 10 + 1 )); } # round 0 warms up
# The gateways relay to a topic of their own, which no writer reads: on the
# stack's order topic, the tens of thousands of orders an accepted row makes
# would be left for the next writer (make demo's) to persist while its sale
# runs (seen 2026-12-02: the demo's writer persisted 30,000-50,000 orders of
# each earlier accepted row; right after one bench-peers run, it and PostgreSQL
# took 60-70 % of a core in the demo's first seconds, and the sale sold out in
# 1.46 s; right after several runs, in 2.36 s). The broker creates the topic on
# first use.
gw() { # listen port, admin port, then extra flags
  local port=$1 admin=$2; shift 2
  GOMAXPROCS=$GO_PROCS ${GATEWAY:-bin/gateway} -listen 127.0.0.1:$port -admin 127.0.0.1:$admin -topic flash-sale-orders-peers \
    -jwt-secret "$secret" -ip-rate 1e9 -ip-burst 1000000000 \
    -user-rate 1e9 -user-burst 1000000000 -max-conns-per-ip 0 "$@" >"$RUN/gateway-$port.log" 2>&1 &
  pids+=($!)
}
# GW_FLAGS: extra gateway flags, for experiments (the figures quoted in the
# README run without any).
gw 18090 18092 ${GW_FLAGS:-}
gwpid=${pids[-1]}
gw 18094 18096 -repeat-read=false ${GW_FLAGS:-}
gwpid2=${pids[-1]}
for a in 18092 18096; do for _ in $(seq 100); do curl -fsS -o /dev/null http://127.0.0.1:$a/readyz 2>/dev/null && break; sleep 0.2; done; done
for p in 18090 18094; do for _ in $(seq 50); do curl -fsS -o /dev/null "http://127.0.0.1:$p/api/flash-sales/sales/$((base + 2))" 2>/dev/null && break; sleep 0.2; done; done
tok1=$(sed -n 1p "$RUN/tokens.txt"); tok2=$(sed -n 2p "$RUN/tokens.txt")
buy() { curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $1" "http://127.0.0.1:18090/api/flash-sales/items/$2/purchase"; }
echo "setup: sold-out item: $(buy "$tok1" $soldItem) then $(buy "$tok2" $soldItem) $(buy "$tok2" $soldItem)"
TOKENS=$RUN/tokens.txt WARMUP=1 wrk -t1 -c64 -d3s -s bench/peers/repeat-gateway.lua http://127.0.0.1:18090 -- $repeatItem >/dev/null
TOKENS=$RUN/tokens.txt WARMUP=1 wrk -t1 -c64 -d2s -s bench/peers/repeat-gateway.lua http://127.0.0.1:18094 -- $repeatItem >/dev/null
# The warm-up walk was seen (2026-12-01) to leave the first user without an
# order (both warm-ups, users 2-300 bought): one click buys it, so that the
# check below reads a repeat click.
buy "$tok1" $repeatItem >/dev/null
echo "setup: repeat item: a click now answers $(buy "$tok1" $repeatItem) (want 409); gateways run with GOMAXPROCS=$GO_PROCS"
curl -s -o /dev/null -X POST -H 'X-User-Id: 1' http://127.0.0.1:18081/api/flash-sales/items/2/purchase # sets the peer's sold-out flag for item 2
redis-cli -p 16379 set '{item:3}:stock' 100000000 >/dev/null
redis-cli -p 16380 set '{item:3}:stock' 100000000 >/dev/null
# The replica's first full copy waits 5 s (repl-diskless-sync-delay); until it
# has one, WAIT would time out on every purchase of the journaled peer.
for _ in $(seq 100); do
  redis-cli -p 16381 info replication | tr -d '\r' | grep -qx master_link_status:up && break
  sleep 0.2
done
redis-cli -p 16381 info replication | tr -d '\r' | grep -qx master_link_status:up ||
  { echo "peers: the journaled peer's replica (16381) never synchronised" >&2; exit 1; }
# Warm the gateway's token cache for the accepted path: every buyer fetches
# the sale's ticket first, as a browser does before it buys (a walk over all
# the tokens, which verifies each), then a short purchase warm-up in a sale of
# its own. A cold token costs the gateway its signature check and claims.
TOKENS=$RUN/accept-tokens.txt WARMUP=1 wrk -t1 -c64 -d8s -s bench/peers/repeat-gateway.lua http://127.0.0.1:18090 -- "$((base + 3))" ticket >"$RUN/ticket-warmup.txt"
TOKENS=$RUN/accept-tokens.txt WARMUP=1 wrk -t1 -c64 -d2s -s bench/peers/repeat-gateway.lua http://127.0.0.1:18090 -- "$(acceptItem 0)" >/dev/null

# Who uses the CPU during the accepted rows (bench/peers/cpu.sh): the gateway
# measured, the second gateway (idle, but its relay shares the journals), the
# cluster's nodes, the broker, and the peer's nginx workers and Redis. No
# writer runs: the relayed events stay in Kafka.
cpu_watch gateway "$gwpid"
cpu_watch gateway-2 "$gwpid2"
cpu_redis_nodes $(echo "$FLASHSALE_REDIS" | tr , '\n' | cut -d: -f2)
cpu_watch broker $(pgrep -f kafka.Kafka) $(pgrep -x kfake)
cpu_watch nginx $(pgrep -f 'nginx: worker process')
pidof_redis() { redis-cli -p "$1" info server | tr -d '\r' | awk -F: '$1 == "process_id" {print $2}'; }
cpu_watch peer-redis $(pidof_redis 16379) $(pidof_redis 16380) $(pidof_redis 16381)

# SPEC's per-resource figures of the accepted rows: what the masters
# replicate (over the whole row, deterministic) and the reservations each
# reserve script call carried (the gateway's metrics; the peer's script takes
# one purchase per call). The helpers are cpu.sh's.
CLUSTER_REPLICAS=$(for p in $(echo "$FLASHSALE_REDIS" | tr , '\n' | cut -d: -f2); do
  [ "$(redis-cli -p "$p" role | head -1)" = slave ] && echo "$p"; done | paste -sd' ')
# per202 NAME WRK-OUTPUT CMDS0 CALLS0 RESERVATIONS0: an accepted row's cost
# per 202: its front's and its Redis's CPU (over cpu_during's window), the
# replicated commands and the reservations per script call (over the row).
per202() {
  local name=$1 out=$2 c0=$3 k0=$4 v0=$5 n r c1 k1 v1 front redis per label
  n=$(echo "$out" | awk '/requests in/ {print $1}'); r=$(echo "$out" | rate)
  if [ "$name" = gateway-accept ]; then
    c1=$(repl_cmds $CLUSTER_REPLICAS); read -r k1 v1 <<<"$(reserve_calls 127.0.0.1:18092)"; label="gateways"
    front=$(cpu_per "$RUN/$name.cpu" "$r" gateway gateway-2); redis=$(cpu_per "$RUN/$name.cpu" "$r" redis-masters redis-replicas)
    per=$(awk -v c=$((k1 - k0)) -v v=$((v1 - v0)) 'BEGIN {if (c > 0) printf "%.2f", v / c; else printf "nan"}')
  else
    c1=$(repl_cmds 16381); label="nginx"
    front=$(cpu_per "$RUN/$name.cpu" "$r" nginx); redis=$(cpu_per "$RUN/$name.cpu" "$r" peer-redis); per=1.00
  fi
  local cmds; cmds=$(awk -v c=$((c1 - c0)) -v n="$n" 'BEGIN {if (n > 0) printf "%.2f", c / n; else printf "nan"}')
  printf '    per 202: %s %s µs of CPU, Redis %s µs (all its nodes), %s replicated commands, %s reservations per script call\n' \
    "$label" "$front" "$redis" "$cmds" "$per"
  echo "$front $redis $cmds $per" >>"$RUN/$name.per"
}
rate() { awk '/Requests\/sec/ {print $2}'; }
codes() { awk '/Non-2xx/ {print $NF}'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
run() { # name, then the wrk arguments (ADUR: the accepted rows' duration)
  local name=$1 d=$DUR; shift
  case $name in *accept*) d=${ADUR:-3} ;; esac
  local cpu=""
  case $name in # the CPU split of the accepted rows, over all but their last second
    gateway-accept) cpu_during 18090 $((d - 1)) >"$RUN/$name.cpu" & cpu=$!
      # PPROF=1: the measured gateway's CPU profile over the same window.
      [ -n "${PPROF:-}" ] && (wrk_ready 18090 && curl -s -o "$RUN/$name.$(date +%s).pprof" \
        "http://127.0.0.1:18092/debug/pprof/profile?seconds=$((d - 1))") & ;;
    openresty-accept) cpu_during 18081 $((d - 1)) >"$RUN/$name.cpu" & cpu=$! ;;
    openresty-journal-accept) cpu_during 18083 $((d - 1)) >"$RUN/$name.cpu" & cpu=$! ;;
  esac
  local c0="" k0=0 v0=0
  case $name in
    gateway-accept) c0=$(repl_cmds $CLUSTER_REPLICAS); read -r k0 v0 <<<"$(reserve_calls 127.0.0.1:18092)" ;;
    openresty-journal-accept) c0=$(repl_cmds 16381) ;;
  esac
  local out; out=$(wrk -t1 -c64 -d${d}s --latency "$@")
  echo "$out" | rate >>"$RUN/$name.txt"
  echo "$out" | codes >>"$RUN/$name.codes"
  printf '  %-22s %10.0f req/s  p99 %s\n' "$name" "$(echo "$out" | rate)" "$(echo "$out" | awk '/ 99%/ {print $2}')"
  if [[ -n $cpu ]]; then wait "$cpu" || true; grep -v '^#' "$RUN/$name.cpu"; fi
  if [[ -n $c0 ]]; then per202 "$name" "$out" "$c0" "$k0" "$v0"; fi
}
for r in $(seq "$ROUNDS"); do
  echo "round $r"
  if [ "${ONLY:-}" = accept ]; then
    TOKENS=$RUN/accept-tokens.txt WARMUP=1 run gateway-accept -s bench/peers/repeat-gateway.lua http://127.0.0.1:18090 -- "$(acceptItem "$r")"
    BASE=$((r * 10000000)) USERS=$PEER_USERS run openresty-accept -s bench/peers/accept-peer.lua http://127.0.0.1:18081 -- 3
    BASE=$((r * 10000000)) USERS=$PEER_USERS run openresty-journal-accept -s bench/peers/accept-peer.lua http://127.0.0.1:18083 -- 3
    continue
  fi
  run gateway-soldout -s "$PEERS/wrk-purchase.lua" http://127.0.0.1:18090 -- $soldItem
  run limit -s "$PEERS/wrk-purchase.lua" http://127.0.0.1:18070 -- 1
  run openresty-soldout -s "$PEERS/wrk-purchase.lua" http://127.0.0.1:18081 -- 2
  TOKENS=$RUN/tokens.txt run gateway-repeat -s bench/peers/repeat-gateway.lua http://127.0.0.1:18090 -- $repeatItem
  USERS=$USERS run openresty-repeat -s bench/peers/repeat-peer.lua http://127.0.0.1:18081 -- 1
  TOKENS=$RUN/tokens.txt run gateway-repeat-script -s bench/peers/repeat-gateway.lua http://127.0.0.1:18094 -- $repeatItem
  TOKENS=$RUN/accept-tokens.txt WARMUP=1 run gateway-accept -s bench/peers/repeat-gateway.lua http://127.0.0.1:18090 -- "$(acceptItem "$r")"
  BASE=$((r * 10000000)) USERS=$PEER_USERS run openresty-accept -s bench/peers/accept-peer.lua http://127.0.0.1:18081 -- 3
  BASE=$((r * 10000000)) USERS=$PEER_USERS run openresty-journal-accept -s bench/peers/accept-peer.lua http://127.0.0.1:18083 -- 3
done
# Check that each target answered what it was meant to.
printf 'answers: gateway sold-out %s, limit %s, openresty sold-out %s, gateway repeat %s, openresty repeat %s\n' \
  "$(curl -s -X POST "http://127.0.0.1:18090/api/flash-sales/items/$soldItem/purchase")" \
  "$(curl -s -X POST http://127.0.0.1:18070/api/flash-sales/items/1/purchase)" \
  "$(curl -s -X POST -H 'X-User-Id: 5' http://127.0.0.1:18081/api/flash-sales/items/2/purchase | tr -d '\n')" \
  "$(curl -s -X POST -H "Authorization: Bearer $tok2" "http://127.0.0.1:18090/api/flash-sales/items/$repeatItem/purchase" | sed 's/"orderId":"[^"]*"/"orderId":"…"/')" \
  "$(curl -s -X POST -H 'X-User-Id: 5' http://127.0.0.1:18081/api/flash-sales/items/1/purchase | tr -d '\n')"

m() { median <"$RUN/$1.txt"; }
# ratio A B LABEL [NOTE]: the medians' ratio of rows A and B, when both ran
# (ONLY=accept runs the accepted rows alone).
ratio() {
  [ -s "$RUN/$1.txt" ] && [ -s "$RUN/$2.txt" ] || return 0
  printf '%-52s %.3f%s\n' "$3" "$(echo "$(m "$1") / $(m "$2")" | bc -l)" "${4:+  ($4)}"
}
echo
printf 'medians of %d rounds (req/s):' "$ROUNDS"
for row in gateway-soldout limit openresty-soldout gateway-repeat gateway-repeat-script openresty-repeat gateway-accept openresty-accept openresty-journal-accept; do
  if [ -s "$RUN/$row.txt" ]; then printf ' %s %.0f' "$row" "$(m "$row")"; fi
done
echo
ratio gateway-soldout limit 'ratio sold-out path, gateway / limit:' 'target >= 0.95'
ratio gateway-soldout openresty-soldout 'ratio sold-out path, gateway / openresty:'
ratio gateway-repeat openresty-repeat 'ratio already-purchased path, gateway / openresty:' 'target >= 2.5'
ratio gateway-repeat-script openresty-repeat '  the same with the reserve script (-repeat-read=false):'
ratio gateway-accept openresty-accept 'ratio accepted path (new buyers), gateway / openresty:' \
  'target >= 1.0, at least level: the gateway journals, waits for a replica and relays to Kafka, the peer does none of it'
ratio gateway-accept openresty-journal-accept '  the same against the peer doing the hand-off'"'"'s Redis work:' \
  'target >= 1.5, far ahead: its script journals, writes the order record, WAIT 1; no JWT, no Kafka'
# The per-resource medians of the accepted rows, side by side.
for row in gateway-accept openresty-journal-accept; do
  [ -s "$RUN/$row.per" ] || continue
  col() { awk -v k="$1" '{print $k}' "$RUN/$row.per" | median; }
  printf '%-52s front %.1f µs, Redis %.1f µs, %.2f replicated commands, %.2f reservations per call\n' \
    "per 202, medians, $row:" "$(col 1)" "$(col 2)" "$(col 3)" "$(col 4)"
done
[ -s "$RUN/gateway-accept.per" ] && printf '%-52s gateway <= 35 µs, Redis <= 30 µs, <= 2.5 replicated commands, >= 8 reservations per call\n' \
  'targets per 202 (SPEC "Performance"):'
# Every accepted click must have been a 202 (a 409 would mean the tokens ran out).
for f in "$RUN"/gateway-accept.codes "$RUN"/openresty-accept.codes "$RUN"/openresty-journal-accept.codes; do
  [ -f "$f" ] || continue
  if [ -z "$(tr -d '[:space:]' <"$f")" ]; then
    printf '%s: every answer a 2xx\n' "$(basename "$f" .codes)"
  else
    printf '%s: non-2xx answers %s\n' "$(basename "$f" .codes)" "$(paste -sd, "$f")"
    echo "NOT VALID: $(basename "$f" .codes) answered non-2xx (its buyers ran out: raise ACCEPT_USERS, now $ACCEPT_USERS); the accepted ratio above does not count" >&2
    bad=1
  fi
done
exit "${bad:-0}"
