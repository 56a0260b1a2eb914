package backoff

import (
	"context"
	"testing"
	"time"
)

// TestWaitBounds: attempt n waits within [d/2, d] for d = First doubled n
// times and capped at Max, also far past the point where the doubling
// overflows.
func TestWaitBounds(t *testing.T) {
	p := Policy{First: 5 * time.Millisecond, Max: 100 * time.Millisecond}
	caps := []time.Duration{5, 10, 20, 40, 80, 100, 100}
	for attempt, c := range caps {
		c *= time.Millisecond
		lo, hi := c, time.Duration(0)
		for range 2000 {
			d := p.Wait(attempt)
			lo, hi = min(lo, d), max(hi, d)
		}
		if lo < c/2 || hi > c {
			t.Errorf("attempt %d: waits in [%v, %v], want within [%v, %v]", attempt, lo, hi, c/2, c)
		}
		if hi-lo < c/4 {
			t.Errorf("attempt %d: waits in [%v, %v]: no jitter", attempt, lo, hi)
		}
	}
	for _, attempt := range []int{30, 61, 62, 63, 64, 1000, 1 << 30} {
		if d := p.Wait(attempt); d < p.Max/2 || d > p.Max {
			t.Errorf("attempt %d: wait %v, want within [%v, %v]", attempt, d, p.Max/2, p.Max)
		}
	}
	big := Policy{First: time.Hour, Max: 1<<63 - 1}
	if d := big.Wait(40); d < big.Max/2 {
		t.Errorf("overflowing doubling: wait %v, want the cap's half at least", d)
	}
	if d := (Policy{}).Wait(3); d != 0 {
		t.Errorf("zero policy waits %v", d)
	}
	if d := (Policy{Max: time.Second}).Wait(0); d < time.Second/2 || d > time.Second {
		t.Errorf("no First: wait %v, want the cap", d)
	}
}

func TestWaitAllocatesNothing(t *testing.T) {
	p := Policy{First: time.Millisecond, Max: time.Second}
	if n := testing.AllocsPerRun(1000, func() { _ = p.Wait(3) }); n != 0 {
		t.Fatalf("Wait allocates %v times", n)
	}
}

func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep of 1ms on a live context reported false")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep on a cancelled context reported true")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("Sleep on a cancelled context waited")
	}
}
