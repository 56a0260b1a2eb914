package stock

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"flashsale/lua"
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
	joined      atomic.Int64 // reservations sent joined with others (reserve_many)
	loading     atomic.Bool  // a SCRIPT LOAD of reserve_many is under way
}

// route is the slot map and a client per master, read together.
type route struct {
	top   *sharding.Topology
	nodes []rueidis.Client // by master index; nil where rueidis has no connection
	acks  []*ackState      // by master index; a master keeps its own across refreshes
}

// ackOf returns the replica state the route holds for the master at addr,
// or a new one.
func (r *route) ackOf(addr string) *ackState {
	if r != nil {
		for i, m := range r.top.Masters {
			if m.Addr == addr {
				return r.acks[i]
			}
		}
	}
	return &ackState{}
}

// ackState is what a Batcher learned of one master's replicas from WAIT.
// After a WAIT that came back short (the master's replica is down or gone:
// it waited its whole timeout), the master's next batches go without WAIT,
// but for one every ackProbe that sees whether the replica is back. A
// master without its replica would otherwise hold every batch for the
// whole timeout (50 ms, up to 100 ms with Redis's timer resolution), and
// its purchases would queue past their budget into 503s. The writes are
// counted short either way, as they are.
type ackState struct {
	short atomic.Bool  // the last WAIT came back short
	probe atomic.Int64 // when the last WAIT was answered (unix ns)
}

const ackProbe = 250 * time.Millisecond

// ErrBatcherClosed is returned by Do after Close.
var ErrBatcherClosed = errors.New("stock: batcher closed")

// ErrUnconfirmed is the error of an acknowledged write (DoAck, DoReserve)
// that the master answered and whose WAIT then failed: the connection broke
// or the batch's time ran out before the replicas' count came. The master
// may have died before its replicas had the write, so a failover may or may
// not keep it: the outcome is unknown, as for a lost reply, and the caller
// settles it the same way (a void, or the idempotent request again). A WAIT
// that answers with too few replicas is not this: the master is alive and
// has the write (counted short, see Shortfalls).
var ErrUnconfirmed = errors.New("stock: write not confirmed (its WAIT failed: the master may be gone)")

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

// SetAcks makes every write sent with DoAck wait, after its batch, until n
// replicas of its master acknowledged it or timeout passed (WAIT n timeout,
// on the connection that carried the batch). n = 0 turns the wait off (a
// single Redis with no replica). Call it before the Batcher is used.
func (b *Batcher) SetAcks(n int, timeout time.Duration) {
	b.acks, b.ackTimeout = max(n, 0), max(timeout, time.Millisecond)
}

// Shortfalls returns how many acknowledged writes came back with fewer
// replicas than SetAcks asked for: they were applied by the master, and a
// failover before the replicas caught up could lose them.
func (b *Batcher) Shortfalls() int64 { return b.short.Load() }

// Unconfirmed returns how many acknowledged writes were answered
// ErrUnconfirmed.
func (b *Batcher) Unconfirmed() int64 { return b.unconfirmed.Load() }

// refresh reads the slot map and the per-master clients; on an error (a
// single Redis has no slot map) it keeps the last one.
func (b *Batcher) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	_, _ = b.reroute(ctx)
}

// reroute reads the slot map and routes the batches by it; it returns the
// new route, or nil and the error (the last route kept) when the map could
// not be read.
func (b *Batcher) reroute(ctx context.Context) (*route, error) {
	top, err := Topology(ctx, b.c)
	if err != nil {
		return nil, err
	}
	nodes := b.c.Nodes()
	old := b.route.Load()
	r := &route{top: top, nodes: make([]rueidis.Client, len(top.Masters)), acks: make([]*ackState, len(top.Masters))}
	for i, m := range top.Masters {
		r.nodes[i], r.acks[i] = nodes[m.Addr], old.ackOf(m.Addr)
	}
	b.route.Store(r)
	return r, nil
}

// Sync routes the batches by the slot map as it is now, and fails when a
// master it names has no connection yet. Readiness checks call it: after a
// failover the periodic refresh (BatcherRefresh) could still send a
// purchase's batch to the dead master for seconds after every master
// answered, so /readyz must not turn green before the route has the new
// one. Where there is no slot map (a single Redis answers CLUSTER SLOTS
// with an error) it does nothing; a slot map that could not be read (the
// node asked is down, the time ran out) fails, as the route may be stale.
func (b *Batcher) Sync(ctx context.Context) error {
	r, err := b.reroute(ctx)
	switch {
	case noSlotMap(err):
		return nil
	case err != nil:
		return fmt.Errorf("batcher: %w", err)
	}
	for i, m := range r.top.Masters {
		if r.nodes[i] == nil {
			return fmt.Errorf("batcher: no connection to master %s yet", m.Addr)
		}
	}
	return nil
}

// noSlotMap reports the error of CLUSTER SLOTS on a Redis that is not a
// cluster member ("ERR This instance has cluster support disabled").
func noSlotMap(err error) bool {
	var rerr *rueidis.RedisError
	return errors.As(err, &rerr) && strings.Contains(rerr.Error(), "cluster support disabled")
}

// refreshSoon reads the slot map again in the background, once at a time: a
// batch met a redirect or a broken connection.
func (b *Batcher) refreshSoon() {
	if b.refreshing.CompareAndSwap(false, true) {
		go func() {
			defer b.refreshing.Store(false)
			b.refresh()
		}()
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
	if r := b.route.Load(); r != nil {
		i = max(r.top.Owner(slot), 0)
	}
	return &b.lanes[i%len(b.lanes)]
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

// Joined returns how many reservations were sent joined with others.
func (b *Batcher) Joined() int64 { return b.joined.Load() }

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
			node := b.c
			var st *ackState
			if r != nil && o >= 0 && r.nodes[o] != nil {
				node, st = r.nodes[o], r.acks[o]
			}
			redirected := b.sendAck(ctx, node, st, g)
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

// sendAck sends g's commands to node followed by WAIT, and returns the calls
// whose command was redirected (it ran nothing), their result set to the
// redirect.
func (b *Batcher) sendAck(ctx context.Context, node rueidis.Client, st *ackState, g []*call) (redirected []*call) {
	b.batches.Add(1)
	cmds, units := b.joinCalls(g, make(rueidis.Commands, 0, len(g)+1))
	wait := b.waits(st)
	if node == b.c && !oneSlot(cmds) {
		// No connection of the master's own (a failover's new master,
		// before rueidis connects to it): through the cluster client a
		// keyless WAIT cannot go with writes to several slots (rueidis
		// panics on the mix), so these go unconfirmed and are counted short.
		wait = false
	}
	if wait {
		cmds = append(cmds, b.c.B().Wait().Numreplicas(int64(b.acks)).Timeout(b.ackTimeout.Milliseconds()).Build())
	}
	res := node.DoMulti(ctx, cmds...)
	var n int64 // no WAIT (see above and ackState): none acknowledged
	var unconfirmed error
	if wait {
		var err error
		if n, err = res[len(units)].AsInt64(); err != nil {
			unconfirmed = fmt.Errorf("%w: %w", ErrUnconfirmed, err)
			b.refreshSoon()
		} else if st != nil {
			st.short.Store(n < int64(b.acks))
			st.probe.Store(time.Now().UnixNano())
		}
	}
	b.split(units, res[:len(units)])
	for _, c := range g {
		if redirect(c.res.Error()) {
			redirected = append(redirected, c)
			continue
		}
		if c.ack && c.res.Error() == nil {
			if unconfirmed != nil {
				c.res = rueidis.NewErrorResult(unconfirmed)
				b.unconfirmed.Add(1)
				continue
			}
			c.acked = n
			if n < int64(b.acks) {
				b.short.Add(1)
			}
		}
	}
	return redirected
}

// noSlot is the slot rueidis gives a keyless command (its cmds.InitSlot).
const noSlot = 1 << 14

// oneSlot reports whether the keyed commands of cmds share one slot.
func oneSlot(cmds rueidis.Commands) bool {
	slot := uint16(noSlot)
	for _, c := range cmds {
		switch s := c.Slot(); {
		case s == noSlot:
		case slot == noSlot:
			slot = s
		case s != slot:
			return false
		}
	}
	return true
}

// waits reports whether a batch to the master of st is followed by WAIT: not
// while its replica is known missing, but for one batch every ackProbe (see
// ackState).
func (b *Batcher) waits(st *ackState) bool {
	if st == nil || !st.short.Load() {
		return true
	}
	now := time.Now().UnixNano()
	last := st.probe.Load()
	return now-last >= int64(ackProbe) && st.probe.CompareAndSwap(last, now)
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

// redirect reports whether err is a cluster redirect or refusal: the command
// ran nowhere.
func redirect(err error) bool {
	rerr, ok := rueidis.IsRedisErr(err)
	if !ok {
		return false
	}
	_, moved := rerr.IsMoved()
	_, ask := rerr.IsAsk()
	return moved || ask || rerr.IsTryAgain() || rerr.IsClusterDown()
}

func (b *Batcher) recycle(c *call) {
	c.res, c.cmd, c.ack, c.keys, c.args = rueidis.RedisResult{}, rueidis.Completed{}, false, nil, nil
	b.pool.Put(c)
}

// maxJoin is the most reservations joined into one reserve_many.lua call.
const maxJoin = 64

var reserveManySHA = sha1Hex(lua.ReserveMany)

// joinCalls appends to cmds one command per unit of calls and returns the
// units: a call alone, or the reservations (DoReserve) of one slot joined
// into one reserve_many.lua call. A reservation joins the open unit of its
// slot only while no other command on that slot came between them, so the
// commands on one slot still run in the order they were queued (a void or a
// buyer-record read queued between two reservations stays between them).
func (b *Batcher) joinCalls(calls []*call, cmds rueidis.Commands) (rueidis.Commands, [][]*call) {
	units := make([][]*call, 0, len(calls))
	var open map[uint16]int // slot -> index of its open unit of reservations
	for _, c := range calls {
		slot := c.slot
		if c.keys == nil {
			if open != nil {
				delete(open, slot)
			}
			units = append(units, []*call{c})
			continue
		}
		if i, ok := open[slot]; ok && len(units[i]) < maxJoin {
			units[i] = append(units[i], c)
			continue
		}
		if open == nil {
			open = map[uint16]int{}
		}
		open[slot] = len(units)
		units = append(units, []*call{c})
	}
	for _, u := range units {
		if c := u[0]; len(u) == 1 {
			if c.keys != nil {
				c.cmd = b.c.B().Evalsha().Sha1(reserveScript.sha).Numkeys(int64(len(c.keys))).Key(c.keys...).Arg(c.args...).Build()
			}
			cmds = append(cmds, c.cmd)
			continue
		}
		b.joined.Add(int64(len(u)))
		var nk, na int
		for _, c := range u {
			nk, na = nk+len(c.keys), na+len(c.args)
		}
		keys, args := make([]string, 0, nk), make([]string, 0, na)
		for _, c := range u {
			keys, args = append(keys, c.keys...), append(args, c.args...)
		}
		cmds = append(cmds, b.c.B().Evalsha().Sha1(reserveManySHA).Numkeys(int64(nk)).Key(keys...).Arg(args...).Build())
	}
	return cmds, units
}

// split leaves in each call of units its result out of res (one per unit).
// A joined unit's reply is one element per reservation; an error for the
// whole call (NOSCRIPT, a redirect, a lost connection) is each reservation's.
// A NOSCRIPT loads reserve_many.lua again in the background; meanwhile the
// callers fall back to EVAL of reserve.lua (see Store.evalAck).
func (b *Batcher) split(units [][]*call, res []rueidis.RedisResult) {
	for i, u := range units {
		if len(u) == 1 {
			u[0].res = res[i]
			continue
		}
		arr, err := res[i].ToArray()
		switch {
		case err != nil:
			if rerr, ok := rueidis.IsRedisErr(err); ok && rerr.IsNoScript() {
				b.loadJoinedSoon()
			}
			for _, c := range u {
				c.res = res[i]
			}
		case len(arr) != len(u):
			bad := rueidis.NewErrorResult(fmt.Errorf("reserve_many replied %d elements for %d reservations", len(arr), len(u)))
			for _, c := range u {
				c.res = bad
			}
		default:
			for j, c := range u {
				c.res = rueidis.NewResult(arr[j], nil)
			}
		}
	}
}

// loadJoinedSoon loads reserve_many.lua on every node in the background,
// once at a time: a restarted or new master answered NOSCRIPT. (A SCRIPT
// LOAD through the cluster client would reach one node at random.)
func (b *Batcher) loadJoinedSoon() {
	if !b.loading.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer b.loading.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		defer cancel()
		for _, n := range b.c.Nodes() {
			_ = n.Do(ctx, n.B().ScriptLoad().Script(lua.ReserveMany).Build()).Error()
		}
	}()
}
