package stock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"flashsale/sharding"
)

// The Batcher's routing: the slot map read from the cluster, a lane per
// master, and the redirections that make it read the map again.

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

// BatcherRefresh is how often a Batcher reads the cluster's slot map.
const BatcherRefresh = 5 * time.Second

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
		if noSlotMap(err) {
			b.lone.Store(true)
		}
		return nil, err
	}
	b.lone.Store(false)
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
// one. It also opens each master's connection for WAIT (warm). Where there is no slot map (a single Redis answers CLUSTER SLOTS
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
		if err := b.warm(ctx, r.nodes[i], r.acks[i]); err != nil {
			return fmt.Errorf("batcher: master %s: %w", m.Addr, err)
		}
	}
	return nil
}

// warm sends one WAIT through node's connection for blocking commands the
// first time, so that the first batch after a start does not open it: a
// batch's WAIT goes there, and rueidis dials it (TCP, TLS, HELLO) on first
// use, inside a purchase's budget, on a machine busy with the sale's first
// second.
func (b *Batcher) warm(ctx context.Context, node rueidis.Client, st *ackState) error {
	if b.acks == 0 || st.warm.Load() {
		return nil
	}
	cmd := b.c.B().Wait().Numreplicas(0).Timeout(1).Build()
	if err := node.DoMulti(ctx, cmd)[0].Error(); err != nil {
		return fmt.Errorf("opening the connection for WAIT: %w", err)
	}
	st.warm.Store(true)
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

// lane returns the lane of slot: its master's.
func (b *Batcher) lane(slot uint16) *lane {
	i := 0
	if r := b.route.Load(); r != nil {
		i = max(r.top.Owner(slot), 0)
	}
	return &b.lanes[i%len(b.lanes)]
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
