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
//
// The Batcher's files: batch.go (lanes and calls), route.go (the slot map),
// ack.go (WAIT after writes), join.go (reserve_many.lua); its one lock and
// the lock-free states are written down in locksordering.txt.
type Batcher struct {
	c           rueidis.Client
	timeout     time.Duration
	lanes       []lane
	pool        sync.Pool
	route       atomic.Pointer[route]
	refreshing  atomic.Bool
	quit        chan struct{}
	closed      atomic.Bool
	sent        atomic.Int64 // commands sent
	batches     atomic.Int64 // DoMulti calls
	acks        int          // replicas a write waits for (WAIT), 0 for none
	ackTimeout  time.Duration
	short       atomic.Int64 // acknowledged writes that fell short of acks
	unconfirmed atomic.Int64 // acknowledged writes answered ErrUnconfirmed
	lone        atomic.Bool  // the last slot map reading found a single Redis (no cluster)
	joined      atomic.Int64 // reservations sent joined with others (reserve_many)
	loading     atomic.Bool  // a SCRIPT LOAD of reserve_many is under way
	// the reserve script calls sent and the reservations they carried
	reserveCalls, reservations atomic.Int64
}

// ErrBatcherClosed is returned by Do after Close.
var ErrBatcherClosed = errors.New("stock: batcher closed")

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
	cmd   rueidis.Completed // unset for a reservation (keys != nil) until it goes alone
	slot  uint16
	res   rueidis.RedisResult
	ack   bool         // a write answered only after the replicas acknowledged it
	acked int64        // replicas that did (WAIT's reply), -1 when not asked
	state atomic.Int32 // callWaiting, then callDone or callAbandoned
	done  chan struct{}
	// keys and args of a reserve.lua call that may be joined with others on
	// its slot into one reserve_many.lua call (nil for any other command)
	keys, args []string
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

// Close stops the lanes; a Do after it returns ErrBatcherClosed.
func (b *Batcher) Close() {
	if b.closed.CompareAndSwap(false, true) {
		close(b.quit)
	}
}

// Do sends cmd in the next batch of its lane and waits for the answer. When
// ctx ends first it returns ctx's error; a command still queued then is not
// sent, one already sent completes unobserved (an ambiguous outcome, as with
// rueidis's Do).
func (b *Batcher) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	res, _ := b.do(ctx, cmd, false, nil, nil)
	return res
}

// DoAck is Do for a write that must survive a failover: its batch is followed
// by WAIT on the same connection (see SetAcks), and the answer comes once the
// replicas acknowledged it or the wait timed out. acked is the number of
// replicas that did, -1 when SetAcks is off or the command failed. A write
// the master answered whose WAIT then failed comes back as ErrUnconfirmed.
func (b *Batcher) DoAck(ctx context.Context, cmd rueidis.Completed) (res rueidis.RedisResult, acked int64) {
	return b.do(ctx, cmd, b.acks > 0, nil, nil)
}

// DoReserve is DoAck for reserve.lua with keys and args: the Batcher sends
// it as one EVALSHA when it goes alone, or joins it with the other
// reservations of its batch on the same slot into one call of
// reserve_many.lua (see joinCalls), whose reply for this reservation is what
// reserve.lua would have replied.
func (b *Batcher) DoReserve(ctx context.Context, keys, args []string) (res rueidis.RedisResult, acked int64) {
	return b.do(ctx, rueidis.Completed{}, b.acks > 0, keys, args)
}

func (b *Batcher) do(ctx context.Context, cmd rueidis.Completed, ack bool, keys, args []string) (rueidis.RedisResult, int64) {
	if err := ctx.Err(); err != nil {
		return rueidis.NewErrorResult(err), -1
	}
	if ack && keys == nil {
		// rueidis recycles a command once it has its answer, and an
		// acknowledged write answered by a redirect is sent again (see send):
		// pinned, it stays this call's until the garbage collector takes it.
		// (A reservation's command is built anew for each sending.)
		cmd = cmd.Pin()
	}
	c := b.pool.Get().(*call)
	c.cmd, c.ack, c.acked, c.keys, c.args = cmd, ack, -1, keys, args
	if keys != nil {
		c.slot = sharding.Slot(keys[0]) // every key of a reservation shares one tag
	} else {
		c.slot = cmd.Slot()
	}
	c.state.Store(callWaiting)
	l := b.lane(c.slot)
	l.mu.Lock()
	// Checked under the lane's lock: Close sets closed before the worker
	// drains the lane under this lock, so a call either is drained or sees it.
	if b.closed.Load() {
		l.mu.Unlock()
		b.recycle(c)
		return rueidis.NewErrorResult(ErrBatcherClosed), -1
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
			return rueidis.NewErrorResult(ctx.Err()), -1
		}
		<-c.done // answered meanwhile
	}
	res, acked := c.res, c.acked
	b.recycle(c)
	return res, acked
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
			b.send(live, cmds)
			for i, c := range live {
				live[i] = nil
				if c.state.CompareAndSwap(callWaiting, callDone) {
					c.done <- struct{}{}
				} else {
					b.recycle(c)
				}
			}
		}
	}
}

// send runs one batch and leaves each call's result in it. Without writes to
// acknowledge it is one DoMulti through the cluster client. With them, each
// master's commands go to that master's own connection followed by WAIT, so
// that WAIT covers exactly those writes; a command redirected meanwhile (a
// slot moved, a failover) ran nowhere and is sent again on the new map.
func (b *Batcher) send(live []*call, cmds rueidis.Commands) {
	ack := false
	for _, c := range live {
		ack = ack || c.ack
	}
	b.sent.Add(int64(len(cmds)))
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	if !ack {
		b.batches.Add(1)
		cmds, units := b.joinCalls(live, cmds[:0])
		b.split(units, b.c.DoMulti(ctx, cmds...))
		return
	}
	pending := live
	for try := 0; len(pending) > 0; try++ {
		r := b.route.Load()
		groups := map[int][]*call{}
		for _, c := range pending {
			o := -1
			if r != nil {
				o = r.top.Owner(c.slot)
			}
			groups[o] = append(groups[o], c)
		}
		pending = pending[:0:0]
		for o, g := range groups {
			node, addr := b.c, ""
			var st *ackState
			if r != nil && o >= 0 && r.nodes[o] != nil {
				node, addr, st = r.nodes[o], r.top.Masters[o].Addr, r.acks[o]
			}
			redirected := b.sendAck(ctx, node, addr, st, g)
			if len(redirected) > 0 {
				b.refreshSoon()
				if try < 2 {
					pending = append(pending, redirected...)
				}
			}
		}
		if len(pending) > 0 {
			b.refresh() // a redirect: read the new map before sending again
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
	c.res, c.cmd, c.ack, c.keys, c.args = rueidis.RedisResult{}, rueidis.Completed{}, false, nil, nil
	b.pool.Put(c)
}
