package httpapi

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// deadlines hands out the contexts that bound a purchase's Redis and Kafka
// calls. A context of its own per request costs an allocation and a runtime
// timer armed and stopped each time; instead every request starting within
// one step shares a context that expires budget after the first of them. A
// request's deadline is therefore between budget-step and budget after it
// starts, and a context is never cancelled early: it only expires.
type deadlines struct {
	budget, step time.Duration
	cur          atomic.Pointer[sharedDeadline]
	mu           sync.Mutex // serialises making the next context
}

type sharedDeadline struct {
	ctx    context.Context
	at     time.Time
	cancel context.CancelFunc // kept to satisfy the context contract; the deadline cancels
}

// newDeadlines returns deadlines of budget, shared over steps of budget/32
// (at most 10ms), so a request gets at least about 97% of its budget.
func newDeadlines(budget time.Duration) *deadlines {
	return &deadlines{budget: budget, step: min(budget/32, 10*time.Millisecond)}
}

// get returns a context expiring between budget-step and budget after now,
// and its deadline. It allocates only when it makes a new context (once per
// step at most, under load).
func (d *deadlines) get(now time.Time) (context.Context, time.Time) {
	if c := d.cur.Load(); c != nil && c.at.Sub(now) > d.budget-d.step {
		return c.ctx, c.at
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.cur.Load(); c != nil && c.at.Sub(now) > d.budget-d.step {
		return c.ctx, c.at
	}
	at := now.Add(d.budget)
	ctx, cancel := context.WithDeadline(context.Background(), at)
	d.cur.Store(&sharedDeadline{ctx: ctx, at: at, cancel: cancel})
	return ctx, at
}
