package pow

import (
	"math"
	"sync/atomic"
	"time"
)

// Level chooses the difficulty of new challenges: the larger of the sale's
// and the operator's (0 for both is off), raised with the arrival rate of
// challenge requests at this gateway.
//
// The rule: with Auto > 0 arrivals per second, a second with r > Auto
// arrivals raises the next second's challenges by 1 + floor(log2(r/Auto))
// bits (each doubling of the crowd doubles the work of every solver), at
// most MaxRaise bits and at most MaxDifficulty. The rate is the count of the
// last whole second, so the level follows a surge within a second and falls
// back one second after it.
type Level struct {
	Operator int     // operator's floor (-pow-difficulty), 0: none
	Auto     float64 // arrivals per second above which the level rises, 0: never
	MaxRaise int     // most bits added by the rate, default 8

	sec  atomic.Int64 // unix second being counted
	cur  atomic.Int64 // arrivals in it
	last atomic.Int64 // arrivals in the previous second
}

// Arrive counts one challenge request at now. It is lock-free.
func (l *Level) Arrive(now time.Time) {
	s := now.Unix()
	if old := l.sec.Load(); old != s && l.sec.CompareAndSwap(old, s) {
		n := l.cur.Swap(0)
		if old != s-1 {
			n = 0
		}
		l.last.Store(n)
	}
	l.cur.Add(1)
}

// Rate returns the arrivals of the last whole second before now.
func (l *Level) Rate(now time.Time) int64 {
	s := l.sec.Load()
	switch {
	case s == now.Unix():
		return l.last.Load()
	case s == now.Unix()-1:
		return l.cur.Load()
	}
	return 0
}

// For returns the difficulty of a sale asking for sale bits at now; 0 means
// no proof is asked.
func (l *Level) For(now time.Time, sale int) int {
	d := max(sale, l.Operator)
	if d <= 0 {
		return 0
	}
	if r := float64(l.Rate(now)); l.Auto > 0 && r > l.Auto {
		raise := 1 + int(math.Floor(math.Log2(r/l.Auto)))
		maxRaise := l.MaxRaise
		if maxRaise <= 0 {
			maxRaise = 8
		}
		d += min(raise, maxRaise)
	}
	return min(d, MaxDifficulty)
}
