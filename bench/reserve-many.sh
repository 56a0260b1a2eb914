#!/usr/bin/env bash
# reserve-many.sh: Redis CPU per reservation of reserve.lua alone and of
# reserve_many.lua with N reservations a call, on a throwaway standalone
# redis-server (no replica, no AOF: the script's own cost), measured by
# redis-benchmark and read from INFO commandstats (usec_per_call / N).
#
# Usage: bench/reserve-many.sh [N] [PORT]   (defaults: 16 reservations, port 16501)
set -euo pipefail
N=${1:-16}
PORT=${2:-16501}
cd "$(dirname "$0")/.."
for t in redis-server redis-cli redis-benchmark; do command -v $t >/dev/null || { echo "reserve-many: $t missing (make up installs it)" >&2; exit 1; }; done
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes --logfile /dev/null >/dev/null
trap 'redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true' EXIT
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
# One reservation's 7 keys and 12 arguments; redis-benchmark gives each
# __rand_int__ its own random value, so every reservation is a new buyer.
K='{t}:stock:1 {t}:buyers {t}:o:__rand_int__ {t}:frozen {t}:events {t}:mv:- {t}:halt'
A='__rand_int__ oid__rand_int__ 1 1796136300000 1796136900000 3600 5 100000000 a__rand_int__ 0 "" 60'
run() { # script, reservations per call
  local sha keys="" args="" i
  sha=$(redis-cli -p "$PORT" script load "$(cat "$1")")
  redis-cli -p "$PORT" flushall >/dev/null
  redis-cli -p "$PORT" set '{t}:stock:1' 100000000 >/dev/null
  redis-cli -p "$PORT" config resetstat >/dev/null
  for i in $(seq "$2"); do keys="$keys $K"; args="$args $A"; done
  eval redis-benchmark -p "$PORT" -n $((240000 / $2)) -r 100000000 -P 4 -c 20 -q evalsha "$sha" $((7 * $2)) $keys $args >/dev/null 2>&1
  redis-cli -p "$PORT" info commandstats | tr ',=' '  ' | awk -v n="$2" -v s="$(basename "$1")" \
    '/^cmdstat_evalsha/ {printf "%-18s %2d a call: %7.2f us a call, %6.2f us a reservation\n", s, n, $6, $6 / n}'
}
run lua/reserve.lua 1
run lua/reserve_many.lua 1
run lua/reserve_many.lua "$N"
