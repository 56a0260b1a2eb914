# Flash-sale edge. `make demo` runs the demo flash sale; `make test` runs every test.
SHELL := /bin/bash
GO ?= go
STACK := deploy/stack/stack.sh
BINS := gateway writer bench flashctl
TEST_TIMEOUT ?= 14m

.PHONY: demo demo-slow test test-unit test-race chaos lab-distances lab-skew up up-services down reset status build lint bench bench-peers ablation clean

demo: build up-services
	bash deploy/demo.sh

# demo-slow runs a small sale that starts a minute ahead, on a gateway with
# the development sign-in, for a person to click through the sale page.
demo-slow: build up-services
	bash deploy/demo-slow.sh

# test runs every test against the real stack: first all packages in parallel
# (TEST_PAR at a time: they mostly wait on the stack, and go's default of one
# per core left the two cores half idle), then, one package at a time, the
# fault tests (named TestFault...: they kill a Redis master or restart
# PostgreSQL, which would disturb tests running beside them) and the browser
# tests (TestBrowser...: a page's countdown and budgets starve beside a busy
# suite on two cores), then the race detector over the unit tests.
TEST_PAR ?= 4
test: up
	source .run/env && FLASHSALE_REQUIRE_STACK=1 $(GO) test -p $(TEST_PAR) -count=1 -timeout $(TEST_TIMEOUT) -skip '^(TestFault|TestBrowser)' ./...
	source .run/env && FLASHSALE_REQUIRE_STACK=1 $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -p 1 -run '^(TestFault|TestBrowser)' $(FAULT_PKGS)
	$(MAKE) test-race

# FAULT_PKGS are the packages with TestFault or TestBrowser tests: the second
# phase runs only these (with -p 1 every other package's test binary would be
# linked one after another, to run nothing).
FAULT_PKGS = ./deploy/e2e ./gateway/internal/app ./gateway/internal/page ./gateway/internal/pow ./sharding/ops/reconcile ./sharding/stock ./writer/internal/app

# chaos runs a seeded fault run of the whole system (deploy/e2e TestFaultChaos;
# with LAB=1 TestLabChaos, on the lab's hosts, links and clocks: deploy/lab):
# SEED= replays a run (default: a random one, printed first), DURATION= of the
# crowd and the faults, FAULTS= the most faults, KINDS= a comma-separated
# subset of the fault kinds, RUSH=0 not to rush buyers before each partition and
# freeze. make test runs each once on a fixed seed, with the rushes (the lab's
# in its first phase: it faults only its own cluster and links).
SEED ?= random
DURATION ?= 60s
RUSH ?= 1
LAB ?= 0
CHAOS_TEST = $(if $(filter 1,$(LAB)),TestLabChaos,TestFaultChaos)
chaos: up
	source .run/env && FLASHSALE_REQUIRE_STACK=1 FLASHSALE_CHAOS_SEED=$(SEED) FLASHSALE_CHAOS_DURATION=$(DURATION) \
		FLASHSALE_CHAOS_FAULTS=$(FAULTS) FLASHSALE_CHAOS_KINDS=$(KINDS) FLASHSALE_CHAOS_RUSH=$(RUSH) \
		$(GO) test -count=1 -v -timeout 40m -run '^$(CHAOS_TEST)$$' ./deploy/e2e/

# lab-distances measures the demo sale on the lab (deploy/lab) at round trips
# of RTTS (0,200us,500us,1ms,2ms) between the gateway and Redis and between the
# Redis nodes, Kafka at KAFKA_RTT (1ms): sell-out, 202 p50/p99, reservations
# per call, 202s a second per master, the relay's lag (deploy/e2e
# TestLabDistances). A measurement: run it on a quiet machine.
RTTS ?= 0,200us,500us,1ms,2ms
KAFKA_RTT ?= 1ms
lab-distances: up
	source .run/env && FLASHSALE_REQUIRE_STACK=1 FLASHSALE_LAB_DISTANCES=1 FLASHSALE_LAB_RTTS=$(RTTS) FLASHSALE_LAB_KAFKA_RTT=$(KAFKA_RTT) \
		$(GO) test -count=1 -v -timeout 30m -run '^TestLabDistances$$' ./deploy/e2e/

# lab-skew measures a master's failover to a replica whose clock is off by
# each of SKEWS (0,2s,-2s), under the chaos crowd on the lab (deploy/e2e
# TestLabSkewedFailover): the purchases answered 503 and the promises kept.
SKEWS ?= 0,2s,-2s
lab-skew: up
	source .run/env && FLASHSALE_REQUIRE_STACK=1 FLASHSALE_LAB_SKEW=1 FLASHSALE_LAB_SKEWS=$(SKEWS) \
		$(GO) test -count=1 -v -timeout 30m -run '^TestLabSkewedFailover$$' ./deploy/e2e/

# test-race runs the packages with concurrency of their own (goroutines,
# locks or atomics outside their tests) under the race detector, TEST_PAR at
# a time (they too mostly wait).
RACE_PKGS = ./bench/internal/app ./bench/internal/load ./bench/internal/tokens ./deploy/testenv \
	./gateway/internal/app ./gateway/internal/auth ./gateway/internal/catalog ./gateway/internal/httpapi \
	./gateway/internal/limit ./gateway/internal/obs ./gateway/internal/pow ./gateway/internal/presale ./gateway/internal/room \
	./gateway/internal/soldout ./sharding/journal ./sharding/ops/internal/opstest ./sharding/ops/plan ./sharding/repeatlog ./sharding/startup \
	./sharding/stock ./sharding/clock ./deploy/lab ./writer/internal/app ./writer/internal/consume ./writer/internal/obs ./writer/internal/outbox
test-race:
	source .run/env 2>/dev/null; FLASHSALE_REQUIRE_STACK=$${FLASHSALE_REQUIRE_STACK:-0} $(GO) test -p $(TEST_PAR) -count=1 -race -short -timeout $(TEST_TIMEOUT) $(RACE_PKGS)

test-unit:
	$(GO) test -count=1 -short ./...

up:
	bash $(STACK) up

# up-services starts the stack without installing the tests' tools (a
# browser, Prometheus, iptables, fonts): what the demos need.
up-services:
	STACK_TESTS=0 bash $(STACK) up

down:
	bash $(STACK) down

# reset: an empty stack (its data deleted), as on a fresh clone; before a benchmark.
reset:
	bash $(STACK) reset

status:
	bash $(STACK) status

build:
	mkdir -p bin
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/ ./gateway ./writer ./bench ./sharding/cmd/flashctl

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./...

# bench-peers measures the gateway against ../shared/peers in one run (ratios).
bench-peers: build up
	bash bench/peers.sh

# ablation measures Redis's CPU per 202 with parts of the system taken away
# (deploy/ablation.sh; run `make reset` first).
ablation: build up
	bash deploy/ablation.sh

clean:
	rm -rf bin .run
