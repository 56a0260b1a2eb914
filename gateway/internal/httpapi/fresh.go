package httpapi

import (
	"context"
	"sync"
	"time"
)

// freshReader shares stock readings of one item among concurrent borrowers
// without serving anyone a reading older than its need: a caller joins the
// reading in flight only if that reading started after the caller's SOLD_OUT
// reply, else the next one, which starts when the one in flight ends. During a
// rush on dry shards hundreds of borrowers then cost a few readings (2*S
// commands each) instead of one each, and a refusal still rests on a reading
// taken after the shard answered SOLD_OUT.
type freshReader struct {
	mu   sync.Mutex
	cur  *readCall // in flight
	next *readCall // waiting for cur to end
}

type readCall struct {
	start time.Time // set when the reading is sent
	done  chan struct{}
	rem   []int64
	err   error
}

// read returns a reading that started at or after need, running fn for it
// (bounded by timeout) or joining another caller's. ctx bounds only this
// caller's wait.
func (f *freshReader) read(ctx context.Context, need time.Time, timeout time.Duration, fn func(context.Context) ([]int64, error)) ([]int64, error) {
	f.mu.Lock()
	switch {
	case f.cur != nil && !f.cur.start.Before(need):
		c := f.cur
		f.mu.Unlock()
		return c.wait(ctx)
	case f.cur != nil && f.next != nil:
		c := f.next
		f.mu.Unlock()
		return c.wait(ctx)
	case f.cur != nil:
		c := &readCall{done: make(chan struct{})}
		f.next = c
		prev := f.cur
		f.mu.Unlock()
		go func() {
			<-prev.done
			f.run(c, timeout, fn)
		}()
		return c.wait(ctx)
	}
	c := &readCall{done: make(chan struct{})}
	f.cur = c
	f.mu.Unlock()
	go f.run(c, timeout, fn)
	return c.wait(ctx)
}

// run sends c's reading; c must be f.cur or f.next with f.cur ending.
func (f *freshReader) run(c *readCall, timeout time.Duration, fn func(context.Context) ([]int64, error)) {
	f.mu.Lock()
	c.start = time.Now()
	f.cur = c
	if f.next == c {
		f.next = nil
	}
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	c.rem, c.err = fn(ctx)
	cancel()
	f.mu.Lock()
	if f.cur == c {
		f.cur = nil
	}
	f.mu.Unlock()
	close(c.done)
}

func (c *readCall) wait(ctx context.Context) ([]int64, error) {
	select {
	case <-c.done:
		return c.rem, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
