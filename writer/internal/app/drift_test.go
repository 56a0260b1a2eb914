package app_test

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
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
// stock) at once, as the gauge the oversell alarm watches. The same reading
// exports each shard's stock and journal backlog and oldest age.
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
		rd, err := w.Sale(ctx, s.ID, time.Now())
		if err != nil || len(rd.Items) != 1 || len(rd.Shards) != len(s.Shards) {
			t.Fatalf("%s: %+v %v", what, rd, err)
		}
		it := rd.Items[0]
		got := gaugeOf(t, reg, "flashsale_writer_stock_drift_units", s.ID, "item", strconv.FormatInt(item, 10))
		if it.Drift != want || got != float64(want) {
			t.Fatalf("%s: drift %+v, gauge %v; want %d", what, it, got, want)
		}
		var stockSum, backlog float64
		for i, tag := range s.Shards {
			n := gaugeOf(t, reg, "flashsale_writer_stock_units", s.ID, "item", strconv.FormatInt(item, 10), "shard", tag)
			if n != float64(it.Stock[i]) {
				t.Fatalf("%s: stock gauge of shard %s is %v, the reading %d", what, tag, n, it.Stock[i])
			}
			stockSum += n
			backlog += gaugeOf(t, reg, "flashsale_writer_journal_backlog", s.ID, "shard", tag)
		}
		if stockSum != float64(it.S) || backlog != float64(it.J) {
			t.Fatalf("%s: stock gauges sum to %v (S %d), backlog gauges to %v (J %d)", what, stockSum, it.S, backlog, it.J)
		}
		t.Logf("%s: %+v", what, it)
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
	time.Sleep(50 * time.Millisecond)
	if err := w.Once(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	oldest := 0.0
	for _, tag := range s.Shards {
		oldest = max(oldest, gaugeOf(t, reg, "flashsale_writer_journal_oldest_age_seconds", s.ID, "shard", tag))
	}
	if oldest < 0.05 || oldest > 10 {
		t.Fatalf("oldest journal entry %.3fs old, want its age (>= 50ms)", oldest)
	}
	c := rs.Client()
	if err := c.Do(ctx, c.B().Incrby().Key(string(sharding.AppendStockKey(nil, s.Shards[0], item))).Increment(2).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	read(-2, "two units planted in a shard")
	// A mangled journal entry fails the reading (the drift keeps its last
	// value), but the journal gauges still show the journal as it is.
	tag := s.Shards[0]
	before := gaugeOf(t, reg, "flashsale_writer_journal_backlog", s.ID, "shard", tag)
	if err := c.Do(ctx, c.B().Xadd().Key(string(sharding.AppendEventsKey(nil, tag))).Id("*").FieldValue().FieldValue("t", "reserved").FieldValue("i", "bogus").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := w.Once(ctx, time.Now()); err == nil || !strings.Contains(err.Error(), `has item "bogus"`) {
		t.Fatalf("a reading over a mangled entry: %v, want the entry named", err)
	}
	if after := gaugeOf(t, reg, "flashsale_writer_journal_backlog", s.ID, "shard", tag); after != before+1 {
		t.Fatalf("journal backlog gauge %v after a mangled entry was added to %v", after, before)
	}
	if got := gaugeOf(t, reg, "flashsale_writer_stock_drift_units", s.ID, "item", strconv.FormatInt(item, 10)); got != -2 {
		t.Fatalf("drift gauge %v after a failed reading, want its last value -2", got)
	}
	pub, err := rs.ReadDrifts(ctx, []int64{s.ID})
	if r, ok := pub[s.ID]; err != nil || !ok || r.Items[item] != -2 || time.Since(r.At) > time.Minute {
		t.Fatalf("the reading published for the gateways: %+v %v, want %d: -2", pub, err, item)
	}
}

// gaugeOf reads the gauge name of sale with the label pairs kv from reg.
func gaugeOf(t *testing.T, reg *prometheus.Registry, name string, sale int64, kv ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"sale": strconv.FormatInt(sale, 10)}
	for i := 0; i+1 < len(kv); i += 2 {
		want[kv[i]] = kv[i+1]
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue series
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s series with %v", name, want)
	return 0
}
