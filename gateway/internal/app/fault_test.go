package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/twmb/franz-go/pkg/kgo"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/orderevent"
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
	rc, tag, node := onlyShard(t, s)
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

// onlyShard returns a cluster client, the tag of the sale's only shard and a
// connection to that shard's master.
func onlyShard(t *testing.T, s *stack) (rueidis.Client, string, rueidis.Client) {
	t.Helper()
	rc := testenv.NewRedis(t)
	top, err := stock.Topology(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	tag := s.sale.Shards[0]
	node, ok := rc.Nodes()[top.MasterOfTag(tag)]
	if !ok {
		t.Fatalf("no connection to %s", top.MasterOfTag(tag))
	}
	return rc, tag, node
}

// TestFaultRedisStallPaySettles: a pay whose outcome the gateway cannot learn
// is answered 503 only once nothing can come of it, as a purchase's.
//
// First the master of the order's shard stops running writes (CLIENT PAUSE
// WRITE) for longer than the request's budget and the release budget
// together: the pay answers 503 UNAVAILABLE within the stall, and once it
// ends the void queued in the background settles the attempt (rueidis gave
// up the script's connection, so it never ran, or it ran and the void takes
// it back). Then the pay's script runs but its reply is lost, and Redis
// stays away from this gateway for a second (both injected at the gateway's
// Store, over the real cluster; away for the relays too, as in an outage, or
// for less than the hold): the answer is 503, the pay is in the
// journal meanwhile, and the queued void takes it back before the relay's
// hold lets any relay see it. Without the void that pay went through after
// its 503 (the defect this test was written for). In both cases no pay event
// reaches Kafka and the order is PENDING and unmarked; the next pay is
// accepted and relayed once.
func TestFaultRedisStallPaySettles(t *testing.T) {
	s := start(t, 5, 1, nil, "")
	ctx := context.Background()
	rc, tag, node := onlyShard(t, s)
	tok := token(t, 1)
	code, body := s.do("POST", s.purchasePath(), tok)
	if code != 202 {
		t.Fatalf("purchase: %d %s", code, body)
	}
	var placed struct{ OrderID string }
	if err := json.Unmarshal([]byte(body), &placed); err != nil {
		t.Fatal(err)
	}
	id, _ := sharding.ParseOrderID([]byte(placed.OrderID))
	record := string(sharding.AppendOrderKey(nil, tag, id))
	payPath := "/api/flash-sales/orders/" + placed.OrderID + "/pay"
	journaledPays := func() int {
		es, err := rc.Do(ctx, rc.B().Xrange().Key(string(sharding.AppendEventsKey(nil, tag))).Start("-").End("+").Build()).AsXRange()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range es {
			if e.FieldValues["t"] == "pay" {
				n++
			}
		}
		return n
	}
	settled := func(phase string, since time.Time, after time.Duration) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			q, err := rc.Do(ctx, rc.B().Hget().Key(record).Field("q").Build()).ToString()
			if rueidis.IsRedisNil(err) && journaledPays() == 0 && s.app.Handler.RetriesPending() == 0 && time.Since(since) > after {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the order's request mark is %q (%v), %d pays journaled, %d voids queued; want none of them",
					phase, q, err, journaledPays(), s.app.Handler.RetriesPending())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	const pause = 1500 * time.Millisecond
	if err := node.Do(ctx, node.B().ClientPause().Timeout(pause.Milliseconds()).Write().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	t.Cleanup(func() { _ = node.Do(context.Background(), node.B().ClientUnpause().Build()).Error() })
	if code, body := s.do("POST", payPath, tok); code != 503 || body != `{"error":"UNAVAILABLE"}` {
		t.Fatalf("pay during the stall: %d %s", code, body)
	}
	if took := time.Since(paused); took > pause {
		t.Fatalf("the 503 took %v, longer than the stall: the budget did not hold", took)
	}
	settled("after the stall", paused, pause)

	// Redis away for the release budget and a little more: the void is
	// queued, and lands well within the relay's hold (1s) of the entry.
	s.counter.loseActs.Store(1)
	s.counter.voidsDown.Store(time.Now().Add(550 * time.Millisecond).UnixNano())
	if code, body := s.do("POST", payPath, tok); code != 503 || body != `{"error":"UNAVAILABLE"}` {
		t.Fatalf("pay whose reply was lost: %d %s", code, body)
	}
	lost := time.Now()
	if n := journaledPays(); n != 1 {
		t.Fatalf("%d pays journaled right after the lost reply, want the script's one", n)
	}
	settled("after the lost reply", lost, 0)
	for _, o := range []string{"stands", "gave_up"} {
		if n := counter(t, s, "flashsale_gateway_act_voids_total", o); n != 0 {
			t.Fatalf("act_voids_total{outcome=%q} = %v, want 0", o, n)
		}
	}
	if n := counter(t, s, "flashsale_gateway_act_voids_total", "voided"); n != 1 {
		t.Fatalf("act_voids_total{outcome=\"voided\"} = %v, want 1 (the lost reply's)", n)
	}

	// Past the relay's hold: the reservation was relayed, no pay was.
	time.Sleep(1500 * time.Millisecond)
	if got := typesOf(t, s.topic, placed.OrderID, 2*time.Second); got[orderevent.Reserved] != 1 || got[orderevent.Pay] != 0 {
		t.Fatalf("events of the order on the topic: %v; want its reservation and no pay", got)
	}
	if code, body := s.do("POST", payPath, tok); code != 202 {
		t.Fatalf("pay after the faults: %d %s", code, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := typesOf(t, s.topic, placed.OrderID, time.Second)
		if got[orderevent.Pay] == 1 {
			break
		}
		if got[orderevent.Pay] > 1 || time.Now().After(deadline) {
			t.Fatalf("events of the order on the topic: %v; want one pay", got)
		}
	}
}

// typesOf reads topic from the start for wait and counts the events of
// order id by type.
func typesOf(t *testing.T, topic, id string, wait time.Duration) map[orderevent.Type]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers()...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[orderevent.Type]int{}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if ev, err := orderevent.Decode(r.Value); err == nil && ev.OrderID.String() == id {
				out[ev.Type]++
			}
		})
	}
	return out
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
