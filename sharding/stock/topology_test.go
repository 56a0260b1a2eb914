package stock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"flashsale/deploy/testenv"
	"flashsale/sharding/stock"
)

// TestFaultTopologyPastAFrozenNode: the node Topology asks first hangs with
// its connection open (SIGSTOP; for less than cluster-node-timeout, so
// nothing fails over). The reading gives it half of the time and then reads
// the slot map from another node, within a 300 ms deadline (a readiness
// check's or a Batcher's refresh), instead of spending all of it on the
// frozen node: after a master froze and its replica took over, the slot map
// must still be readable while the old master hangs.
func TestFaultTopologyPastAFrozenNode(t *testing.T) {
	_, c := newStore(t)
	ctx := context.Background()
	if _, err := stock.Topology(ctx, c); err != nil {
		t.Fatal(err)
	}
	frozen := testenv.RedisAddrs()[0]
	port := frozen[strings.LastIndex(frozen, ":")+1:]
	if _, ok := c.Nodes()[frozen]; !ok {
		t.Fatalf("the client has no connection to %s", frozen)
	}
	if err := testenv.Stack(t, "redis-freeze", port); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			_ = testenv.Stack(t, "redis-thaw", port)
		}
	}
	t.Cleanup(thaw)
	stock.AskFirst(frozen)
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	top, err := stock.Topology(rctx, c)
	took := time.Since(start)
	thaw()
	if err != nil {
		t.Fatalf("Topology with %s frozen and asked first: %v after %v", frozen, err, took)
	}
	if len(top.Masters) != 3 {
		t.Fatalf("Topology read %d masters, want 3", len(top.Masters))
	}
	if took < 100*time.Millisecond {
		t.Errorf("Topology took %v: the frozen node %s was not asked first", took, frozen)
	}
	t.Logf("slot map read past the frozen node %s in %v", frozen, took.Round(time.Millisecond))
}
