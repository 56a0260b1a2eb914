#!/usr/bin/env bash
# compare-wrk.sh: the bench's closed-loop maximum rate against wrk's, both
# hitting the peer "limit" server (a bare fasthttp server answering the
# sold-out body) on this machine, alternated A/B, median of each.
#
# Fairness: wrk runs one thread (-t1); the bench runs with GOMAXPROCS=1 and one
# event loop (-workers 1), the same 64 connections and the same duration. The
# bench sends what the gateway needs (POST with a bearer token and an
# Idempotency-Key, ~330 bytes); wrk sends a bare GET (~70 bytes).
#
# Usage: bench/compare-wrk.sh [ROUNDS] [DURATION]   (defaults: 3 rounds of 5s)
set -euo pipefail
ROUNDS=${1:-3}
DUR=${2:-5}
CONNS=64
ADDR=${COMPARE_ADDR:-127.0.0.1:18080} # COMPARE_ADDR: another port when 18080 is taken
URL=http://$ADDR
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PEER=${PEER:-/work/shared/peers/limit}
TMP=$(mktemp -d /tmp/compare-wrk.XXXXXX)

command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install -y wrk)" >&2; exit 1; }

# Build the peer in a copy: it has its own go.mod, and the shared tree is read-only to us.
cp -r "$PEER" "$TMP/limit-src"
(cd "$TMP/limit-src" && { go build -o "$TMP/limit" . 2>/dev/null || { go mod tidy >/dev/null 2>&1 && go build -o "$TMP/limit" .; }; })
(cd "$ROOT" && go build -o "$TMP/bench" ./bench)

"$TMP/limit" -addr "$ADDR" >"$TMP/limit.log" 2>&1 &
LIMIT_PID=$!
trap 'kill $LIMIT_PID 2>/dev/null || true; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do
	curl -s -o /dev/null "$URL/" && break
	sleep 0.1
done

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

: >"$TMP/wrk.txt"
: >"$TMP/bench.txt"
for r in $(seq "$ROUNDS"); do
	w=$(wrk -t1 -c$CONNS -d${DUR}s "$URL/api/flash-sales/items/1/purchase" | awk '/Requests\/sec/ {print $2}')
	echo "$w" >>"$TMP/wrk.txt"
	b=$(GOMAXPROCS=1 "$TMP/bench" -url "$URL" -items 1 -c $CONNS -workers 1 -duration ${DUR}s -dev -users 10000 \
		-quiet -out "$TMP/out$r" 2>>"$TMP/bench.err" | awk '/^elapsed/ {for (i=1;i<=NF;i++) if ($i=="throughput") {sub("/s","",$(i+1)); gsub(",","",$(i+1)); print $(i+1)}}')
	echo "$b" >>"$TMP/bench.txt"
	printf 'round %d: wrk %10.0f req/s   bench %10.0f req/s\n' "$r" "$w" "$b"
done
W=$(median <"$TMP/wrk.txt")
B=$(median <"$TMP/bench.txt")
printf 'median: wrk %.0f req/s, bench %.0f req/s, ratio bench/wrk = %.3f\n' "$W" "$B" "$(echo "$B / $W" | bc -l)"
