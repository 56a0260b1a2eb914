package httpapi

import (
	"testing"
	"time"
)

func TestDeadlinesShareWithinAStep(t *testing.T) {
	d := newDeadlines(320 * time.Millisecond) // step 10ms
	now := time.Now()
	c1, at1 := d.get(now)
	if got := at1.Sub(now); got != 320*time.Millisecond {
		t.Fatalf("first deadline %v after now, want the full budget", got)
	}
	c2, at2 := d.get(now.Add(9 * time.Millisecond))
	if c2 != c1 || at2 != at1 {
		t.Fatal("a request within the step got a context of its own")
	}
	c3, at3 := d.get(now.Add(11 * time.Millisecond))
	if c3 == c1 || at3.Sub(now.Add(11*time.Millisecond)) != 320*time.Millisecond {
		t.Fatalf("a request past the step shares a context that leaves it %v", at1.Sub(now.Add(11*time.Millisecond)))
	}
	if dl, ok := c3.Deadline(); !ok || !dl.Equal(at3) {
		t.Fatalf("context deadline %v %v, want %v", dl, ok, at3)
	}
	if c1.Err() != nil {
		t.Fatal("a shared context was cancelled before its deadline")
	}
}

func TestDeadlinesExpire(t *testing.T) {
	d := newDeadlines(20 * time.Millisecond)
	ctx, _ := d.get(time.Now())
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the shared context never expired")
	}
	// The next request gets a fresh, live context.
	if ctx2, _ := d.get(time.Now()); ctx2.Err() != nil {
		t.Fatal("a request after expiry got an expired context")
	}
}

// Every request gets at least budget-step, also under concurrent use.
func TestDeadlinesConcurrent(t *testing.T) {
	d := newDeadlines(100 * time.Millisecond)
	done := make(chan time.Duration)
	for range 8 {
		go func() {
			least := time.Hour
			for range 2000 {
				now := time.Now()
				_, at := d.get(now)
				least = min(least, at.Sub(now))
			}
			done <- least
		}()
	}
	for range 8 {
		if least := <-done; least < d.budget-d.step {
			t.Errorf("a request got %v, want at least %v", least, d.budget-d.step)
		}
	}
}
