#!/usr/bin/env bash
# ablation.sh: where Redis's CPU per accepted purchase goes, measured by
# taking parts away (issue 58). The same load as sizing.sh's reservation row
# (bench's steady crowd of new buyers, one click each, RES_CONNS connections,
# a sale with one shard per master) runs against variants of the system, in
# turn, ROUNDS times, alternated, and each variant's medians are printed:
#
#   a  today's scripts and configuration
#   b  a reserve script that takes the same keys and arguments and answers
#      the same shape at once (lua/ablation/noop.lua)
#   c  the same redis.calls with no validation and no string building
#      (lua/ablation/bare.lua)
#   e  today's, with appendonly no on every node
#   g  today's, with no replica (the three replicas stopped) and no WAIT
#      (-replica-acks 0)
#   o  the gateway binary OLD_GATEWAY (set it to compare a change side by
#      side: the default VARIANTS then end with o)
#
# (d, each reservation's twelve arguments packed into one string, was
# measured on 2026-12-06 and cost more than it saved: bench/MEASUREMENTS.md.
# It went with the layout it packed, when reserve_many.lua began to take
# what a shard's reservations share once per call.)
#
# (There is no f, replication over plain TCP instead of the stack's TLS: a
# Redis 7.0 cluster replica takes its master's port from nodes.conf, the TLS
# one, whatever tls-replication says, and CLUSTER REPLICATE to the same
# master keeps it. Tried both on 2026-12-06.)
#
# b and c are gateways built with a build tag (bin/ablation/gateway-*):
# they are measurements, never releases. e and g are for the accounting
# only: the shipped configuration keeps SPEC's durability. Each variant's
# figures per 202: Redis CPU on the masters and on the replicas (INFO cpu,
# less the idle CPU), the commands the replicas ran, the reservations per
# script call, and the gateway's CPU.
#
# Usage: deploy/ablation.sh [SECONDS]   (default 5 per variant and round;
# ROUNDS=3, VARIANTS="a b c e g", RES_CONNS=256, OLD_GATEWAY unset). Needs `make build` and
# `make up`, a quiet machine and an empty stack (make reset): the live sales'
# fence beats and relay polls are in the figures otherwise.
set -euo pipefail
DUR=${1:-5}
cd "$(dirname "$0")/.."
source .run/env
source bench/peers/cpu.sh # redis_cpu, node_cpu, replicas, masters, repl_cmds, reserve_calls, need_debian
need_debian ablation "bc" bc
open_sales_warning
RUN=.run/ablation
rm -rf "$RUN" && mkdir -p "$RUN" bin/ablation
ROUNDS=${ROUNDS:-3}
VARIANTS=${VARIANTS:-a b c e g${OLD_GATEWAY:+ o}}
for v in noop bare; do
  go build -tags "ablation_$v" -o "bin/ablation/gateway-$v" ./gateway
done
secret=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
base=$(( ( $(date +%s) % 1000000 ) * 1000 + RANDOM % 1000 ))
starts=$(date -u -d '-1 second' +%Y-%m-%dT%H:%M:%SZ); ends=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
# One sale per variant: a variant's leftovers (noop's units never taken,
# bare's buyer records) never meet another's.
i=0
for v in $VARIANTS; do
  i=$((i + 1))
  echo "{\"id\": $((base + i)), \"name\": \"ablation $v\", \"startsAt\": \"$starts\", \"endsAt\": \"$ends\",
    \"items\": [{\"id\": $(( (base + i) * 10 + 1 )), \"name\": \"x\", \"price\": 1, \"currency\": \"JPY\", \"quantity\": 100000000}]}" >"$RUN/sale-$v.json"
  bin/flashctl sale create --file "$RUN/sale-$v.json" >/dev/null
  echo "$(( (base + i) * 10 + 1 ))" >"$RUN/item-$v"
done
hz=$(getconf CLK_TCK)
gw=""
stop_gateway() {
  if [ -n "$gw" ]; then kill "$gw" 2>/dev/null || true; wait "$gw" 2>/dev/null || true; gw=""; fi
}
trap 'stop_gateway; restore' EXIT
start_gateway() { # binary, flags...
  stop_gateway
  local bin=$1; shift
  "$bin" -listen 127.0.0.1:18290 -admin 127.0.0.1:18292 -jwt-secret "$secret" -user-rate 1e9 -user-burst 1000000000 \
    -ip-rate 1e9 -ip-burst 1000000000 -max-conns-per-ip 0 "$@" >>"$RUN/gateway.log" 2>&1 &
  gw=$!
  for _ in $(seq 100); do curl -fsS -o /dev/null http://127.0.0.1:18292/readyz 2>/dev/null && break; sleep 0.1; done
  sleep 1.2 # the catalog loads sales every second
}
# The replicas' masters, for g: "replica master-port" lines.
replica_of() { for p in $(replicas); do
  echo "$p $(redis-cli -p "$p" info replication | tr -d '\r' | awk -F: '/^master_port:/ {print $2}')"; done; }
replica_of >"$RUN/replicas.txt"
restore() { # every node back as the stack runs it
  for p in 7001 7002 7003 7004 7005 7006; do redis-cli -p $p config set appendonly yes >/dev/null 2>&1 || true; done
  while read -r r m; do
    redis-cli -p "$r" ping >/dev/null 2>&1 || bash deploy/stack/stack.sh redis-start "$r" >/dev/null 2>&1 || true
  done <"$RUN/replicas.txt"
}
# linked: wait until every replica's link to its master is up again; fail
# the run if it never is.
linked() {
  local r m st
  for _ in $(seq 150); do
    local ok=1
    while read -r r m; do
      st=$(redis-cli -p "$r" info replication 2>/dev/null | tr -d '\r' | awk -F: '/^master_link_status:/ {print $2}')
      [ "$st" = up ] || ok=0
    done <"$RUN/replicas.txt"
    [ $ok = 1 ] && return 0
    sleep 0.2
  done
  echo "ablation: the replicas' links never came up again" >&2; return 1
}
# setup VARIANT: the system as the variant wants it; sets cmd to the
# gateway's binary and flags.
setup() {
  case $1 in
  b) cmd=(bin/ablation/gateway-noop) ;;
  c) cmd=(bin/ablation/gateway-bare) ;;
  o) cmd=("${OLD_GATEWAY:?variant o needs OLD_GATEWAY}") ;;
  e) for p in 7001 7002 7003 7004 7005 7006; do redis-cli -p $p config set appendonly no >/dev/null; done; cmd=(bin/gateway) ;;
  g) while read -r r m; do bash deploy/stack/stack.sh redis-kill "$r" >/dev/null; done <"$RUN/replicas.txt"
     sleep 1; cmd=(bin/gateway -replica-acks 0) ;;
  *) cmd=(bin/gateway) ;;
  esac
}
teardown() {
  case $1 in
  e) for p in 7001 7002 7003 7004 7005 7006; do redis-cli -p $p config set appendonly yes >/dev/null; done ;;
  g) while read -r r m; do bash deploy/stack/stack.sh redis-start "$r" >/dev/null; done <"$RUN/replicas.txt"
     linked ;;
  esac
}
# Redis's idle CPU, subtracted from every row.
r0=$(redis_cpu); sleep "$DUR"; idle=$(echo "($(redis_cpu) - $r0) / $DUR" | bc -l)
bin/bench -tokens-out "$RUN/tokens.txt" -users 10 -jwt-secret "$secret" >/dev/null 2>&1 || true
user=5000000
: >"$RUN/rows.txt"
for round in $(seq "$ROUNDS"); do
  for v in $VARIANTS; do
    setup "$v"
    start_gateway "${cmd[@]}"
    item=$(cat "$RUN/item-$v")
    user=$((user + 2000000))
    bin/bench -url http://127.0.0.1:18290 -items "$item" -scenario steady -users 1000000 -user-base "$user" -c 64 \
      -duration 1s -jwt-secret "$secret" -quiet -out "$RUN/warm" >/dev/null 2>&1 || true # warms the gateway and its producer
    user=$((user + 2000000))
    for p in 7001 7002 7003 7004 7005 7006; do redis-cli -p $p config resetstat >/dev/null 2>&1 || true; done
    node_cpu >"$RUN/cpu0"; t0=$(awk '{print $14 + $15}' "/proc/$gw/stat"); read -r k0 v0 <<<"$(reserve_calls 127.0.0.1:18292)"
    bin/bench -url http://127.0.0.1:18290 -items "$item" -scenario steady -users 1000000 -user-base "$user" -c "${RES_CONNS:-256}" \
      -idempotency-keys=false -duration "${DUR}s" -jwt-secret "$secret" -quiet -out "$RUN/bench" >"$RUN/bench.txt" 2>&1 || true
    node_cpu >"$RUN/cpu1"; t1=$(awk '{print $14 + $15}' "/proc/$gw/stat"); read -r k1 v1 <<<"$(reserve_calls 127.0.0.1:18292)"
    n=$(awk '$1 == "purchase" && $2 == "202" {gsub(",", "", $3); print $3}' "$RUN/bench.txt")
    reps=$(repl_cmds $(replicas))
    paste "$RUN/cpu0" "$RUN/cpu1" | awk -v n="${n:-0}" -v idle="$idle" -v dur="$DUR" -v v="$v" -v round="$round" \
      -v reps="$reps" -v calls=$((k1 - k0)) -v res=$((v1 - v0)) -v gw=$(echo "($t1 - $t0) * 1000000 / $hz" | bc -l) '
      { d = $6 - $3; if ($2 == "master") { m += d; mn++ } else if ($2 == "slave") { r += d; rn++ } }
      END {
        if (n == 0) { printf "%s %d 0 0 0 0 0 0\n", v, round; exit }
        # the idle CPU (all six nodes) shared out among the live nodes
        mi = (m - idle * dur * mn / 6) * 1e6 / n; ri = (r - idle * dur * rn / 6) * 1e6 / n
        printf "%s %d %d %.1f %.1f %.2f %.2f %.1f\n", v, round, n, mi, ri, reps / n, (calls ? res / calls : 0), gw / n
      }' >>"$RUN/rows.txt"
    tail -1 "$RUN/rows.txt"
    teardown "$v"
  done
done
stop_gateway
echo
echo "variant | 202s (median) | Redis µs per 202, masters | replicas | all | replicated commands per 202 | reservations per call | gateway µs per 202"
for v in $VARIANTS; do
  awk -v v="$v" '$1 == v' "$RUN/rows.txt" | sort -k4 -n | awk -v v="$v" '
    { n[NR] = $3; m[NR] = $4; r[NR] = $5; c[NR] = $6; b[NR] = $7; g[NR] = $8 }
    END { k = int((NR + 1) / 2); printf "%s | %d | %.1f | %.1f | %.1f | %.2f | %.2f | %.1f\n", v, n[k], m[k], r[k], m[k] + r[k], c[k], b[k], g[k] }'
done
echo "rows in $RUN/rows.txt (variant, round, 202s, masters µs, replicas µs, replicated commands, reservations per call, gateway µs)"
