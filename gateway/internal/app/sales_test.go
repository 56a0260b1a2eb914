package app

import (
	"bytes"
	"context"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

// TestSalesSourceReadsEverySaleAndDecodesOnlyChanges checks the catalog's
// feed on the real Redis Cluster: every sale of the index comes back, a sale
// whose description did not change is the very value of the last refresh (not
// decoded again), a changed one is decoded again, a malformed description
// keeps the last good one (and is logged once), one that never loaded is
// skipped, a deleted one is gone, and a malformed index entry is skipped.
// The descriptions are read in one pipelined round trip: read one GET after
// another, 250 sales (a stack that had run a day of tests) took longer than
// the refresh's 1 s under the demo's crowd, every refresh failed, and the
// gateway stopped seeing new sales, changed windows and a reshard's new
// layout until the crowd was gone.
func TestSalesSourceReadsEverySaleAndDecodesOnlyChanges(t *testing.T) {
	c := testenv.NewRedis(t)
	st := stock.New(c)
	ctx := context.Background()
	var logs bytes.Buffer
	src := newSalesSource(st, slog.New(slog.NewTextHandler(&logs, nil)))

	now := time.Now().UTC().Truncate(time.Second)
	base := 1 + rand.Int64N(sharding.MaxSaleID-100)
	var ids []int64
	for i := range 40 {
		id := base + int64(i)
		ids = append(ids, id)
		s := &sale.Sale{ID: id, Name: "feed " + strconv.Itoa(i), StartsAt: now, EndsAt: now.Add(time.Hour),
			Items: []sale.Item{{ID: id*10 + 1, Quantity: 5}}, Shards: []string{"s" + strconv.FormatInt(id, 10) + ":0:0"}}
		if err := st.StoreSale(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	bad := base + 50 // in the index, never a valid description
	if err := c.Do(ctx, c.B().Set().Key(sharding.SaleKey(bad)).Value("{not json").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	idx := []string{strconv.FormatInt(bad, 10), "x" + strconv.FormatInt(base, 10)}
	if err := c.Do(ctx, c.B().Sadd().Key(sharding.SalesKey).Member(idx...).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, id := range append(ids, bad) {
			c.Do(ctx, c.B().Del().Key(sharding.SaleKey(id)).Build())
			c.Do(ctx, c.B().Srem().Key(sharding.SalesKey).Member(strconv.FormatInt(id, 10)).Build())
		}
		c.Do(ctx, c.B().Srem().Key(sharding.SalesKey).Member(idx[1]).Build())
	})

	first := mine(t, src, ids)
	if len(first) != len(ids) {
		t.Fatalf("first refresh: %d of our %d sales", len(first), len(ids))
	}
	for _, id := range ids {
		if first[id] == nil || first[id].Name == "" || len(first[id].Shards) != 1 {
			t.Fatalf("sale %d: %+v", id, first[id])
		}
	}
	if first[bad] != nil {
		t.Fatalf("a sale that never decoded was served: %+v", first[bad])
	}

	// Change one, break another, delete a third.
	changed := *first[ids[1]]
	changed.Name, changed.Version = "renamed", changed.Version+1
	if err := st.StoreSale(ctx, &changed); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, c.B().Set().Key(sharding.SaleKey(ids[2])).Value(`{"id": "two"}`).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, c.B().Del().Key(sharding.SaleKey(ids[3])).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		second := mine(t, src, ids)
		if second[ids[0]] != first[ids[0]] {
			t.Fatal("an unchanged sale was decoded again (a new value)")
		}
		if second[ids[1]] == first[ids[1]] || second[ids[1]].Name != "renamed" {
			t.Fatalf("the changed sale: %+v", second[ids[1]])
		}
		if second[ids[2]] != first[ids[2]] {
			t.Fatalf("a malformed description did not keep the last good one: %+v", second[ids[2]])
		}
		if _, ok := second[ids[3]]; ok || len(second) != len(ids)-1 {
			t.Fatalf("after a delete: %d sales, deleted one present %v", len(second), ok)
		}
	}
	out := logs.String()
	if n := strings.Count(out, "sale="+strconv.FormatInt(ids[2], 10)); n != 1 {
		t.Fatalf("the malformed sale was logged %d times, want once:\n%s", n, out)
	}
	for _, want := range []string{"sale=" + strconv.FormatInt(bad, 10), "sale=" + idx[1], "malformed id"} {
		if !strings.Contains(out, want) {
			t.Fatalf("log lacks %q:\n%s", want, out)
		}
	}
}

// mine runs one refresh of src and returns the sales of ids it served (the
// index is shared with other tests).
func mine(t *testing.T, src *salesSource, ids []int64) map[int64]*sale.Sale {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sales, err := src.Sales(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]bool{}
	for _, id := range ids {
		want[id] = true
	}
	out := map[int64]*sale.Sale{}
	for _, s := range sales {
		if want[s.ID] || s.ID == ids[0]+50 {
			out[s.ID] = s
		}
	}
	return out
}
