package app_test

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"flashsale/sharding"
	"flashsale/sharding/stock"
	"flashsale/writer/internal/drift"
)

// TestDriftSeesAPlantedOversell: the writer's online invariant is 0 for a
// fresh sale and with reservations still in the hand-off journal (in flight),
// and shows a planted oversell (two units too many written into a shard's
// stock) at once, as the gauge the oversell alarm watches.
func TestDriftSeesAPlantedOversell(t *testing.T) {
	stack(t)
	st, rs := newStores(t)
	s := newSale(t, st, rs, 2, 10)
	item := s.Items[0].ID
	reg := prometheus.NewRegistry()
	w := drift.New(drift.Config{Sales: []int64{s.ID}}, st.Pool(), rs, reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	read := func(want int64, what string) {
		t.Helper()
		if err := w.Once(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
		items, err := w.Sale(ctx, s.ID, time.Now())
		if err != nil || len(items) != 1 {
			t.Fatalf("%s: %v %v", what, items, err)
		}
		got := gaugeOf(t, reg, s.ID, item)
		if items[0].Drift != want || got != float64(want) {
			t.Fatalf("%s: drift %+v, gauge %v; want %d", what, items[0], got, want)
		}
		t.Logf("%s: %+v", what, items[0])
	}
	read(0, "fresh sale")
	for u := uint64(1); u <= 3; u++ {
		tag := s.Shards[sharding.HomeShard(u, s.ID, len(s.Shards))]
		now := time.Now()
		r, err := rs.Reserve(ctx, stock.Reservation{Tag: tag, SaleID: s.ID, ItemID: item, UserID: u, OrderID: sharding.NewOrderID(s.ID, u, rand.Uint32()),
			Attempt: rand.Uint64(), Created: now, Expires: now.Add(time.Minute), TTL: time.Hour})
		if err != nil || r.Outcome != stock.Reserved {
			t.Fatal(r, err)
		}
	}
	read(0, "three reservations in the hand-off journal")
	c := rs.Client()
	if err := c.Do(ctx, c.B().Incrby().Key(string(sharding.AppendStockKey(nil, s.Shards[0], item))).Increment(2).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	read(-2, "two units planted in a shard")
}

// gaugeOf reads the drift gauge of (sale, item) from reg.
func gaugeOf(t *testing.T, reg *prometheus.Registry, sale, item int64) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "flashsale_writer_stock_drift_units" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["sale"] == strconv.FormatInt(sale, 10) && labels["item"] == strconv.FormatInt(item, 10) {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no drift series for sale %d item %d", sale, item)
	return 0
}
