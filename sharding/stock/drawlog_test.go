package stock_test

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/draw"
	"flashsale/sharding/draw/beacon"
)

// TestTwoGatewaysLogAStepOnce: two writers that read the same log and both
// saw the beacon missing append it once; the second is told the log moved
// on and gets it back. Before, the second re-read the log and appended its
// beacon after the first's, a silent redraw by the log's own rules, and
// every gateway's log stopped there (found by TestRaffleOverThreeGateways
// under load).
func TestTwoGatewaysLogAStepOnce(t *testing.T) {
	st, c := newStore(t)
	ctx := context.Background()
	id := randomSaleID()
	t.Cleanup(func() { _ = c.Do(context.Background(), c.B().Del().Key(sharding.RoomLogKey(id)).Build()).Error() })
	expire := time.Now().Add(time.Hour)
	r := beacon.Dev.RoundFor(time.Now())
	sig, _ := beacon.Dev.Sign(r)
	n := 3
	commit := &draw.Event{Event: draw.EventCommit, Commitment: draw.Commitment(draw.Hash{1}).String(), Chain: beacon.Dev.Hash, Round: r, HeadKey: draw.Hash{2}.String()}
	if _, ok, err := st.LogDrawEvent(ctx, id, commit, expire); err != nil || !ok {
		t.Fatalf("the commitment: %v %v", ok, err)
	}
	freeze := &draw.Event{Event: draw.EventFreeze, Root: draw.Hash{3}.String(), Count: &n, FrozenAt: time.Now().UnixMilli()}
	log, ok, err := st.LogDrawEvent(ctx, id, freeze, expire)
	if err != nil || !ok || len(log) != 2 {
		t.Fatalf("the freeze: %d entries, %v %v", len(log), ok, err)
	}
	seen := log // both gateways read this, and both see no beacon
	mk := func() *draw.Event {
		return &draw.Event{Event: draw.EventBeacon, Round: r, Signature: hex.EncodeToString(sig)}
	}
	first, ok1, err1 := st.AppendDrawEvent(ctx, id, seen, mk(), expire)
	second, ok2, err2 := st.AppendDrawEvent(ctx, id, seen, mk(), expire)
	if err1 != nil || err2 != nil || !ok1 || ok2 || len(first) != 3 || len(second) != 3 {
		t.Fatalf("two appends of the beacon: %v %v (%d), %v %v (%d)", ok1, err1, len(first), ok2, err2, len(second))
	}
	if _, err := draw.CheckLog(id, second); err != nil {
		t.Fatalf("the log after both: %v", err)
	}
	// An append after a log Redis no longer holds is refused too.
	forged := append(seen[:1:1], draw.Entry{Body: seen[1].Body, Hash: draw.Hash{9}})
	if _, ok, err := st.AppendDrawEvent(ctx, id, forged, &draw.Event{Event: draw.EventReveal, Seed: draw.Hash{1}.String()}, expire); err != nil || ok {
		t.Fatalf("an append after another log: %v %v", ok, err)
	}
}
