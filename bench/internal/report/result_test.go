package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"flashsale/bench/internal/load"
	"flashsale/sharding"
)

// The first and last 202 are reported (the time to sell out), also when the
// workers' records arrive out of order.
func TestBuildReportsTheTimeToSellOut(t *testing.T) {
	rec := load.NewRecorder()
	for i, at := range []time.Duration{700 * time.Millisecond, 120 * time.Millisecond, 2 * time.Second, 450 * time.Millisecond} {
		rec.Accepted = append(rec.Accepted, load.Accepted{User: uint32(i), Order: sharding.NewOrderID(1, uint64(i), 1), At: int64(at)})
	}
	r := Build(&load.Result{Start: time.Now(), Elapsed: 3 * time.Second, Recorder: rec}, Info{LateBy: 10 * time.Millisecond, Items: []int64{7}, Quantity: []int64{4}})
	if r.Accepted != 4 || r.Winners != 4 || r.FirstAcceptedS != 0.12 || r.LastAcceptedS != 2 {
		t.Fatalf("accepted %d, winners %d, first %v, last %v", r.Accepted, r.Winners, r.FirstAcceptedS, r.LastAcceptedS)
	}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "first 202 at 0.120s, last at 2.000s") {
		t.Fatalf("text report lacks the sell-out times:\n%s", b.String())
	}
}
