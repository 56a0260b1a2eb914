package drift

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A sale's series stay while its readings fail and go once a complete
// reading no longer shows it (its sale ended or left Redis).
func TestGaugesDropWhatNoReadingShows(t *testing.T) {
	g := newGauges(prometheus.NewRegistry())
	now := time.Now()
	rd := Reading{
		Items:  []Item{{Sale: 7, Item: 71, Drift: 0, Stock: []int64{3, 4}}},
		Shards: []Shard{{Sale: 7, Tag: "a", Backlog: 2, Oldest: "1-0"}, {Sale: 7, Tag: "b"}},
	}
	count := func() [4]int {
		return [4]int{testutil.CollectAndCount(g.drift), testutil.CollectAndCount(g.stock),
			testutil.CollectAndCount(g.backlog), testutil.CollectAndCount(g.age)}
	}
	r := g.begin()
	r.sale(rd, now)
	g.end(r, true)
	if c := count(); c != [4]int{1, 2, 2, 2} {
		t.Fatalf("after a reading: series %v, want [1 2 2 2]", c)
	}
	if v := testutil.ToFloat64(g.age.WithLabelValues("7", "a")); v < 1e9 {
		t.Fatalf("age of an entry from 1970: %v", v)
	}
	if v := testutil.ToFloat64(g.age.WithLabelValues("7", "b")); v != 0 {
		t.Fatalf("age of an empty journal: %v, want 0", v)
	}
	g.end(g.begin(), false)
	if c := count(); c != [4]int{1, 2, 2, 2} {
		t.Fatalf("after a failed reading: series %v, want them kept", c)
	}
	g.end(g.begin(), true)
	if c := count(); c != [4]int{} {
		t.Fatalf("after a complete reading without the sale: series %v, want none", c)
	}
}

// The live ledger: units per state sum to the quantity but for the drift,
// and the sale counts as settled once it is over with nothing pending or in
// flight (the alert FlashsaleLedgerUnbalanced watches drift only then).
func TestLedgerGauges(t *testing.T) {
	g := newGauges(prometheus.NewRegistry())
	it := Item{Sale: 7, Item: 71, Q: 10, S: 3, M: 1, J: 1, P: 5, Paid: 4, Stock: []int64{3}}
	for _, tc := range []struct {
		name    string
		rd      Reading
		settled float64
	}{
		{"selling", Reading{Items: []Item{it}}, 0},
		{"over with one pending and two in flight", Reading{Items: []Item{it}, Over: true}, 0},
		{"over and settled", Reading{Items: []Item{{Sale: 7, Item: 71, Q: 10, S: 6, P: 4, Paid: 4, Stock: []int64{6}}}, Over: true}, 1},
	} {
		r := g.begin()
		r.sale(tc.rd, time.Now())
		g.end(r, true)
		if v := testutil.ToFloat64(g.settled.WithLabelValues("7")); v != tc.settled {
			t.Errorf("%s: settled %v, want %v", tc.name, v, tc.settled)
		}
	}
	r := g.begin()
	r.sale(Reading{Items: []Item{it}}, time.Now())
	g.end(r, true)
	var sum float64
	for state, want := range map[string]float64{"paid": 4, "pending": 1, "unsold": 3, "in_flight": 2} {
		v := testutil.ToFloat64(g.ledger.WithLabelValues("7", "71", state))
		if v != want {
			t.Errorf("%s: %v, want %v", state, v, want)
		}
		sum += v
	}
	if sum != float64(it.Q) {
		t.Fatalf("the states sum to %v, want Q %d", sum, it.Q)
	}
}
