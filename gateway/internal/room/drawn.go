package room

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"flashsale/lua"
	"flashsale/sharding"
	"flashsale/sharding/draw"
	"flashsale/sharding/draw/beacon"
)

// The verifiable draw (package draw; SPEC "Fair access"), as this package
// runs it:
//
//  1. Entry: room_join.lua keeps each entrant's nonce (crypto/rand, drawn by
//     the gateway, handed to that user alone) in the entrants' shard of the
//     user.
//  2. Freeze: FreezeAfter past the close, every gateway's tick reads all the
//     entrants, computes their leaves and the Merkle root, and calls
//     room_freeze.lua: the first call records root and count, the others
//     must find the same (a gateway that reads otherwise serves no place).
//     From then on the gateway knows every entrant: one who asks without
//     their pass is told they are entered and wait for the draw, a
//     raffle's non-entrant ENTRIES_CLOSED, with no Redis call.
//  3. Reveal: RevealDelay after the freeze the script copies the seed into
//     the state; each gateway checks it against the sale's commitment
//     (refusing a seed that is not the committed one), computes every
//     entrant's draw and place, and serves places from that table: no
//     Redis call per poll, and a user who lost their pass keeps their place.
//
// Both steps happen before admission starts (AdmitsFrom is Grace after the
// close), so the first admission already follows the published draw.

// FreezeAfter is how long after the close the entrants are read: every join
// that started before the close has been answered by Redis by then.
const FreezeAfter = 200 * time.Millisecond

// RevealDelay is how long the root is public before the seed is.
const RevealDelay = 100 * time.Millisecond

var freezeScript = rueidis.NewLuaScript(lua.RoomFreeze)

// Frozen is a sale's draw once frozen: root and count, then, once
// Revealed, the seed and each entrant's draw and place. It is immutable.
type Frozen struct {
	draw.Published
	Revealed bool
	// ID is the revealed draw's address (draw.ID): its pages and entries
	// are served under it, immutable.
	ID draw.Hash
	// Committed: the seed is the one whose commitment the sale published at
	// its creation (false for a sale created without one).
	Committed bool
	FrozenAt  time.Time
	users     []uint64 // of each leaf
	nonces    []draw.Nonce
	index     map[uint64]int32 // user -> leaf
	// pages caches the answers of GET .../draw once revealed, one per page
	// of PageSize entries (PageBody); they never change.
	pages []atomic.Pointer[[]byte]
	// read is the frozen reading of the entrants, kept until the reveal.
	read   []entrant
	tree   *draw.Tree  // of the sorted leaves, for the proofs (from the freeze)
	leaves []draw.Hash // the sorted leaves (Published.Leaves once revealed)
	// Sealed draws: the signed tree head (from the freeze) and the beacon
	// round once recorded and verified (Published.Beacon); when this
	// gateway last asked for the round.
	Head        *draw.Head
	HeadSig     []byte
	beaconAsked time.Time
	refusedSig  []byte // the recorded round last refused
	// Log is the draw's log as last read (checked), logged the number of
	// its entries this gateway saw last and when.
	Log      []draw.Entry
	logState *draw.LogState
	logRead  time.Time
}

// entrants returns the reading a frozen, unrevealed draw was made from, or
// nil.
func (f *Frozen) entrants() []entrant {
	if f == nil || f.Revealed {
		return nil
	}
	return f.read
}

// PageSize is the most entries one page of the published draw holds.
const PageSize = 10_000

// PageBody returns the cached body of page k (entries from k x PageSize) of
// the revealed draw, building it with build the first time; false when
// there is no such page.
func (f *Frozen) PageBody(k int, build func() []byte) ([]byte, bool) {
	if k < 0 || k >= len(f.pages) {
		return nil, false
	}
	if b := f.pages[k].Load(); b != nil {
		return *b, true
	}
	b := build()
	f.pages[k].Store(&b)
	return b, true
}

// Entered reports whether user is among the frozen entrants, from the
// freeze on (before the reveal too). It allocates nothing.
func (f *Frozen) Entered(user uint64) bool {
	_, ok := f.index[user]
	return ok
}

// Place returns user's place in the revealed draw, or 0 when the user did
// not enter (or the draw is not revealed). It allocates nothing.
func (f *Frozen) Place(user uint64) int64 {
	if i, ok := f.index[user]; ok && f.Revealed {
		return int64(f.Places[i])
	}
	return 0
}

// Entry is one entrant's own view of the draw (GET .../draw/me).
type Entry struct {
	Nonce draw.Nonce
	Leaf  draw.Hash
	Index int
	Proof []draw.Hash
	Draw  draw.Hash
	Place int
}

// Entry returns user's entry in the draw with its inclusion proof, from the
// freeze on (Draw and Place zero until the reveal), or false when the user
// did not enter.
func (f *Frozen) Entry(user uint64) (Entry, bool) {
	i, ok := f.index[user]
	if !ok || f.tree == nil {
		return Entry{}, false
	}
	if !f.Revealed {
		e := f.read[i]
		return Entry{Nonce: e.nonce, Leaf: e.leaf, Index: int(i), Proof: f.tree.Proof(int(i))}, true
	}
	return Entry{Nonce: f.nonces[i], Leaf: f.Leaves[i], Index: int(i), Proof: f.tree.Proof(int(i)),
		Draw: f.Draws[i], Place: f.Places[i]}, true
}

// EntryOf returns the revealed entry whose leaf is leaf, without its nonce,
// or false when no entrant has it.
func (f *Frozen) EntryOf(leaf draw.Hash) (Entry, bool) {
	if !f.Revealed {
		return Entry{}, false
	}
	i, ok := slices.BinarySearchFunc(f.Leaves, leaf, func(a, b draw.Hash) int { return bytes.Compare(a[:], b[:]) })
	if !ok {
		return Entry{}, false
	}
	return Entry{Leaf: f.Leaves[i], Index: i, Proof: f.tree.Proof(i), Draw: f.Draws[i], Place: f.Places[i]}, true
}

// entrant is one row read from the entrants shards.
type entrant struct {
	user  uint64
	nonce draw.Nonce
	leaf  draw.Hash
}

// shardTime answers the time of the master that holds KEYS[1] (unix ms).
const shardTime = "local t = redis.call('TIME') return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)"

// readEntrants reads every entrant of sale s, sorted by leaf. Each shard of
// the entrants is read right after its own master's clock, in one pipeline
// on that master's connection: room_join.lua closes the entries by that
// clock, so a shard whose clock read before the close could still take an
// entry after this reading, and the reading is errEarly (whatever this
// gateway's own clock says, and whatever the clock of the master the freeze
// script later runs on).
func (r *Room) readEntrants(ctx context.Context, s *Sale) ([]entrant, error) {
	cmds := make(rueidis.Commands, 0, 2*sharding.RoomEntrantsShards)
	for k := range sharding.RoomEntrantsShards {
		key := sharding.RoomEntrantsKey(s.ID, k)
		cmds = append(cmds, r.c.B().Eval().Script(shardTime).Numkeys(1).Key(key).Build(), r.c.B().Hgetall().Key(key).Build())
	}
	res := r.c.DoMulti(ctx, cmds...)
	closes := s.Closes().UnixMilli()
	for k := range sharding.RoomEntrantsShards {
		at, err := res[2*k].AsInt64()
		if err != nil {
			return nil, fmt.Errorf("reading the clock of entrants shard %d of sale %d: %w", k, s.ID, err)
		}
		if at < closes {
			return nil, errEarly
		}
	}
	var out []entrant
	for k := range sharding.RoomEntrantsShards {
		m, err := res[2*k+1].AsStrMap()
		if err != nil {
			return nil, fmt.Errorf("reading entrants shard %d of sale %d: %w", k, s.ID, err)
		}
		for u, n := range m {
			e, err := parseEntrant(u, n)
			if err != nil {
				return nil, fmt.Errorf("entrants shard %d of sale %d: %w", k, s.ID, err)
			}
			if sharding.RoomEntrantsShard(e.user, s.ID) != k {
				return nil, fmt.Errorf("entrants shard %d of sale %d holds user %d of shard %d", k, s.ID, e.user, sharding.RoomEntrantsShard(e.user, s.ID))
			}
			e.leaf = draw.Leaf(s.ID, e.user, e.nonce)
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b entrant) int { return bytes.Compare(a.leaf[:], b.leaf[:]) })
	for i := 1; i < len(out); i++ {
		if out[i].leaf == out[i-1].leaf {
			return nil, fmt.Errorf("draw of sale %d: users %d and %d have the same leaf", s.ID, out[i-1].user, out[i].user)
		}
	}
	return out, nil
}

// parseEntrant checks one field of an entrants shard: a user id and a nonce of
// 32 lower-case hex digits, as room_join.lua writes them.
func parseEntrant(user, nonce string) (entrant, error) {
	var e entrant
	u, err := strconv.ParseUint(user, 10, 64)
	if err != nil || u == 0 {
		return e, fmt.Errorf("entrant %q: not a user id", user)
	}
	if e.nonce, err = draw.ParseNonce(nonce); err != nil {
		return e, fmt.Errorf("entrant %d: %w", u, err)
	}
	e.user = u
	return e, nil
}

// freeze runs steps 2 and 3 for s: it returns the frozen draw (Revealed
// once the seed is), and an error when this gateway's reading of the
// entrants does not match the recorded root or the seed its commitment.
func (r *Room) freeze(ctx context.Context, s *Sale, prev *Frozen) (*Frozen, error) {
	es := prev.entrants()
	if es == nil {
		var err error
		if es, err = r.readEntrants(ctx, s); errors.Is(err, errEarly) {
			return nil, nil // an entrants shard's clock is not past the close yet: next tick
		} else if err != nil {
			return nil, err
		}
	}
	var leaves []draw.Hash
	var tree *draw.Tree
	var root draw.Hash
	if prev != nil && prev.tree != nil && len(prev.read) == len(es) {
		// The same frozen reading: its tree, not a new one each tick while
		// the draw waits for its round (a million leaves are 2 million
		// hashes).
		leaves, tree, root = prev.leaves, prev.tree, prev.Root
	} else {
		leaves = make([]draw.Hash, len(es))
		for i := range es {
			leaves[i] = es[i].leaf
		}
		tree = draw.NewTree(leaves)
		root = tree.Root()
	}
	spare := draw.NewSeed()
	sig, asked := r.beaconDue(ctx, s, prev)
	sealed := "0"
	if s.Sealed() {
		sealed = "1"
	}
	v, err := freezeScript.Exec(ctx, r.c, []string{sharding.RoomStateKey(s.ID), sharding.RoomSeedKey(s.ID)},
		[]string{root.String(), strconv.Itoa(len(es)), spare.String(), strconv.FormatInt(RevealDelay.Milliseconds(), 10),
			ms(s.End.Add(time.Hour)), ms(s.Closes().Add(FreezeAfter)), sig, sealed}).ToArray()
	if err != nil {
		return nil, fmt.Errorf("freezing the draw of sale %d: %w", s.ID, err)
	}
	rep, err := parseFreeze(v)
	if errors.Is(err, errEarly) {
		return nil, nil // this gateway's clock is ahead of Redis's: next tick
	}
	if err != nil {
		return nil, fmt.Errorf("freezing the draw of sale %d: %w", s.ID, err)
	}
	if rep.root != root || rep.count != len(es) {
		return nil, fmt.Errorf("draw of sale %d: the frozen root %s of %d entrants differs from this gateway's %s of %d (an entry after the freeze?)",
			s.ID, rep.root, rep.count, root, len(es))
	}
	f := &Frozen{FrozenAt: rep.at, tree: tree, leaves: leaves, index: make(map[uint64]int32, len(es))}
	f.Root, f.Count = root, len(es)
	if s.Commitment != nil {
		f.Commitment = *s.Commitment
	}
	if prev != nil {
		f.beaconAsked, f.refusedSig, f.Log, f.logState, f.logRead = prev.beaconAsked, prev.refusedSig, prev.Log, prev.logState, prev.logRead
	}
	if asked {
		f.beaconAsked = time.Now()
	}
	for i := range es {
		f.index[es[i].user] = int32(i)
	}
	if err := r.seal(ctx, s, prev, f, rep.beacon); err != nil {
		f.read = es // still frozen, unrevealed: kept, with when the round was asked for
		return f, err
	}
	if rep.seed == nil {
		f.read = es // frozen: the next call reveals from the same reading
		r.syncLog(ctx, s, f)
		return f, nil
	}
	seed := *rep.seed
	if c := s.Commitment; c != nil && draw.Commitment(seed) != *c {
		return nil, fmt.Errorf("draw of sale %d: the revealed seed's SHA-256 is not the published commitment %s: refusing to place anyone", s.ID, c)
	}
	key, err := draw.KeyOf(seed, f.Beacon)
	if err != nil { // checked by seal
		return nil, fmt.Errorf("draw of sale %d: %w", s.ID, err)
	}
	f.Revealed, f.Committed, f.Seed, f.Leaves = true, rep.committed && s.Commitment != nil, seed, leaves
	f.Commitment = draw.Commitment(seed)
	f.users, f.nonces = make([]uint64, len(es)), make([]draw.Nonce, len(es))
	f.Draws, f.Places = draw.Places(key, root, leaves)
	f.ID = draw.ID(s.ID, f.FrozenAt, &f.Published)
	f.pages = make([]atomic.Pointer[[]byte], len(leaves)/PageSize+1)
	for i := range es {
		f.users[i], f.nonces[i] = es[i].user, es[i].nonce
	}
	r.syncLog(ctx, s, f)
	return f, nil
}

type freezeReply struct {
	root      draw.Hash
	count     int
	at        time.Time
	seed      *draw.Hash
	committed bool
	beacon    []byte // the recorded round's signature, unverified; nil: none
}

// errEarly is room_freeze.lua's {'early'}: Redis's clock is not past the
// earliest freeze yet.
var errEarly = errors.New("room_freeze: too early by Redis's clock")

func parseFreeze(v []rueidis.RedisMessage) (freezeReply, error) {
	var rep freezeReply
	if len(v) == 1 {
		if s, err := v[0].ToString(); err == nil && s == "early" {
			return rep, errEarly
		}
	}
	if len(v) != 6 {
		return rep, fmt.Errorf("room_freeze: malformed reply of %d elements, want 6", len(v))
	}
	var s [6]string
	for i := range v {
		var err error
		if s[i], err = v[i].ToString(); err != nil {
			return rep, fmt.Errorf("room_freeze: element %d: %w", i, err)
		}
	}
	var err error
	if rep.root, err = draw.ParseHash(s[0]); err != nil {
		return rep, fmt.Errorf("room_freeze: root: %w", err)
	}
	n, err1 := strconv.Atoi(s[1])
	at, err2 := strconv.ParseInt(s[2], 10, 64)
	if err1 != nil || n < 0 || err2 != nil || at <= 0 || (s[4] != "0" && s[4] != "1") {
		return rep, fmt.Errorf("room_freeze: malformed reply %q", s)
	}
	rep.count, rep.at, rep.committed = n, time.UnixMilli(at), s[4] == "1"
	if s[3] != "" {
		h, err := draw.ParseHash(s[3])
		if err != nil {
			return rep, fmt.Errorf("room_freeze: seed: %w", err)
		}
		rep.seed = &h
	}
	if s[5] != "" {
		b, err := beacon.ParseSignature(s[5])
		if err != nil {
			return rep, fmt.Errorf("room_freeze: beacon: %w", err)
		}
		rep.beacon = b
	}
	return rep, nil
}

// Nonce reads user's nonce in sale s's draw: false when the user did not
// enter. It serves GET .../draw/me before the draw is revealed.
func (r *Room) Nonce(ctx context.Context, s *Sale, user uint64) (draw.Nonce, bool, error) {
	k := sharding.RoomEntrantsKey(s.ID, sharding.RoomEntrantsShard(user, s.ID))
	v, err := r.c.Do(ctx, r.c.B().Hget().Key(k).Field(strconv.FormatUint(user, 10)).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return draw.Nonce{}, false, nil
	}
	if err != nil {
		return draw.Nonce{}, false, fmt.Errorf("reading the entry of user %d in sale %d: %w", user, s.ID, err)
	}
	n, err := draw.ParseNonce(v)
	if err != nil {
		return n, false, fmt.Errorf("entry of user %d in sale %d: %w", user, s.ID, err)
	}
	return n, true, nil
}
