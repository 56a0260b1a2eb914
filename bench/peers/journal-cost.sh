#!/usr/bin/env bash
# journal-cost.sh: what each part of the hand-off's Redis work costs, measured
# on the journaled OpenResty peer (bench/peers/openresty-journal), whose one
# script per purchase does the gateway's per-reservation Redis work with no
# batching, no JWT and no Kafka. Each variant drops one part:
#
#   full       the script (unit, buyer record, journal entry, order record)
#              and WAIT 1, on a master with a replica, AOF fsync every second
#   nowait     no WAIT (a 202 before any replica has the write)
#   noreplica  no replica (and so no WAIT)
#   noaof      neither node writes an AOF
#   noorder    the script writes no order record (no HSET, no EXPIRE)
#   bare       none of the hand-off: no journal, no order record, no replica,
#              no AOF, no WAIT (about the shared peer's own reserve path)
#   tls        full, with the replica copying over TLS as the stack's nodes
#              do (tls-replication; the stack's certificates in .run/tls, so
#              after `make up`; not in the default list)
#
# For each it prints the purchases per second (wrk -t1 -c64, every click a new
# buyer) and the CPU the master, the replica and nginx spent per purchase, from
# /proc. Run it after `make bench-peers` (which installs wrk and nginx) with the
# stack idle; the variants alternate round by round.
#
# Usage: bash bench/peers/journal-cost.sh [ROUNDS] [SECONDS]   (defaults 2, 4)
#   VARIANTS="full bare" runs only those; STATS=1 also prints the master's
#   INFO commandstats for the script, XADD, HSET and WAIT after each variant.
set -euo pipefail
ROUNDS=${1:-2}
DUR=${2:-4}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUN=$ROOT/.run/journal-cost
CONF=$ROOT/bench/peers/openresty-journal/nginx.conf
rm -rf "$RUN"
for t in wrk nginx redis-server bc; do
  command -v $t >/dev/null || { echo "journal-cost: $t missing: run make bench-peers once first" >&2; exit 1; }
done

stop() {
  [ -f "$RUN/ng/nginx.pid" ] && kill "$(cat "$RUN/ng/nginx.pid")" 2>/dev/null || true
  for p in 16381 16380; do redis-cli -p $p shutdown nosave >/dev/null 2>&1 || true; done
  for _ in $(seq 50); do ss -Hltn | grep -qE ':(16380|16381|18083) ' || return 0; sleep 0.1; done
}
trap stop EXIT

ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
pidof_redis() { redis-cli -p "$1" info server 2>/dev/null | tr -d '\r' | awk -F: '$1 == "process_id" {print $2}' || true; }
nginx_ticks() {
  local s=0 p
  for p in $(pgrep -f "nginx: worker process"); do s=$((s + $(ticks "$p"))); done
  echo $s
}

variant() {
  local v=$1 aof=yes replica=1 p
  case $v in noaof) aof=no ;; noreplica) replica=0 ;; bare) aof=no replica=0 ;; esac
  stop
  rm -rf "$RUN" && mkdir -p "$RUN/16380" "$RUN/16381" "$RUN/ng"
  local tls=() from=16380
  if [ "$v" = tls ]; then
    [ -f "$ROOT/.run/tls/server.pem" ] || { echo "journal-cost: tls needs the stack's certificates: make up first" >&2; return; }
    # tls-port is the node's port + 10; the replica follows its master there.
    tls=(--tls-replication yes --tls-cert-file "$ROOT/.run/tls/server.pem" --tls-key-file "$ROOT/.run/tls/server.key"
      --tls-ca-cert-file "$ROOT/.run/tls/ca.pem" --tls-auth-clients no)
    from=16390
  fi
  for p in 16380 16381; do
    [ $p = 16381 ] && [ $replica = 0 ] && continue
    redis-server --port $p --bind 127.0.0.1 --save "" --appendonly $aof --appendfsync everysec --daemonize yes \
      --dir "$RUN/$p" --logfile "$RUN/$p/redis.log" $([ $p = 16381 ] && echo --replicaof 127.0.0.1 $from) \
      ${tls[@]+"${tls[@]}"} $([ ${#tls[@]} -gt 0 ] && echo --tls-port $((p + 10))) >/dev/null
  done
  if [ $replica = 1 ]; then
    for _ in $(seq 100); do
      redis-cli -p 16381 info replication 2>/dev/null | tr -d '\r' | grep -qx master_link_status:up && break
      sleep 0.2
    done
  fi
  sed "s#PEERDIR#$RUN/ng#g" "$CONF" >"$RUN/ng/nginx.conf"
  case $v in
    nowait | noreplica) sed -i 's/r:wait(1, 50)/-- no WAIT/; s/init_pipeline(2)/init_pipeline(1)/' "$RUN/ng/nginx.conf" ;;
    noorder) sed -i "/redis.call('HSET', KEYS\[4\]/,+1d; /redis.call('EXPIRE', KEYS\[4\]/d" "$RUN/ng/nginx.conf" ;;
    bare) sed -i "s/r:wait(1, 50)/-- no WAIT/; s/init_pipeline(2)/init_pipeline(1)/; /redis.call('XLEN'/d;
      /redis.call('XADD'/,+1d; /redis.call('HSET', KEYS\[4\]/,+1d; /redis.call('EXPIRE', KEYS\[4\]/d" "$RUN/ng/nginx.conf" ;;
  esac
  PEER_REDIS_PORT=16380 nginx -c "$RUN/ng/nginx.conf" -p "$RUN/ng" -g "env PEER_REDIS_PORT;"
  redis-cli -p 16380 set '{item:3}:stock' 100000000 >/dev/null
  local pm pr m0 r0 n0 out rps
  pm=$(pidof_redis 16380); pr=$(pidof_redis 16381)
  m0=$(ticks "$pm"); r0=$([ -n "$pr" ] && ticks "$pr" || echo 0); n0=$(nginx_ticks)
  out=$(BASE=$((RANDOM * 100000)) USERS=400000 wrk -t1 -c64 -d"${DUR}"s -s "$ROOT/bench/peers/accept-peer.lua" http://127.0.0.1:18083 -- 3)
  local m1 r1 n1
  m1=$(ticks "$pm"); r1=$([ -n "$pr" ] && ticks "$pr" || echo 0); n1=$(nginx_ticks)
  local dm=$((m1 - m0)) dr=$((r1 - r0)) dn=$((n1 - n0))
  if [ -n "${STATS:-}" ]; then
    redis-cli -p 16380 info commandstats | tr -d '\r' | grep -E 'cmdstat_(evalsha|xadd|hset|wait):' >&2
  fi
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  if echo "$out" | grep -q Non-2xx; then echo "journal-cost: $v answered non-2xx: $(echo "$out" | grep Non-2xx)" >&2; fi
  us() { echo "$1 * 1000000 / $(getconf CLK_TCK) / ($rps * $DUR)" | bc -l; }
  printf '  %-10s %8.0f purchases/s   CPU per purchase: master %5.1f µs, replica %5.1f µs, nginx %5.1f µs\n' \
    "$v" "$rps" "$(us $dm)" "$(us $dr)" "$(us $dn)"
}

for r in $(seq "$ROUNDS"); do
  echo "round $r"
  for v in ${VARIANTS:-full nowait noreplica noaof noorder bare}; do variant $v; done
done
