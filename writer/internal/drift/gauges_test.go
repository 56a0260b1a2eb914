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
