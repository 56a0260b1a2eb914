package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/sale"
)

type source struct {
	mu    sync.Mutex
	sales []*sale.Sale
	stock map[int64][]int64 // item -> per shard
}

func (s *source) Sales(context.Context) ([]*sale.Sale, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*sale.Sale(nil), s.sales...), nil
}

func (s *source) ReadStock(_ context.Context, _ *sale.Sale, item int64) ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.stock[item]...), nil
}

func testSale(id, version int64, shards int, start, end time.Time, items ...int64) *sale.Sale {
	s := &sale.Sale{ID: id, Name: "s", StartsAt: start, EndsAt: end, Shards: sharding.UniformTags(id, shards), Version: version}
	for _, it := range items {
		s.Items = append(s.Items, sale.Item{ID: it, Name: "i\u00e9\x01", Price: 5, Currency: "EUR", Quantity: 4})
	}
	return s
}

func TestRefreshKeepsFlagsUntilTheVersionChanges(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	src := &source{stock: map[int64][]int64{10: {0, 2}}}
	src.sales = []*sale.Sale{testSale(1, 1, 2, now.Add(-time.Hour), now.Add(time.Hour), 10)}
	c := New(src, Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := c.Refresh(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	it := c.Snapshot().Item(10)
	if it == nil || !it.Flags.ShardSoldOut(0) || it.Flags.SoldOut() || it.Flags.Remaining() != 2 {
		t.Fatal("first reading not applied")
	}
	var d struct {
		Status string
		Items  []struct{ Name string }
	}
	if err := json.Unmarshal(it.Sale.Description(), &d); err != nil || d.Status != "ACTIVE" || d.Items[0].Name != "i\u00e9\x01" {
		t.Fatalf("description %s: %v", it.Sale.Description(), err)
	}
	_ = c.Refresh(context.Background(), now)
	if c.Snapshot().Item(10).Flags != it.Flags {
		t.Fatal("same version: flags must be kept")
	}
	src.sales = []*sale.Sale{testSale(1, 2, 4, now.Add(-time.Hour), now.Add(time.Hour), 10)}
	src.stock[10] = []int64{1, 1, 1, 1}
	_ = c.Refresh(context.Background(), now)
	if it2 := c.Snapshot().Item(10); it2.Flags == it.Flags || it2.Flags.Shards() != 4 || it2.Flags.Any() {
		t.Fatal("a reshard must start fresh flags")
	}
	src.stock[10] = []int64{0, 0, 0, 0}
	_ = c.Refresh(context.Background(), now)
	if err := json.Unmarshal(c.Snapshot().Sale(1).Description(), &d); err != nil || d.Status != "SOLD_OUT" {
		t.Fatalf("status %q", d.Status)
	}
	src.sales = nil
	_ = c.Refresh(context.Background(), now)
	if c.Snapshot().Item(10) != nil || c.Snapshot().Sale(1) != nil {
		t.Fatal("a removed sale must disappear")
	}
}

func TestItemInTwoSalesPrefersTheOpenOne(t *testing.T) {
	now := time.Now()
	src := &source{stock: map[int64][]int64{10: {1}}}
	src.sales = []*sale.Sale{
		testSale(1, 1, 1, now.Add(-3*time.Hour), now.Add(-2*time.Hour), 10),
		testSale(2, 1, 1, now.Add(-time.Hour), now.Add(time.Hour), 10),
		testSale(3, 1, 1, now.Add(time.Hour), now.Add(2*time.Hour), 10),
	}
	c := New(src, Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	_ = c.Refresh(context.Background(), now)
	if got := c.Snapshot().Item(10).Sale.ID; got != 2 {
		t.Fatalf("serving sale %d, want 2", got)
	}
}

func TestPollClearsFlags(t *testing.T) {
	now := time.Now()
	src := &source{stock: map[int64][]int64{10: {0}}}
	src.sales = []*sale.Sale{testSale(1, 1, 1, now.Add(-time.Hour), now.Add(time.Hour), 10)}
	c := New(src, Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Poll: 10 * time.Millisecond, Refresh: time.Hour})
	_ = c.Refresh(context.Background(), now)
	it := c.Snapshot().Item(10)
	if !it.Flags.SoldOut() {
		t.Fatal("not flagged")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx)
	src.mu.Lock()
	src.stock[10] = []int64{1}
	src.mu.Unlock()
	deadline := time.Now().Add(2 * time.Second)
	for it.Flags.SoldOut() {
		if time.Now().After(deadline) {
			t.Fatal("poll never cleared the flag")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestDescriptionTimes: times with milliseconds (the page enables "buy" at
// startsAt), and queueOpensAt only for a sale with a pre-queue.
func TestDescriptionTimes(t *testing.T) {
	now := time.Now()
	start := time.Date(2026, 12, 1, 12, 0, 0, 250_000_000, time.UTC)
	plain := testSale(1, 1, 1, start, start.Add(time.Hour), 10)
	queued := testSale(2, 1, 1, start, start.Add(time.Hour), 20)
	queued.WaitingRoom = &sale.Room{PreQueue: sale.Duration(90 * time.Second)}
	src := &source{stock: map[int64][]int64{10: {4}, 20: {4}}, sales: []*sale.Sale{plain, queued}}
	c := New(src, Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := c.Refresh(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(c.Snapshot().Sale(1).Description(), &d); err != nil {
		t.Fatal(err)
	}
	if d["startsAt"] != "2026-12-01T12:00:00.250Z" || d["endsAt"] != "2026-12-01T13:00:00.250Z" || d["queueOpensAt"] != nil {
		t.Fatalf("plain sale: %v", d)
	}
	d = nil
	if err := json.Unmarshal(c.Snapshot().Sale(2).Description(), &d); err != nil {
		t.Fatal(err)
	}
	if d["queueOpensAt"] != "2026-12-01T11:58:30.250Z" {
		t.Fatalf("sale with a pre-queue: %v", d)
	}
}

// A sale's gauges go once its last payment window closed Linger ago, or once
// it left the catalog, and come back if it is current again; a sale loaded
// after it was over is forgotten at once (its first reading set its stock).
func TestForgetsTheGaugesOfSalesThatAreOver(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	live := testSale(1, 1, 2, now.Add(-time.Hour), now.Add(time.Hour), 10)
	past := testSale(2, 1, 2, now.Add(-3*time.Hour), now.Add(-2*time.Hour), 20, 21)
	src := &source{stock: map[int64][]int64{10: {1, 1}, 20: {0, 0}, 21: {1, 0}}, sales: []*sale.Sale{live, past}}
	var mu sync.Mutex
	forgot := map[int64][]int64{}
	gauged := map[int64]int{}
	stocked := map[int64]int{}
	c := New(src, Config{Linger: time.Minute, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		SaleGauge:  func(id int64, _, _ bool) { mu.Lock(); gauged[id]++; mu.Unlock() },
		StockGauge: func(_, item int64, _ []string, _ []int64) { mu.Lock(); stocked[item]++; mu.Unlock() },
		Forget: func(id int64, items []int64) {
			mu.Lock()
			defer mu.Unlock()
			if _, twice := forgot[id]; twice {
				t.Errorf("sale %d forgotten twice", id)
			}
			forgot[id] = items
		}})
	refresh := func(at time.Time) {
		t.Helper()
		if err := c.Refresh(context.Background(), at); err != nil {
			t.Fatal(err)
		}
	}
	refresh(now)
	refresh(now.Add(time.Second))
	if got := forgot[2]; len(got) != 2 || got[0] != 20 || got[1] != 21 {
		t.Fatalf("the sale over before it was loaded: forgotten with items %v, want [20 21]", got)
	}
	if gauged[2] != 0 || stocked[20] != 1 || gauged[1] != 2 {
		t.Fatalf("gauges set: sales %v, stock %v: want the over sale's stock read once and its sale gauge never", gauged, stocked)
	}
	if _, ok := forgot[1]; ok {
		t.Fatal("the live sale was forgotten")
	}
	// The live sale ends; its window is 10 minutes (the default): its gauges
	// stay until 11 minutes after the end.
	end := now.Add(time.Hour)
	refresh(end.Add(10 * time.Minute))
	if _, ok := forgot[1]; ok {
		t.Fatal("forgotten while its payment window was still open")
	}
	refresh(end.Add(11*time.Minute + time.Second))
	if got := forgot[1]; len(got) != 1 || got[0] != 10 {
		t.Fatalf("ended sale: forgotten with %v, want [10]", got)
	}
	// Moved later, it is gauged again; then it leaves the catalog.
	delete(forgot, 1)
	later := testSale(1, 2, 2, now.Add(-time.Hour), now.Add(3*time.Hour), 10)
	src.mu.Lock()
	src.sales = []*sale.Sale{later}
	src.mu.Unlock()
	n := gauged[1]
	refresh(end.Add(12 * time.Minute))
	if gauged[1] != n+1 {
		t.Fatal("a sale current again was not gauged again")
	}
	src.mu.Lock()
	src.sales = nil
	src.mu.Unlock()
	refresh(end.Add(13 * time.Minute))
	if got := forgot[1]; len(got) != 1 || got[0] != 10 {
		t.Fatalf("sale gone from the catalog: forgotten with %v, want [10]", got)
	}
}

// A sale the catalog serves anew (a new sale, a new layout) is handed to
// Prepare before any request can see it, so the gateway beats its fence
// there first; a sale whose version did not change is not handed again.
// A sale created with its start already past was once answered 503 for
// its first moments, its shards not yet beaten (issue 56).
func TestPrepareSeesANewSaleBeforeTheRequests(t *testing.T) {
	now := time.Now()
	src := &source{stock: map[int64][]int64{10: {1, 1}, 20: {1}}}
	src.sales = []*sale.Sale{testSale(1, 1, 2, now.Add(-time.Second), now.Add(time.Hour), 10)}
	var c *Catalog
	var prepared []string
	c = New(src, Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Prepare: func(_ context.Context, sales []*Sale) error {
		for _, s := range sales {
			if c.Snapshot().Sale(s.ID) != nil && c.Snapshot().Sale(s.ID).Version == s.Version {
				t.Errorf("sale %d version %d prepared after the requests could see it", s.ID, s.Version)
			}
			prepared = append(prepared, fmt.Sprintf("%d/%d:%d", s.ID, s.Version, len(s.Shards)))
		}
		return nil
	}})
	refresh := func() {
		t.Helper()
		if err := c.Refresh(context.Background(), now); err != nil {
			t.Fatal(err)
		}
	}
	refresh()
	refresh() // unchanged: not prepared again
	src.sales = append(src.sales, testSale(2, 1, 1, now.Add(-time.Second), now.Add(time.Hour), 20))
	refresh()
	src.sales[0] = testSale(1, 2, 4, now.Add(-time.Second), now.Add(time.Hour), 10) // resharded
	refresh()
	if got, want := strings.Join(prepared, " "), "1/1:2 2/1:1 1/2:4"; got != want {
		t.Fatalf("prepared %s, want %s", got, want)
	}
}
