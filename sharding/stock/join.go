package stock

import (
	"context"
	"fmt"
	"strconv"

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
		if c.keys == nil || len(c.keys) != 7 || len(c.args) != 12 { // not a reservation, or one reserve.lua refuses
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
		keys, args := joinedLayout(u)
		cmds = append(cmds, b.c.B().Evalsha().Sha1(reserveManySHA).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
	}
	return cmds, units
}

// The positions, in reserve.lua's 7 keys and 12 arguments, of what the
// reservations of one shard share (a group of reserve_many.lua) and of what
// is each reservation's own.
var (
	groupKeys = [...]int{0, 1, 3, 4, 5, 6}
	groupArgs = [...]int{2, 5, 6, 7, 9, 10, 11}
	ownArgs   = [...]int{0, 1, 3, 4, 8}
)

// joinedLayout lays the reservations of u (reserve.lua's keys and args
// each) out as reserve_many.lua takes them: the keys and arguments that
// reservations share sent once per group, then each reservation's order key
// and own arguments, with its group's number (see reserve_many.lua).
func joinedLayout(u []*call) (keys, args []string) {
	var groups []*call // each group's first reservation
	at := make([]int, len(u))
	for i, c := range u {
		at[i] = -1
		for g, f := range groups {
			if sameGroup(f, c) {
				at[i] = g
				break
			}
		}
		if at[i] < 0 {
			at[i] = len(groups)
			groups = append(groups, c)
		}
	}
	keys = make([]string, 0, len(groupKeys)*len(groups)+len(u))
	args = make([]string, 0, 1+len(groupArgs)*len(groups)+(1+len(ownArgs))*len(u))
	args = append(args, strconv.Itoa(len(groups)))
	for _, f := range groups {
		for _, k := range groupKeys {
			keys = append(keys, f.keys[k])
		}
		for _, a := range groupArgs {
			args = append(args, f.args[a])
		}
	}
	for i, c := range u {
		keys = append(keys, c.keys[2])
		args = append(args, strconv.Itoa(at[i]+1))
		for _, a := range ownArgs {
			args = append(args, c.args[a])
		}
	}
	return keys, args
}

// sameGroup reports whether reservations a and b share their group's keys
// and arguments.
func sameGroup(a, b *call) bool {
	for _, k := range groupKeys {
		if a.keys[k] != b.keys[k] {
			return false
		}
	}
	for _, i := range groupArgs {
		if a.args[i] != b.args[i] {
			return false
		}
	}
	return true
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
