package report

import (
	"strings"
	"testing"
	"time"

	"flashsale/bench/internal/load"
	"flashsale/sharding"
)

func shardResult(t *testing.T, start time.Time, user uint64, lat int64) *Result {
	t.Helper()
	rec := load.NewRecorder()
	for range 100 {
		_ = rec.Hist.RecordValue(lat)
		_ = rec.OutHist[load.OutGone].RecordValue(lat)
	}
	rec.Accepted = append(rec.Accepted, load.Accepted{Order: sharding.NewOrderID(1, user, 1), At: int64(500 * time.Millisecond)})
	r := Build(&load.Result{Start: start, Elapsed: 2 * time.Second, Recorder: rec, Conns: 4, Workers: 1}, Info{Items: []int64{9}, Quantity: []int64{2}})
	r.Scenario, r.URL, r.Status = "flash-crowd", "http://x", []Count{{Kind: "purchase", What: "410", Count: 100}}
	r.Finish()
	return r
}

// Merging adds counts and merges histograms (a 1ms shard and a 9ms shard
// give a p25 of 1ms and a p75 of 9ms, not an average), and places a shard
// that started later at its offset.
func TestMergeAddsAndAligns(t *testing.T) {
	t0 := time.Now()
	m, err := Merge([]*Result{shardResult(t, t0, 1, 1000), shardResult(t, t0.Add(time.Second), 2, 9000)}, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Responses != 200 || m.Conns != 8 || m.Winners != 2 || len(m.AcceptedOrders()) != 2 {
		t.Fatalf("responses %d, conns %d, winners %d, accepted %d", m.Responses, m.Conns, m.Winners, len(m.AcceptedOrders()))
	}
	h := decodeHist(m.Hist)
	if h.TotalCount() != 200 || h.ValueAtQuantile(25) > 1001 || h.ValueAtQuantile(75) < 8990 {
		t.Fatalf("merged histogram: count %d, p25 %d, p75 %d", h.TotalCount(), h.ValueAtQuantile(25), h.ValueAtQuantile(75))
	}
	if s := m.Sales[0]; s.FirstS != 0.5 || s.LastS != 1.5 || s.SoldOutS != 1.5 || m.Elapsed != 3 {
		t.Fatalf("sell-out %+v, elapsed %v: want the second shard's 202 at 1.5s", s, m.Elapsed)
	}
	if len(m.Meta.Shards) != 2 {
		t.Fatalf("merged runs %v", m.Meta.Shards)
	}
}

// Results of different runs are not merged.
func TestMergeRefusesDifferentRuns(t *testing.T) {
	a, b := shardResult(t, time.Now(), 1, 1000), shardResult(t, time.Now(), 2, 1000)
	b.SaleID = 7
	if _, err := Merge([]*Result{a, b}, []string{"a", "b"}); err == nil || !strings.Contains(err.Error(), "b ran flash-crowd against http://x (sale 7)") {
		t.Fatalf("merge of two sales: %v", err)
	}
	if _, err := Merge(nil, nil); err == nil {
		t.Fatal("merge of nothing")
	}
}
