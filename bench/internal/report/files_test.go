package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"flashsale/bench/internal/load"
	"flashsale/sharding"
)

// result.json keeps the histograms: a result read back has the same
// percentiles, and its accepted orders.
func TestResultRoundTripKeepsHistograms(t *testing.T) {
	rec := load.NewRecorder()
	for i := int64(1); i <= 1000; i++ {
		_ = rec.Hist.RecordValue(i * 10)
		_ = rec.OutHist[load.OutGone].RecordValue(i * 10)
		_ = rec.OutUncorrected[load.OutGone].RecordValue(i)
	}
	rec.Accepted = append(rec.Accepted, load.Accepted{Order: sharding.NewOrderID(1, 2, 3), At: int64(time.Second)})
	r := Build(&load.Result{Start: time.Now(), Elapsed: time.Second, Recorder: rec}, Info{Items: []int64{9}, Quantity: []int64{1}})
	dir := t.TempDir()
	if _, err := r.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Outcomes) != 1 || back.Outcomes[0].Name != "410" || back.Outcomes[0].Latency.P99 != r.Outcomes[0].Latency.P99 {
		t.Fatalf("outcomes back %+v, written %+v", back.Outcomes, r.Outcomes)
	}
	h := decodeHist(back.Outcomes[0].Hist)
	if h == nil || h.TotalCount() != 1000 || h.ValueAtQuantile(50) != rec.OutHist[load.OutGone].ValueAtQuantile(50) {
		t.Fatalf("decoded histogram %v", h)
	}
	if got := back.AcceptedOrders(); len(got) != 1 || got[0].ItemID != 9 || got[0].Order != sharding.NewOrderID(1, 2, 3) {
		t.Fatalf("accepted orders back: %+v", got)
	}
	if back.Sales[0].SoldOutS != 1 {
		t.Fatalf("sold out at %v, want 1s", back.Sales[0].SoldOutS)
	}
}

// A result.json whose histogram is not an HdrHistogram encoding, or an
// accepted.tsv line that is not an order, is refused with a clear error.
func TestLoadRefusesMalformedFiles(t *testing.T) {
	dir := t.TempDir()
	h := hdrhistogram.New(1, 1000, 2)
	_ = h.RecordValue(5)
	r := &Result{Hist: encodeHist(h), Outcomes: []Outcome{{Name: "202", Hist: "SGVsbG8="}}}
	if _, err := r.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "histogram of outcome 202 is not an HdrHistogram encoding") {
		t.Fatalf("malformed histogram: %v", err)
	}
	r.Outcomes = nil
	if _, err := r.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, AcceptedFile), []byte("not-an-order\t7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "line 1: want <order id> TAB <item id>") {
		t.Fatalf("malformed accepted.tsv: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ResultFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "result.json") {
		t.Fatalf("malformed result.json: %v", err)
	}
}

// A run answered mostly 429 says why, and what to do.
func TestWarningsExplainA429Run(t *testing.T) {
	r := &Result{Mode: "closed", Status: []Count{{Kind: "purchase", What: "429", Count: 900}, {Kind: "purchase", What: "410", Count: 100}}}
	w := r.Warnings()
	if len(w) != 1 || !strings.Contains(w[0].Title, "rate limit") || !strings.Contains(w[0].Advice, "-trusted-proxies") {
		t.Fatalf("warnings %+v", w)
	}
	r.Status[0].Count = 10
	if w := r.Warnings(); len(w) != 0 {
		t.Fatalf("warnings for a run with 9%% 429: %+v", w)
	}
}
