package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/stock"
)

// TestFaultRedisStallSettles: the master of the sale's only shard stops
// running writes (CLIENT PAUSE WRITE) for longer than the purchase budget and
// the release budget together. The purchase answers 503 UNAVAILABLE after
// both; the reserve script, already sent (through the batching lane) and
// queued in Redis, runs when the pause ends, and the void of its attempt
// (queued in the background) undoes it, or, when the void runs first, makes
// it refuse. Nothing stays reserved or journaled, and the next purchase
// sells. A fault test: the pause stalls every client of that master, so it
// runs alone. The gateway runs on its default flags, its relay included: no
// event of the attempt reaches Kafka.
func TestFaultRedisStallSettles(t *testing.T) {
	s := start(t, 5, 1, nil, "")
	ctx := context.Background()
	rc := testenv.NewRedis(t)
	top, err := stock.Topology(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	tag := s.sale.Shards[0]
	node, ok := rc.Nodes()[top.MasterOfTag(tag)]
	if !ok {
		t.Fatalf("no connection to %s", top.MasterOfTag(tag))
	}
	calls := func(cmd string) int64 { // calls of cmd on the shard's master so far
		info, err := node.Do(ctx, node.B().Info().Section("commandstats").Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		if i := strings.Index(info, "cmdstat_"+cmd+":calls="); i >= 0 {
			fmt.Sscanf(info[i+len("cmdstat_"+cmd+":calls="):], "%d", &n)
		}
		return n
	}
	decr0, incr0 := calls("decr"), calls("incr")
	const pause = 1500 * time.Millisecond
	if err := node.Do(ctx, node.B().ClientPause().Timeout(pause.Milliseconds()).Write().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	t.Cleanup(func() { _ = node.Do(context.Background(), node.B().ClientUnpause().Build()).Error() })

	code, body := s.do("POST", s.purchasePath(), token(t, 1))
	if code != 503 || body != `{"error":"UNAVAILABLE"}` {
		t.Fatalf("purchase during the stall: %d %s", code, body)
	}
	if took := time.Since(paused); took > pause {
		t.Fatalf("the 503 took %v, longer than the stall: the budget did not hold", took)
	}
	// The stall ends, the queued script runs, the void follows it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, held, err := s.store.Holder(ctx, tag, 1)
		if err == nil && !held && s.remaining() == 5 && time.Since(paused) > pause {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the stall: %d units in Redis, buyer record held %v (%v); want 5 and none", s.remaining(), held, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Either the script ran late and took the unit (its DECR) and the void
	// gave it back (its INCR), or the void ran first and the script refused.
	// The fault test runs alone, so these are the only stock writes on the
	// master. The journal holds nothing for the attempt.
	if n := counter(t, s, "flashsale_gateway_ambiguous_reservations_total", ""); n != 1 {
		t.Fatalf("ambiguous reservations: %v, want 1", n)
	}
	if d, i := calls("decr")-decr0, calls("incr")-incr0; d != i || d > 1 {
		t.Fatalf("on the master during the stall: %d DECR, %d INCR; want as many of each, at most one", d, i)
	}
	if n, err := rc.Do(ctx, rc.B().Xlen().Key(string(sharding.AppendEventsKey(nil, tag))).Build()).AsInt64(); err != nil || n != 0 {
		t.Fatalf("journal of the shard holds %d entries (%v) after a 503, want 0", n, err)
	}
	for _, o := range []string{"stands", "gave_up"} {
		if n := counter(t, s, "flashsale_gateway_voids_total", o); n != 0 {
			t.Fatalf("voids_total{outcome=%q} = %v, want 0", o, n)
		}
	}
	// Past the relay's hold: nothing of the attempt was relayed.
	time.Sleep(1500 * time.Millisecond)
	if seen := consume(t, testenv.KafkaBrokers(), s.topic, 1, 2*time.Second); len(seen) != 0 {
		t.Fatalf("the topic holds reserved orders %v for a purchase answered 503", seen)
	}
	if code, body := s.do("POST", s.purchasePath(), token(t, 1)); code != 202 {
		t.Fatalf("after the stall: %d %s", code, body)
	}
	if n := s.remaining(); n != 4 {
		t.Fatalf("%d units after one sale, want 4", n)
	}
}

// counter reads a counter of the gateway's registry, the child whose one label
// has value label (no label: "").
func counter(t *testing.T, s *stack, name, label string) float64 {
	t.Helper()
	fams, err := s.app.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if (label == "" && len(m.GetLabel()) == 0) || (len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == label) {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s{%s}", name, label)
	return 0
}
