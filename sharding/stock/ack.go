package stock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"flashsale/sharding"
)

// The Batcher's acknowledged writes: the WAIT after a batch of writes, and
// what it learned of each master's replicas.

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
	// warm: a WAIT went through this master's connection for blocking
	// commands (rueidis opens it on first use), see Batcher.Sync.
	warm atomic.Bool
}

const ackProbe = 250 * time.Millisecond

// ErrUnconfirmed is the error of an acknowledged write (DoAck, DoReserve)
// that the master answered and whose WAIT then failed: the connection broke
// or the batch's time ran out before the replicas' count came. The master
// may have died before its replicas had the write, so a failover may or may
// not keep it: the outcome is unknown, as for a lost reply, and the caller
// settles it the same way (a void, or the idempotent request again). A WAIT
// that answers with too few replicas is not this: the master is alive and
// has the write (counted short, see Shortfalls).
var ErrUnconfirmed = errors.New("stock: write not confirmed (its WAIT failed: the master may be gone)")

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

// sendAck sends g's commands to node followed by WAIT, and returns the calls
// whose command was redirected (it ran nothing), their result set to the
// redirect.
func (b *Batcher) sendAck(ctx context.Context, node rueidis.Client, addr string, st *ackState, g []*call) (redirected []*call) {
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
	if unconfirmed == nil && n < int64(b.acks) && anyWritten(g) {
		// Short: the write is on the master alone. It stands only if the
		// master still owns its slots (see confirmOwner).
		if err := b.confirmOwner(ctx, node == b.c, addr, g); err != nil {
			unconfirmed = fmt.Errorf("%w: %w", ErrUnconfirmed, err)
			b.refreshSoon()
		}
	}
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

// anyWritten reports whether an acknowledged write of g was applied (answered
// without an error and not redirected).
func anyWritten(g []*call) bool {
	for _, c := range g {
		if c.ack && c.res.Error() == nil {
			return true
		}
	}
	return false
}

// confirmOwner decides whether the writes of g that the master at addr
// applied and no replica acknowledged may stand: only if other masters,
// enough to include one that took part in any failover of addr (see
// ownerAgreed), name it the owner of their slots now, after the writes,
// and no node names another.
//
// A short WAIT usually means the master's replica is down, and the writes
// stand on the master alone until it is back (the sale goes on meanwhile).
// But a master frozen past its failover (a SIGSTOP, a long stall, a
// partition from the other masters) wakes up still believing it owns its
// slots, until the cluster's gossip tells it otherwise: a client that asked
// it for the slot map, or one cut off from the promoted replica, sends it
// writes meanwhile. It applies them, its WAIT comes back short (its replica
// is a master now), and a moment later it turns replica and drops them for
// the promoted one's data: a 202 answered then would be lost, with its
// journal entry and buyer record. The promotion needed the votes of a
// majority of the masters, which learn the new owner with it; a replica,
// or a node behind on gossip, may still name the demoted master. So the
// masters are asked, not the first node that answers. A write sent through
// the cluster client (no connection of the master's own yet) cannot be
// placed on a node, so it is not confirmed either, except on a single
// Redis (no slot map: nothing can promote another node over it).
func (b *Batcher) confirmOwner(ctx context.Context, viaCluster bool, addr string, g []*call) error {
	if viaCluster || addr == "" {
		if b.lone.Load() {
			return nil
		}
		return errors.New("stock: a write no replica acknowledged went through the cluster client: its node is unknown")
	}
	var slots []uint16
	for _, c := range g {
		if c.ack {
			slots = append(slots, c.slot)
		}
	}
	return ownerAgreed(addr, b.askSlots(ctx, addr), slots)
}

// askSlots asks every node but addr for its slot map at once, each within
// ownerAsk, and returns the answers by node (a node that did not answer, or
// answered a map that does not parse, is left out).
func (b *Batcher) askSlots(ctx context.Context, addr string) map[string]*sharding.Topology {
	nodes := b.c.Nodes()
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := make(map[string]*sharding.Topology, len(nodes))
	for other, node := range nodes {
		if other == addr {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			nctx, cancel := context.WithTimeout(ctx, ownerAsk)
			defer cancel()
			arr, err := node.Do(nctx, b.c.B().ClusterSlots().Build()).ToArray()
			if err != nil {
				return
			}
			if top, err := parseSlots(arr); err == nil {
				mu.Lock()
				out[other] = top
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

// ownerAgreed judges the answers of askSlots for a write on slots that
// the master at addr applied alone: refused when any node names another
// owner of a slot, confirmed when at least half the masters, not counting
// addr, answered and name it (a node counts as a master when its own
// answer lists it as one). A failover of addr needs the votes of a
// majority of the masters; addr's own cannot be among them, so any half of
// the others, rounded down, holds one that voted.
func ownerAgreed(addr string, answers map[string]*sharding.Topology, slots []uint16) error {
	masters, agreed := 0, 0
	for _, other := range slices.Sorted(maps.Keys(answers)) {
		top := answers[other]
		for _, slot := range slots {
			if o := top.Owner(slot); o < 0 || top.Masters[o].Addr != addr {
				return fmt.Errorf("stock: %s answered a write no replica acknowledged, but %s names another owner of slot %d", addr, other, slot)
			}
		}
		masters = max(masters, len(top.Masters))
		if slices.ContainsFunc(top.Masters, func(m sharding.Master) bool { return m.Addr == other }) {
			agreed++
		}
	}
	if need := masters / 2; masters == 0 || agreed < need || agreed == 0 {
		return fmt.Errorf("stock: %s answered a write no replica acknowledged, and %d other masters of %d confirmed its slots (want %d)",
			addr, agreed, masters, max(need, 1))
	}
	return nil
}

// ownerAsk bounds confirmOwner's question to one node.
const ownerAsk = 200 * time.Millisecond
