#!/usr/bin/env bash
# The demo flash sale (make demo): the local stack, a writer and a gateway,
# a sale of 10,000 units over 8 shards and a crowd of 500,000 users: 95% of
# them arrive within two seconds of the start (exponential arrivals, as a
# crowd pours in), each clicks 1-3 times 100-600 ms apart, and winners pay,
# so the schedule's last requests come several seconds later; then the audit
# of the outcome. Needs `make build` and the stack up first (the Makefile's
# demo target runs both; it starts the stack without the tests' tools).
#
# Knobs: DEMO_USERS (500000), DEMO_UNITS (10000), DEMO_SHARDS (8),
# DEMO_PORT (18080 public, admin ports next to it), DEMO_CONNS (256),
# DEMO_CANCEL (0: share of winners who cancel; cancelled units are sold again,
# so with cancellations PostgreSQL holds more orders than units while its
# active orders never exceed them).
set -euo pipefail
cd "$(dirname "$0")/.."
source .run/env

users=${DEMO_USERS:-500000}
units=${DEMO_UNITS:-10000}
shards=${DEMO_SHARDS:-8}
port=${DEMO_PORT:-18080}
conns=${DEMO_CONNS:-256}
cancel=${DEMO_CANCEL:-0}
run=.run/demo/$(date +%Y%m%d-%H%M%S)
mkdir -p "$run"

secret=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
sale=$(( ( $(date +%s) % 1000000 ) * 1000 + RANDOM % 1000 ))
item=$(( sale * 10 + 1 ))
starts=$(date -u -d '-1 second' +%Y-%m-%dT%H:%M:%SZ)
ends=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
cat > "$run/sale.json" <<JSON
{"id": $sale, "name": "Demo flash sale", "startsAt": "$starts", "endsAt": "$ends", "paymentWindow": "10m",
 "items": [{"id": $item, "name": "Limited sneaker", "price": 19900, "currency": "JPY", "quantity": $units}]}
JSON

DEMO_NAME=demo
source deploy/demo-lib.sh

echo "== demo: sale $sale, item $item: $units units over $shards shards, $users users"
bin/writer migrate >"$run/writer.log" 2>&1
bin/flashctl sale create --file "$run/sale.json" --shards "$shards" | tee -a "$run/writer.log"

bin/writer run -admin "127.0.0.1:$((port + 3))" -sales "$sale" >>"$run/writer.log" 2>&1 &
pids+=($!)
# Every user of the demo crowd comes from 127.0.0.1, so the bench sends each
# user's address in X-Forwarded-For and the gateway trusts loopback as a proxy:
# the per-IP limits then see 500,000 clients, as they would behind a load balancer.
bin/gateway -listen "127.0.0.1:$port" -admin "127.0.0.1:$((port + 2))" -jwt-secret "$secret" \
  -trusted-proxies 127.0.0.0/8 >"$run/gateway.log" 2>&1 &
pids+=($!)
wait_ready writer "http://127.0.0.1:$((port + 3))/readyz" "$run/writer.log"
wait_ready gateway "http://127.0.0.1:$((port + 2))/readyz" "$run/gateway.log"
for _ in $(seq 1 50); do # the gateway loads sales every second
  curl -fsS -o /dev/null "http://127.0.0.1:$port/api/flash-sales/sales/$sale" 2>/dev/null && break
  sleep 0.2
done
echo "== gateway on 127.0.0.1:$port (admin :$((port + 2))), writer admin :$((port + 3)), $(grep FLASHSALE_BROKER .run/env | cut -d= -f2) broker"
echo "== sale page: http://127.0.0.1:$port/sale/$sale (make demo-slow runs a sale to click through by hand)"

status=0
GOMAXPROCS=1 bin/bench -url "http://127.0.0.1:$port" -sale "$sale" -scenario flash-crowd -users "$users" \
  -c "$conns" -cancel "$cancel" -jwt-secret "$secret" -xff -audit -out "$run/bench" \
  -metrics-url "http://127.0.0.1:$((port + 2))/metrics" || status=$?

echo
echo "== sale after the run:"
bin/flashctl status --sale "$sale" || true
echo "== logs and reports in $run (open $run/bench/report.html and, beside it, ledger.html)"
# The closing report ends the demo: its last line is the ledger's verdict,
# from PostgreSQL, Redis and the journals alone (exit 1 naming the orders
# when a unit is unaccounted for), with the gateway's funnel beside it.
echo "== the sale's closing report:"
mkdir -p "$run/bench"
bin/flashctl sale report --sale "$sale" --gateways "127.0.0.1:$((port + 2))" \
  --html "$run/bench/ledger.html" || status=$?
exit "$status"
