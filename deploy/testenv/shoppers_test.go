package testenv

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestShoppersStop: the workers run until Stop, which waits for them and may
// be called twice; a worker whose shop answers false ends by itself.
func TestShoppersStop(t *testing.T) {
	var calls, running atomic.Int64
	s := StartShoppers(t, 4, time.Millisecond, func() bool {
		running.Add(1)
		defer running.Add(-1)
		calls.Add(1)
		return true
	})
	for calls.Load() < 20 {
		time.Sleep(time.Millisecond)
	}
	s.Stop()
	s.Stop()
	after := calls.Load()
	time.Sleep(20 * time.Millisecond)
	if running.Load() != 0 || calls.Load() != after {
		t.Fatalf("after Stop: %d running, %d calls then %d", running.Load(), after, calls.Load())
	}

	var left atomic.Int64
	left.Store(10)
	done := StartShoppers(t, 3, 0, func() bool { return left.Add(-1) > 0 })
	deadline := time.Now().Add(5 * time.Second)
	for left.Load() > -2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	done.Stop() // returns: every worker has ended on its own
	if n := left.Load(); n != -2 {
		t.Fatalf("3 workers over 10 purchases made %d calls, want 12 (each stops at its first false)", 10-n)
	}
}
