#!/usr/bin/env bash
# same-redis.sh: the gateway and the journaled OpenResty peer
# (bench/peers/openresty-journal) on the same Redis: a one-master cluster
# with one replica, AOF fsync every second, on ports 16380-16381. Both do the
# hand-off's Redis work per purchase (unit, buyer record, order record,
# journal entry, WAIT 1); the gateway also checks a JWT, batches its scripts
# and relays the journal to Kafka (the stack's broker, a topic no writer
# reads). Rounds alternate the two; each prints purchases per second (wrk
# -t1 -c64, every click a new buyer) and the CPU per purchase of the master,
# the replica and the edge (gateway or nginx's workers), from /proc.
#
# The stack must be up (make up; the gateway's relay needs the broker) and
# built (make build); wrk and nginx come with make bench-peers.
# Usage: bash bench/peers/same-redis.sh [ROUNDS] [SECONDS]   (defaults 3, 4)
set -euo pipefail
ROUNDS=${1:-3}
DUR=${2:-4}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
RUN=$ROOT/.run/same-redis
source .run/env
for t in wrk nginx redis-server bc; do
  command -v $t >/dev/null || { echo "same-redis: $t missing: run make bench-peers once first" >&2; exit 1; }
done
pids=()
stop() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$RUN/ng/nginx.pid" ] && kill "$(cat "$RUN/ng/nginx.pid")" 2>/dev/null || true
  for p in 16381 16380; do redis-cli -p $p shutdown nosave >/dev/null 2>&1 || true; done
}
stop
trap stop EXIT
rm -rf "$RUN" && mkdir -p "$RUN/16380" "$RUN/16381" "$RUN/ng"
for p in 16380 16381; do
  redis-server --port $p --bind 127.0.0.1 --save "" --appendonly yes --appendfsync everysec --daemonize yes \
    --cluster-enabled yes --dir "$RUN/$p" --logfile "$RUN/$p/redis.log" >/dev/null
done
for _ in $(seq 50); do redis-cli -p 16381 ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli -p 16380 cluster addslotsrange 0 16383 >/dev/null
redis-cli -p 16381 cluster meet 127.0.0.1 16380 >/dev/null
master=$(redis-cli -p 16380 cluster myid)
for _ in $(seq 100); do redis-cli -p 16381 cluster replicate "$master" 2>/dev/null | grep -q OK && break; sleep 0.2; done
for _ in $(seq 100); do
  redis-cli -p 16381 info replication | tr -d '\r' | grep -qx master_link_status:up && break
  sleep 0.2
done

export FLASHSALE_REDIS=127.0.0.1:16380
secret=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
base=$(( ( $(date +%s) % 1000000 ) * 1000 + RANDOM % 1000 ))
starts=$(date -u -d '-1 second' +%Y-%m-%dT%H:%M:%SZ); ends=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
for s in $(seq 1 $((ROUNDS + 1))); do
  echo "{\"id\": $((base + s)), \"name\": \"same-redis $s\", \"startsAt\": \"$starts\", \"endsAt\": \"$ends\",
    \"items\": [{\"id\": $(( (base + s) * 10 + 1 )), \"name\": \"x\", \"price\": 1, \"currency\": \"JPY\", \"quantity\": 3000000}]}" >"$RUN/sale$s.json"
  bin/flashctl sale create --file "$RUN/sale$s.json" >/dev/null
done
bin/bench -tokens-out "$RUN/tokens.txt" -users 150000 -jwt-secret "$secret" 2>/dev/null
GOMAXPROCS=${GO_PROCS:-1} bin/gateway -listen 127.0.0.1:18090 -admin 127.0.0.1:18092 -topic flash-sale-orders-peers \
  -jwt-secret "$secret" -ip-rate 1e9 -ip-burst 1000000000 -user-rate 1e9 -user-burst 1000000000 -max-conns-per-ip 0 \
  >"$RUN/gateway.log" 2>&1 &
gw=$!
pids+=($gw)
for _ in $(seq 100); do curl -fsS -o /dev/null http://127.0.0.1:18092/readyz 2>/dev/null && break; sleep 0.2; done
sed "s#PEERDIR#$RUN/ng#g" bench/peers/openresty-journal/nginx.conf >"$RUN/ng/nginx.conf"
PEER_REDIS_PORT=16380 nginx -c "$RUN/ng/nginx.conf" -p "$RUN/ng" -g "env PEER_REDIS_PORT;"
redis-cli -p 16380 set '{item:3}:stock' 100000000 >/dev/null
# As in bench/peers.sh: every token verified once (the sale's ticket), then a
# short purchase warm-up in the first sale.
TOKENS=$RUN/tokens.txt WARMUP=1 wrk -t1 -c64 -d8s -s bench/peers/repeat-gateway.lua http://127.0.0.1:18090 -- "$((base + 1))" ticket >/dev/null
TOKENS=$RUN/tokens.txt WARMUP=1 wrk -t1 -c64 -d2s -s bench/peers/repeat-gateway.lua http://127.0.0.1:18090 -- "$(( (base + 1) * 10 + 1 ))" >/dev/null

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
pidof_redis() { redis-cli -p "$1" info server | tr -d '\r' | awk -F: '$1 == "process_id" {print $2}'; }
pm=$(pidof_redis 16380); pr=$(pidof_redis 16381)
gateway_ticks() { ticks "$gw"; }
nginx_ticks() {
  local s=0 p
  for p in $(pgrep -f "nginx: worker process"); do s=$((s + $(ticks "$p"))); done
  echo $s
}
us() { echo "$1 * 1000000 / $(getconf CLK_TCK) / ($2 * $DUR)" | bc -l; }
row() { # name, edge ticks function, then wrk's arguments
  local name=$1 edge=$2; shift 2
  local m0 r0 e0 m1 r1 e1 out rps
  m0=$(ticks "$pm"); r0=$(ticks "$pr"); e0=$($edge)
  out=$(wrk -t1 -c64 -d"${DUR}"s "$@")
  m1=$(ticks "$pm"); r1=$(ticks "$pr"); e1=$($edge)
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  echo "$rps" >>"$RUN/$name.txt"
  printf '  %-8s %8.0f purchases/s   CPU per purchase: master %5.1f µs, replica %5.1f µs, edge %5.1f µs%s\n' \
    "$name" "$rps" "$(us $((m1 - m0)) "$rps")" "$(us $((r1 - r0)) "$rps")" "$(us $((e1 - e0)) "$rps")" \
    "$(echo "$out" | awk '/Non-2xx/ {print "  NON-2xx: " $NF}')"
}
for r in $(seq "$ROUNDS"); do
  echo "round $r"
  TOKENS=$RUN/tokens.txt WARMUP=1 row gateway gateway_ticks -s bench/peers/repeat-gateway.lua http://127.0.0.1:18090 -- "$(( (base + 1 + r) * 10 + 1 ))"
  BASE=$((r * 1000000)) USERS=400000 row peer nginx_ticks -s bench/peers/accept-peer.lua http://127.0.0.1:18083 -- 3
done
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
printf 'medians: gateway %.0f, journaled peer %.0f purchases/s; ratio %.3f\n' "$(median <"$RUN/gateway.txt")" \
  "$(median <"$RUN/peer.txt")" "$(echo "$(median <"$RUN/gateway.txt") / $(median <"$RUN/peer.txt")" | bc -l)"
