package load

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"flashsale/sharding"
)

// sched is what a worker of either engine keeps besides its connections:
// its claim on the shared schedule, its follow-ups (retries, pays, cancels)
// and its recorder. Only its worker touches it (the portable worker under
// its lock).
type sched struct {
	e      *Engine
	sh     *shared
	start  time.Time
	follow []Action // min-heap on At
	rec    *Recorder

	pending    Action
	cur        Action // a follow-up being sent
	hasPending bool
	exhausted  bool
	stopping   bool
	stopAt     int64
	rng        uint64
}

func newSched(e *Engine, sh *shared, id int) sched {
	return sched{e: e, sh: sh, rec: NewRecorder(), rng: e.o.Seed*0x9e3779b97f4a7c15 + uint64(id) + 1, follow: make([]Action, 0, 1024)}
}

func (w *sched) base() *sched { return w }

func (w *sched) elapsed() int64 { return int64(time.Since(w.start)) }

// drained reports whether the worker has nothing left to send once its
// requests in flight are answered.
func (w *sched) drained() bool {
	return w.stopping || (w.exhausted && !w.hasPending && len(w.follow) == 0)
}

// checkStop notices the stop flag: queued work is dropped.
func (w *sched) checkStop(now int64) {
	if !w.stopping && w.sh.stop.Load() {
		w.stopping, w.stopAt = true, now
		w.follow = w.follow[:0]
		w.hasPending = false
	}
}

// waitUntil sleeps until t (zero: not at all); a t more than a second past
// is an error, as the run would start late on its own schedule.
func waitUntil(ctx context.Context, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	d := time.Until(t)
	if d < -time.Second {
		return fmt.Errorf("load: start time %s is %v in the past", t.Format(time.RFC3339Nano), -d.Round(time.Millisecond))
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// scheduleEnd is the intended time of the plan's last scheduled send, or -1
// when it has none (closed loop).
func scheduleEnd(p *Plan, total int64) int64 {
	switch {
	case len(p.Actions) > 0:
		return p.Actions[len(p.Actions)-1].At
	case p.Actions == nil && len(p.Stages) > 0 && total > 0:
		return p.at(p.global(total - 1))
	}
	return -1
}

// shared is the state workers share: the schedule cursor and the stop flag.
type shared struct {
	plan   *Plan
	total  int64
	closed bool
	end    int64 // scheduleEnd
	next   atomic.Int64
	_      [56]byte
	stop   atomic.Bool
}

// next returns the earliest action this worker could send and its intended
// time; it claims a scheduled action from the shared cursor when it holds
// none. The returned action is removed from the queue only when due.
func (w *sched) next(now int64) (*Action, int64, bool) {
	sh := w.sh
	if !w.hasPending && !w.exhausted && !w.stopping {
		if sh.closed && sh.plan.Duration > 0 && now >= int64(sh.plan.Duration) {
			w.exhausted = true
		} else if sh.end >= 0 && now > sh.end+int64(w.e.o.Drain) {
			w.exhausted = true // the rest is counted as unsent
		} else {
			i := sh.next.Add(1) - 1
			if sh.plan.action(i, sh.total, &w.pending) {
				w.hasPending = true
			} else {
				w.exhausted = true
				sh.next.Add(-1)
			}
		}
	}
	var fa int64 = -1
	if len(w.follow) > 0 {
		fa = w.follow[0].At
	}
	if w.hasPending {
		pa := w.pending.At
		if sh.closed {
			pa = now
		}
		if fa < 0 || pa <= fa {
			if pa <= now+int64(20*time.Microsecond) {
				w.hasPending = false
			}
			return &w.pending, pa, true
		}
	}
	if fa < 0 {
		return nil, 0, false
	}
	if fa <= now+int64(20*time.Microsecond) {
		w.cur = w.popFollow()
		return &w.cur, fa, true
	}
	return &w.follow[0], fa, true
}

// afterResponse records a winner and schedules what the user does next,
// from a response of status st with body and Retry-After seconds.
func (w *sched) afterResponse(a *Action, st int, body []byte, retryAfter int, now int64) {
	f := &w.sh.plan.Follow
	if a.Kind != Purchase {
		return
	}
	switch {
	case st == 202:
		if id, ok := sharding.ParseOrderID(jsonString(body, `"orderId"`)); ok {
			w.rec.Accepted = append(w.rec.Accepted, Accepted{User: a.User, Item: a.Item, Order: id, At: now})
			if a.Click > 0 || a.Try > 0 {
				// Only the first click's first answer decides what the user does
				// with the order; a replay answers with the same order.
				if w.decided(a) {
					return
				}
			}
			u := unit(uint64(a.User)*0x2545f4914f6cdd1d + 7)
			k := Kind(0)
			switch {
			case u < f.Pay:
				k = Pay
			case u < f.Pay+f.Cancel:
				k = Cancel
			default:
				return
			}
			next := Action{At: now + int64(f.Think) + int64(float64(f.Think)*w.rand()), User: a.User, Item: a.Item, Kind: k, Order: id}
			w.pushFollow(next)
		}
	case st == 429 || st == 503 || (f.RetryRefusals && (st == 410 || st >= 500)):
		w.retry(a, now, retryAfter)
	}
}

// decided reports whether the user already scheduled a pay or cancel; users
// click at most a few times, so a linear look at the recent winners is cheap.
func (w *sched) decided(a *Action) bool {
	acc := w.rec.Accepted
	for i := len(acc) - 2; i >= 0 && i >= len(acc)-64; i-- {
		if acc[i].User == a.User {
			return true
		}
	}
	return false
}

func (w *sched) afterFailure(a *Action, now int64) {
	if a.Kind == Purchase {
		w.retry(a, now, 0)
	}
}

func (w *sched) retry(a *Action, now int64, retryAfter int) {
	f := &w.sh.plan.Follow
	if w.stopping || int(a.Try) >= f.Retries || f.Retries == 0 {
		return
	}
	if f.RetryFraction < 1 && unit(uint64(a.User)*0x9e3779b97f4a7c15+3) >= f.RetryFraction {
		return
	}
	next := *a
	next.Try++
	next.At = now
	if f.Backoff > 0 {
		d := float64(f.Backoff) * float64(uint64(1)<<min(a.Try, 16)) * (0.5 + w.rand())
		next.At += int64(d)
	}
	if ra := int64(retryAfter) * int64(time.Second); next.At < now+ra {
		next.At = now + ra
	}
	w.rec.Retries++
	w.pushFollow(next)
}

// rand returns a pseudo-random number in [0,1) (xorshift64*).
func (w *sched) rand() float64 {
	w.rng ^= w.rng >> 12
	w.rng ^= w.rng << 25
	w.rng ^= w.rng >> 27
	return float64((w.rng*0x2545f4914f6cdd1d)>>11) / (1 << 53)
}

// unit maps x to [0,1) by a fixed mix, so the same user makes the same choice.
func unit(x uint64) float64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return float64(x>>11) / (1 << 53)
}

func (w *sched) pushFollow(a Action) {
	h := append(w.follow, a)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].At <= h[i].At {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	w.follow = h
}

// popFollow removes and returns the heap's minimum.
func (w *sched) popFollow() Action {
	h := w.follow
	n := len(h) - 1
	h[0], h[n] = h[n], h[0]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].At < h[l].At {
			m = r
		}
		if h[i].At <= h[m].At {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	w.follow = h[:n]
	return h[n]
}
