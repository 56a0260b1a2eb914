#!/usr/bin/env bash
# The slow demo (make demo-slow): a small sale that starts a minute ahead, on a
# gateway started with -dev, so a person can walk the sale page by hand: sign
# in with any user id (the development sign-in), watch the countdown, buy at
# the start, see "processing" turn into "reserved", pay or cancel. Open a
# second browser (or a private window) to be a second buyer; with the default
# 3 units the fourth buyer sees "sold out". The sale is branded as a shop
# would brand it: its name, logo, colour and banner, the item's picture and
# description (the images in deploy/brand, served by the gateway with
# -page-media); the page speaks the browser's language, English or
# Japanese, and switches at the top. Ctrl-C stops the writer and the
# gateway. Needs `make build` and `make up` (the Makefile target runs both).
#
# Knobs: DEMO_START_IN (60, seconds to the start), DEMO_UNITS (3),
# DEMO_PAY_WINDOW (5m), DEMO_PORT (18080 public, admin ports next to it),
# DEMO_TICKET (true: purchases need the ticket the page fetches).
set -euo pipefail
cd "$(dirname "$0")/.."
source .run/env

start_in=${DEMO_START_IN:-60}
units=${DEMO_UNITS:-3}
window=${DEMO_PAY_WINDOW:-5m}
port=${DEMO_PORT:-18080}
ticket=${DEMO_TICKET:-true}
run=.run/demo-slow/$(date +%Y%m%d-%H%M%S)
mkdir -p "$run"

sale=$(( ( $(date +%s) % 1000000 ) * 1000 + RANDOM % 1000 ))
item=$(( sale * 10 + 1 ))
starts=$(date -u -d "+$start_in second" +%Y-%m-%dT%H:%M:%SZ)
ends=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
cat > "$run/sale.json" <<JSON
{"id": $sale, "name": "Spring drop (slow demo)", "startsAt": "$starts", "endsAt": "$ends", "paymentWindow": "$window",
 "ticketRequired": $ticket,
 "brand": {"shop": "Kumo Shoes", "logo": "/sale/media/logo.svg", "accent": "#0b5d4b",
           "banner": "Free shipping on every order"},
 "items": [{"id": $item, "name": "Kumo runner", "price": 19900, "currency": "JPY", "quantity": $units,
            "image": "/sale/media/sneaker.svg", "description": "Canvas upper, natural rubber sole. Sizes 22 to 30."}]}
JSON

DEMO_NAME=demo-slow
source deploy/demo-lib.sh

bin/writer migrate >"$run/writer.log" 2>&1
bin/flashctl sale create --file "$run/sale.json" --shards 2 | tee -a "$run/writer.log"
bin/writer run -admin "127.0.0.1:$((port + 3))" -sales "$sale" >>"$run/writer.log" 2>&1 &
pids+=($!)
# -dev: the development JWT secret and the page's development sign-in;
# -page-media: the shop's logo and item picture at /sale/media/.
bin/gateway -dev -page-media deploy/brand -listen "127.0.0.1:$port" -admin "127.0.0.1:$((port + 2))" >"$run/gateway.log" 2>&1 &
pids+=($!)
wait_ready writer "http://127.0.0.1:$((port + 3))/readyz" "$run/writer.log"
wait_ready gateway "http://127.0.0.1:$((port + 2))/readyz" "$run/gateway.log"
for _ in $(seq 1 50); do
  curl -fsS -o /dev/null "http://127.0.0.1:$port/api/flash-sales/sales/$sale" 2>/dev/null && break
  sleep 0.2
done

cat <<TXT

== sale page: http://127.0.0.1:$port/sale/$sale
   $units units, starting at $starts (in about $start_in s), $window to pay, tickets required: $ticket.
   Sign in with any user id (development sign-in), wait for the countdown, buy.
   A second browser or a private window is a second buyer.
   The page is branded by the sale file ($run/sale.json, images from deploy/brand)
   and speaks your browser's language (English or 日本語; switch at the top).
== logs in $run; Ctrl-C to stop
TXT
wait
