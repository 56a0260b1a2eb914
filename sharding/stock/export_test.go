package stock

import (
	"context"
	"strings"

	"github.com/redis/rueidis"
)

// Misroute points every master's batches at the next master's connection,
// as a slot map gone stale by a failover or a reshard would: each command is
// answered MOVED until the Batcher reads the map again.
func (b *Batcher) Misroute() {
	r := b.route.Load()
	if r == nil {
		return
	}
	n := len(r.nodes)
	m := &route{top: r.top, nodes: make([]rueidis.Client, n), acks: r.acks}
	for i := range r.nodes {
		m.nodes[i] = r.nodes[(i+1)%n]
	}
	b.route.Store(m)
}

// Unroute drops the Batcher's connections to the masters, keeping the slot
// map, as right after a failover before rueidis has connected to the new
// master: its batches go through the cluster client.
func (b *Batcher) Unroute() {
	r := b.route.Load()
	if r == nil {
		return
	}
	b.route.Store(&route{top: r.top, nodes: make([]rueidis.Client, len(r.nodes)), acks: r.acks})
}

// CopyCheck runs a reshard's read-back of its copy, as if buyers buyer
// fields, entries journal entries and the order records orders had been
// written to the new shard tag.
func (s *Store) CopyCheck(ctx context.Context, tag string, buyers, entries int64, orders []string) error {
	return s.copyCheck(ctx, map[string]*copied{tag: {buyers: buyers, entries: entries, orders: orders}})
}

// Routed reports whether every master's batches go to a connection to that
// master (asked for its port).
func (b *Batcher) Routed(ctx context.Context) bool {
	r := b.route.Load()
	if r == nil {
		return false
	}
	for i, m := range r.top.Masters {
		if r.nodes[i] == nil {
			return false
		}
		info, err := r.nodes[i].Do(ctx, r.nodes[i].B().Info().Section("server").Build()).ToString()
		if err != nil || !strings.Contains(info, "tcp_port:"+m.Addr[strings.LastIndexByte(m.Addr, ':')+1:]+"\r\n") {
			return false
		}
	}
	return true
}

// AskFirst makes Topology ask the node at addr first, as if it had answered
// the last reading.
func AskFirst(addr string) { lastAnswered.Store(addr) }

// ConfirmOwner runs confirmOwner for one applied write on slot, as if the
// master at addr had answered it and no replica had acknowledged it (through
// the cluster client when viaCluster).
func (b *Batcher) ConfirmOwner(ctx context.Context, viaCluster bool, addr string, slot uint16) error {
	return b.confirmOwner(ctx, viaCluster, addr, []*call{{ack: true, slot: slot}})
}

// Warmed reports whether every master of the route had its connection for
// WAIT opened (Batcher.warm).
func (b *Batcher) Warmed() bool {
	r := b.route.Load()
	if r == nil {
		return false
	}
	for _, st := range r.acks {
		if !st.warm.Load() {
			return false
		}
	}
	return true
}

// OwnerAgreed is ownerAgreed.
var OwnerAgreed = ownerAgreed

// JoinedLayout is joinedLayout for reservations given as reserve.lua's
// keys and args each: reserve_many.lua's keys and args for them.
func JoinedLayout(keys, args [][]string) ([]string, []string) {
	u := make([]*call, len(keys))
	for i := range keys {
		u[i] = &call{keys: keys[i], args: args[i]}
	}
	return joinedLayout(u)
}
