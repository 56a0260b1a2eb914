package stock

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/rueidis"
)

// The Batcher's joining: the reservations of one slot in a batch sent as one
// reserve_many.lua call, and its reply split back per reservation.

// Joined returns how many reservations were sent joined with others.
func (b *Batcher) Joined() int64 { return b.joined.Load() }

// ReserveStats reports the reserve script calls sent (reserve.lua alone or
// reserve_many.lua) and the reservations they carried: their ratio is the
// reservations per call, what one call's fixed cost in Redis (its setup,
// the replica's MULTI/EXEC, the shared stock and buyer writes) is spread
// over.
func (b *Batcher) ReserveStats() (calls, reservations int64) {
	return b.reserveCalls.Load(), b.reservations.Load()
}

// maxJoin is the most reservations joined into one reserve_many.lua call.
const maxJoin = 64

var reserveManySHA = sha1Hex(joinedSrc)

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
		if u[0].keys != nil {
			b.reserveCalls.Add(1)
			b.reservations.Add(int64(len(u)))
		}
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
			keys = append(keys, c.keys...)
			if packArgs {
				args = append(args, strings.Join(c.args, packSep))
			} else {
				args = append(args, c.args...)
			}
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
			_ = n.Do(ctx, n.B().ScriptLoad().Script(joinedSrc).Build()).Error()
		}
	}()
}
