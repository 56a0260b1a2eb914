package scenario

import (
	"io"
	"testing"
	"time"

	"flashsale/bench/internal/config"
)

func cfg(t *testing.T, args ...string) *config.Config {
	t.Helper()
	c, err := config.Load(append([]string{"-dev", "-items", "1,2,3"}, args...), func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

func TestFlashCrowdArrivesWithinRamp(t *testing.T) {
	c := cfg(t, "-scenario", "flash-crowd", "-users", "20000", "-ramp", "2s", "-clicks", "1-3")
	p, err := Build(c, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	first := map[uint32]int64{}
	clicks := map[uint32]int{}
	var prev int64
	for _, a := range p.Actions {
		if a.At < prev {
			t.Fatal("actions not sorted by intended time")
		}
		prev = a.At
		if _, ok := first[a.User]; !ok || a.Click == 0 {
			first[a.User] = a.At
		}
		clicks[a.User]++
		if a.Item > 2 {
			t.Fatalf("item index %d", a.Item)
		}
	}
	if len(first) != 20000 {
		t.Fatalf("%d users arrived, want 20000", len(first))
	}
	within := 0
	for _, at := range first {
		if at < int64(2*time.Second) {
			within++
		}
	}
	if share := float64(within) / 20000; share < 0.93 || share > 0.97 {
		t.Errorf("%.3f of users arrive within the ramp, want about 0.95", share)
	}
	avg := float64(len(p.Actions)) / 20000
	if avg < 1.9 || avg > 2.1 {
		t.Errorf("%.2f clicks per user, want about 2", avg)
	}
	if p.Follow.Pay != 0.6 || p.Follow.Cancel != 0.1 || p.Follow.Retries != 3 || p.Follow.RetryRefusals {
		t.Errorf("follow-ups = %+v", p.Follow)
	}
}

func TestRetryStormRetriesEverythingAtOnce(t *testing.T) {
	p, err := Build(cfg(t, "-scenario", "retry-storm", "-users", "10", "-retries", "5"), 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if f := p.Follow; f.RetryFraction != 1 || f.Backoff != 0 || !f.RetryRefusals || f.Retries != 5 {
		t.Fatalf("follow-ups = %+v", f)
	}
}

func TestSteadyRate(t *testing.T) {
	p, err := Build(cfg(t, "-rate", "500", "-duration", "3s"), 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Stages) != 1 || p.Stages[0].For != 3*time.Second || p.Total() != 1500 || p.At(1499) != int64(2998*time.Millisecond) {
		t.Fatalf("plan = %+v total %d", p, p.Total())
	}
	p, err = Build(cfg(t, "-n", "100"), 3, 1)
	if err != nil || p.Total() != 100 || len(p.Stages) != 0 || p.Duration != 0 {
		t.Fatalf("closed plan = %+v, %v", p, err)
	}
}
