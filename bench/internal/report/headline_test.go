package report

import (
	"strings"
	"testing"

	"flashsale/bench/internal/audit"
)

// The headline leads with what the sale did, then the answers, then whether
// the generator kept its schedule: a run behind it says so in words.
func TestHeadline(t *testing.T) {
	r := &Result{Mode: "open", Sent: 1000, Late: 3, LateBy: "10ms", MaxLateMs: 12,
		Sales:    []ItemSale{{ID: 7, Quantity: 100, Accepted: 100, SoldOutS: 0.42, FirstS: 0.01}},
		Outcomes: []Outcome{{Name: "202 accepted", Count: 100, Latency: Latency{P50: 1.5, P99: 9}}},
		Audit:    &audit.Report{Failures: []string{}}}
	var b strings.Builder
	if err := r.WriteHeadline(&b); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{"== item 7: 100 units sold out 0.420s after the start", "== audit PASS: oversold 0",
		"== answers: 202 accepted 100 (p50 1.5", "on schedule (0.3% of sends later than 10ms"} {
		if !strings.Contains(got, want) {
			t.Errorf("headline lacks %q:\n%s", want, got)
		}
	}
	r.Late, r.MaxLateMs = 800, 8260
	r.Audit.Failures = []string{"oversold 1"}
	b.Reset()
	_ = r.WriteHeadline(&b)
	for _, want := range []string{"== audit FAIL: oversold 1", "BEHIND its schedule: 80% of sends later than 10ms, up to 8"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("headline lacks %q:\n%s", want, b.String())
		}
	}
	if w := r.Warnings(); len(w) != 1 || !strings.Contains(w[0].Title, "fell behind") {
		t.Errorf("a generator late on its own: warnings %+v, want the generator's", w)
	}
}

// Late sends that waited for a connection while every one was busy are the
// target's pace, not the generator's: the headline and the warning say the
// crowd outpaced the target. The make demo run said "the generator fell
// behind" for a crowd the two cores could not serve in time.
func TestLateSendsThatWaitedForAConnection(t *testing.T) {
	r := &Result{Mode: "open", Sent: 1000, Late: 800, LateWaited: 790, LateBy: "10ms", MaxLateMs: 8260, Conns: 256,
		Timeline: []Second{{T: 0, Offered: 900, Done: 300}, {T: 1, Offered: 100, Done: 350}, {T: 2, Done: 350}}}
	var b strings.Builder
	if err := r.WriteHeadline(&b); err != nil {
		t.Fatal(err)
	}
	if want := "the crowd outpaced the target: it offered up to 900 requests in a second, the target answered at most 350; 80% of sends later than 10ms, up to 8.26s, 98.8% of them waiting for one of the 256 connections"; !strings.Contains(b.String(), want) {
		t.Errorf("headline lacks %q:\n%s", want, b.String())
	}
	if w := r.Warnings(); len(w) != 1 || w[0].Title != "The target did not keep up with the schedule" {
		t.Errorf("warnings %+v, want the target's pace", w)
	}
	r.LateWaited = 600 // a quarter late for the generator itself: its warning
	if w := r.Warnings(); len(w) != 1 || !strings.Contains(w[0].Title, "fell behind") {
		t.Errorf("warnings %+v with a quarter of the late sends the generator's, want the generator's", w)
	}
}
