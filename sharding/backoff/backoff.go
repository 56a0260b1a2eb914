// Package backoff is the one retry wait of the gateway, the writer and the
// journal relay: exponential, capped and jittered, and a sleep that ends with
// its context.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy doubles First per attempt up to Max. Each wait has a random part of
// up to half of it taken off: it never exceeds Max (a bound callers promise),
// is never near zero (full jitter would allow busy retries), and two
// processes do not retry in lockstep.
type Policy struct {
	First, Max time.Duration
}

// Wait returns the wait before retry attempt+1 (attempt counts from 0): a
// value in [d/2, d] for d = min(First << attempt, Max). A Policy with Max <= 0
// waits not at all.
func (p Policy) Wait(attempt int) time.Duration {
	if p.Max <= 0 {
		return 0
	}
	d := p.Max
	if attempt < 62 && p.First > 0 {
		if s := p.First << attempt; s > 0 && s < p.Max && s>>attempt == p.First {
			d = s
		}
	}
	return d/2 + rand.N(d/2+1)
}

// Sleep waits d or until ctx ends, and reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
