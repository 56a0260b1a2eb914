package stock

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"flashsale/sharding"
)

// Batcher sends the hot-path commands (the reserve script, buyer-record reads)
// to Redis in batches, one DoMulti each.
//
// rueidis batches the commands waiting in its queue when its writer runs; to
// make batches of more than one or two it sleeps MaxFlushDelay first, and a
// sub-millisecond sleep in an idle Go runtime lasts a whole millisecond (the
// netpoller waits in milliseconds). Under a closed-loop load every request
// then waits for the same sleeping batch, and throughput locks into a fraction
// of what the CPU allows. A Batcher batches without sleeping: each lane keeps
// one batch in flight, and the commands that arrive meanwhile form the next
// one, so a batch grows with the load and an idle lane sends a single command
// at once. Before taking a batch the lane's worker yields once
// (runtime.Gosched), so that handlers already runnable add their commands.
//
// There is one lane per master (from CLUSTER SLOTS, read again every few
// seconds), so a slow master delays only its own batches. The lane is only a
// choice of batch: rueidis still routes every command (a slot that moved
// since the last reading goes where it lives now), follows MOVED and ASK, and
// reconnects. Against a single Redis, or before the first reading, every
// command takes lane 0.
type Batcher struct {
	c       rueidis.Client
	timeout time.Duration
	lanes   []lane
	pool    sync.Pool
	route   atomic.Pointer[sharding.Topology]
	quit    chan struct{}
	closed  atomic.Bool
	sent    atomic.Int64 // commands sent
	batches atomic.Int64 // DoMulti calls
}

// ErrBatcherClosed is returned by Do after Close.
var ErrBatcherClosed = errors.New("stock: batcher closed")

// BatcherRefresh is how often a Batcher reads the cluster's slot map.
const BatcherRefresh = 5 * time.Second

type lane struct {
	mu    sync.Mutex
	queue []*call
	busy  bool
	wake  chan struct{}
	_     [64]byte // keep lanes on separate cache lines
}

// call is one command. Its state says who recycles it: the waiting caller
// after the answer, or the worker when the caller gave up first.
type call struct {
	cmd   rueidis.Completed
	res   rueidis.RedisResult
	state atomic.Int32 // callWaiting, then callDone or callAbandoned
	done  chan struct{}
}

const (
	callWaiting int32 = iota
	callDone
	callAbandoned
)

// NewBatcher returns a Batcher over c with up to maxLanes lanes (at least
// one): one per master, masters beyond maxLanes sharing. timeout bounds one
// batch, for the commands whose callers stopped waiting. Close stops it.
func NewBatcher(c rueidis.Client, maxLanes int, timeout time.Duration) *Batcher {
	if maxLanes < 1 {
		maxLanes = 1
	}
	if timeout <= 0 {
		timeout = time.Second
	}
	b := &Batcher{c: c, timeout: timeout, lanes: make([]lane, maxLanes), quit: make(chan struct{})}
	b.pool.New = func() any { return &call{done: make(chan struct{}, 1)} }
	for i := range b.lanes {
		l := &b.lanes[i]
		l.wake = make(chan struct{}, 1)
		go b.run(l)
	}
	b.refresh()
	go func() {
		t := time.NewTicker(BatcherRefresh)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				b.refresh()
			case <-b.quit:
				return
			}
		}
	}()
	return b
}

// refresh reads the slot map; on an error (a single Redis has none) it keeps
// the last one.
func (b *Batcher) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	if top, err := Topology(ctx, b.c); err == nil {
		b.route.Store(top)
	}
}

// Close stops the lanes; a Do after it returns ErrBatcherClosed.
func (b *Batcher) Close() {
	if b.closed.CompareAndSwap(false, true) {
		close(b.quit)
	}
}

// lane returns the lane of slot: its master's.
func (b *Batcher) lane(slot uint16) *lane {
	i := 0
	if t := b.route.Load(); t != nil {
		i = max(t.Owner(slot), 0)
	}
	return &b.lanes[i%len(b.lanes)]
}

// Do sends cmd in the next batch of its lane and waits for the answer. When
// ctx ends first it returns ctx's error; a command still queued then is not
// sent, one already sent completes unobserved (an ambiguous outcome, as with
// rueidis's Do).
func (b *Batcher) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if err := ctx.Err(); err != nil {
		return rueidis.NewErrorResult(err)
	}
	c := b.pool.Get().(*call)
	c.cmd = cmd
	c.state.Store(callWaiting)
	l := b.lane(cmd.Slot())
	l.mu.Lock()
	// Checked under the lane's lock: Close sets closed before the worker
	// drains the lane under this lock, so a call either is drained or sees it.
	if b.closed.Load() {
		l.mu.Unlock()
		b.recycle(c)
		return rueidis.NewErrorResult(ErrBatcherClosed)
	}
	l.queue = append(l.queue, c)
	start := !l.busy
	l.busy = true
	l.mu.Unlock()
	if start {
		l.wake <- struct{}{}
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		if c.state.CompareAndSwap(callWaiting, callAbandoned) {
			return rueidis.NewErrorResult(ctx.Err())
		}
		<-c.done // answered meanwhile
	}
	res := c.res
	b.recycle(c)
	return res
}

// Stats reports the commands sent and the batches they went in.
func (b *Batcher) Stats() (commands, batches int64) { return b.sent.Load(), b.batches.Load() }

// run is a lane's worker: it sends batches while commands keep coming and
// sleeps on wake once the lane is empty.
func (b *Batcher) run(l *lane) {
	var batch, live []*call
	var cmds rueidis.Commands
	for {
		select {
		case <-l.wake:
		case <-b.quit:
			b.drain(l)
			return
		}
		for {
			runtime.Gosched()
			l.mu.Lock()
			batch, l.queue = l.queue, batch[:0]
			if len(batch) == 0 {
				l.busy = false
				l.mu.Unlock()
				break
			}
			l.mu.Unlock()
			cmds, live = cmds[:0], live[:0]
			for i, c := range batch {
				batch[i] = nil
				if c.state.Load() == callAbandoned {
					b.recycle(c) // its caller is gone: not sent
					continue
				}
				cmds = append(cmds, c.cmd)
				live = append(live, c)
			}
			if len(cmds) == 0 {
				continue
			}
			b.sent.Add(int64(len(cmds)))
			b.batches.Add(1)
			ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
			res := b.c.DoMulti(ctx, cmds...)
			cancel()
			for i, c := range live {
				live[i] = nil
				c.res = res[i]
				if c.state.CompareAndSwap(callWaiting, callDone) {
					c.done <- struct{}{}
				} else {
					b.recycle(c)
				}
			}
		}
	}
}

// drain fails the commands left in a closed lane.
func (b *Batcher) drain(l *lane) {
	l.mu.Lock()
	q := l.queue
	l.queue = nil
	l.mu.Unlock()
	for _, c := range q {
		c.res = rueidis.NewErrorResult(ErrBatcherClosed)
		if c.state.CompareAndSwap(callWaiting, callDone) {
			c.done <- struct{}{}
		} else {
			b.recycle(c)
		}
	}
}

func (b *Batcher) recycle(c *call) {
	c.res, c.cmd = rueidis.RedisResult{}, rueidis.Completed{}
	b.pool.Put(c)
}
