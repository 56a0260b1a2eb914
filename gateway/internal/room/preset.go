package room

import (
	"bytes"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"flashsale/sharding/draw"
)

// Preset installs st as sale s's admission state, with the draw of users
// frozen (each given a new nonce) and, when seed is not nil, revealed under
// it, as this gateway's ticks would have read and computed them; it returns
// the draw. It is for the tests of the packages that answer from a Room
// with no Redis (the ticket endpoint's): a gateway's state comes from Tick
// alone, and Preset must not run beside it.
func (r *Room) Preset(s *Sale, st State, users []uint64, seed *draw.Hash) *Frozen {
	es := make([]entrant, len(users))
	for i, u := range users {
		es[i] = entrant{user: u, nonce: draw.NewNonce()}
		es[i].leaf = draw.Leaf(s.ID, u, es[i].nonce)
	}
	slices.SortFunc(es, func(a, b entrant) int { return bytes.Compare(a.leaf[:], b.leaf[:]) })
	leaves := make([]draw.Hash, len(es))
	f := &Frozen{FrozenAt: time.Now(), index: make(map[uint64]int32, len(es))}
	for i := range es {
		leaves[i], f.index[es[i].user] = es[i].leaf, int32(i)
	}
	f.tree, f.leaves = draw.NewTree(leaves), leaves
	f.Root, f.Count = f.tree.Root(), len(es)
	if s.Commitment != nil {
		f.Commitment = *s.Commitment
	}
	if seed == nil {
		f.read = es
	} else {
		f.Revealed, f.Seed, f.Leaves = true, *seed, leaves
		f.Committed = s.Commitment != nil && draw.Commitment(*seed) == *s.Commitment
		f.Commitment = draw.Commitment(*seed)
		f.users, f.nonces = make([]uint64, len(es)), make([]draw.Nonce, len(es))
		for i := range es {
			f.users[i], f.nonces[i] = es[i].user, es[i].nonce
		}
		f.Draws, f.Places = draw.Places(*seed, f.Root, leaves)
		f.ID = draw.ID(s.ID, f.FrozenAt, &f.Published)
		f.pages = make([]atomic.Pointer[[]byte], len(leaves)/PageSize+1)
	}
	st.Frozen = f
	rooms := maps.Clone(*r.rooms.Load())
	if rooms[s.ID] == nil {
		rooms[s.ID] = &atomic.Pointer[State]{}
	}
	rooms[s.ID].Store(&st)
	r.rooms.Store(&rooms)
	return f
}
