package room_test

import (
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"flashsale/gateway/internal/mac"
	"flashsale/gateway/internal/room"
	"flashsale/sharding"
	"flashsale/sharding/draw"
	"flashsale/sharding/stock"
)

// entrant is one user of a fair-access test, as the user knows themself.
type entrant struct {
	user
	nonce draw.Nonce
}

// commit writes a new seed for sale s in Redis, as `flashctl sale create`
// does, and returns it with its commitment set on s.
func commit(t *testing.T, c rueidis.Client, s *room.Sale) draw.Hash {
	t.Helper()
	seed := draw.NewSeed()
	cm := draw.Commitment(seed)
	s.Commitment = &cm
	ctx := context.Background()
	if err := c.Do(ctx, c.B().Set().Key(sharding.RoomSeedKey(s.ID)).Value(seed.String()).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Do(context.Background(), c.B().Del().Key(sharding.RoomSeedKey(s.ID)).Build()).Error()
		_ = c.Do(context.Background(), c.B().Del().Key(sharding.RoomStateKey(s.ID)).Build()).Error()
	})
	return seed
}

// enter joins n users (ids from first) through the gateways, 8 at a time,
// and checks each was given a nonce of their own.
func enter(t *testing.T, gws []*room.Room, s *room.Sale, sh *shop, first uint64, n int) []*entrant {
	t.Helper()
	out := make([]*entrant, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				e := &entrant{user: user{id: first + uint64(i)}}
				pass, v, err := gws[i%len(gws)].Join(context.Background(), time.Now(), s, e.id, sh.Remaining(0), nil)
				if err == nil && (v.Outcome != room.Queued || len(v.Nonce) != 32) {
					err = errors.New("not entered: " + v.Nonce)
				}
				if err == nil {
					_, err = hex.Decode(e.nonce[:], []byte(v.Nonce))
				}
				if err != nil {
					errs <- err
					return
				}
				e.pass, e.last, out[i] = pass, v, e
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return out
}

// revealed waits until every gateway holds the revealed draw of s, and
// returns the first gateway's.
func revealed(t *testing.T, gws []*room.Room, s *room.Sale, d time.Duration) *room.Frozen {
	t.Helper()
	waitFor(t, d, "the revealed draw on every gateway", func() bool {
		for _, g := range gws {
			if st := g.State(s.ID); st == nil || st.Frozen == nil || !st.Frozen.Revealed {
				return false
			}
		}
		return true
	})
	f := gws[0].State(s.ID).Frozen
	for _, g := range gws[1:] {
		if o := g.State(s.ID).Frozen; o.Root != f.Root || o.Seed != f.Seed || o.Count != f.Count || !slices.Equal(o.Places, f.Places) {
			t.Fatal("two gateways computed different draws")
		}
	}
	return f
}

// checkPublished recomputes every entrant's place from what is published
// (seed, root, the sorted leaves) and what only the entrant knows (their id
// and nonce), checks the seed against the commitment made before entries
// opened and each entrant's inclusion proof, and returns the places by user.
func checkPublished(t *testing.T, f *room.Frozen, s *room.Sale, seed draw.Hash, es []*entrant) map[uint64]int {
	t.Helper()
	if f.Seed != seed || draw.Commitment(f.Seed) != *s.Commitment || !f.Committed {
		t.Fatalf("revealed seed %s (committed %v) is not the one committed", f.Seed, f.Committed)
	}
	if err := draw.Verify(&f.Published); err != nil {
		t.Fatal(err)
	}
	_, places := draw.Places(f.Seed, f.Root, f.Leaves)
	at := map[draw.Hash]int{}
	for i, l := range f.Leaves {
		at[l] = i
	}
	out := map[uint64]int{}
	for _, e := range es {
		leaf := draw.Leaf(s.ID, e.id, e.nonce)
		i, ok := at[leaf]
		if !ok {
			t.Fatalf("user %d's leaf is not published", e.id)
		}
		me, ok := f.Entry(e.id)
		if !ok || me.Leaf != leaf || me.Index != i || !draw.VerifyInclusion(leaf, i, f.Count, me.Proof, f.Root) {
			t.Fatalf("user %d: entry %+v does not prove leaf %d", e.id, me, i)
		}
		out[e.id] = places[i]
	}
	return out
}

// TestRaffleOverThreeGateways: a raffle of 1,000 entrants for 100 units
// behind three gateways. Places follow the seed committed before entries
// opened exactly (recomputed from the published data and each user's own id
// and nonce); an entry after the close is refused; everyone past place 100
// is told NOT_SELECTED at the reveal, before the start, and still after
// the sell-out; from the start the first places are admitted in place
// order, stock-aware, and nobody else; a gateway started after the reveal
// serves the same places; and the three mutants of the published draw fail
// verification.
func TestRaffleOverThreeGateways(t *testing.T) {
	const units, crowd = 100, 1000
	now := time.Now()
	s := room.Sale{ID: randomSale(), Raffle: true, EntriesOpen: now, EntriesClose: now.Add(3 * time.Second),
		Start: now.Add(4500 * time.Millisecond), End: now.Add(time.Hour), Factor: 4, Units: units}
	sh := newShop(t, units, s)
	seed := commit(t, sh.c, &s)
	sh.sale.Store(&s)
	gws := gateways(t, 3, sh)
	waitFor(t, time.Second, "first tick", func() bool { return gws[0].State(s.ID) != nil })
	es := enter(t, gws, &s, sh, 20_000, crowd)
	if !time.Now().Before(s.EntriesClose) {
		t.Fatal("entries closed before the 1,000 entries were in: slow machine")
	}
	time.Sleep(time.Until(s.EntriesClose))
	// The stock reads 0 to the ticks while the test checks the draw (slow
	// under the race detector): the cursor holds, and the polls below pass
	// the units themselves.
	sh.set(t, 0)
	if _, v, err := gws[1].Join(context.Background(), time.Now(), &s, 99, units, nil); err != nil || v.Outcome != room.EntriesClosed {
		t.Fatalf("an entry after the close: %+v %v", v, err)
	}
	f := revealed(t, gws, &s, 2*time.Second)
	if f.Count != crowd {
		t.Fatalf("%d entrants frozen, want %d", f.Count, crowd)
	}
	places := checkPublished(t, f, &s, seed, es)
	late := gateways(t, 1, sh)[0]
	if lf := revealed(t, []*room.Room{late}, &s, 2*time.Second); lf.Root != f.Root || !slices.Equal(lf.Places, f.Places) {
		t.Fatal("a gateway started after the reveal computed another draw")
	}
	gws = append(gws, late)

	// Before the start: winners see their place and a sure unit, the others
	// are told NOT_SELECTED now (with or without their pass).
	rem := int64(units)
	for i, e := range es {
		v := gws[i%len(gws)].Check(time.Now(), &s, e.id, e.pass, rem)
		if int(v.Place) != places[e.id] {
			t.Fatalf("user %d is shown place %d, the published draw says %d", e.id, v.Place, places[e.id])
		}
		want := room.Queued
		if places[e.id] > units {
			want = room.NotSelected
		}
		if v.Outcome != want || (want == room.Queued && v.Chance != 1) {
			t.Fatalf("user %d at place %d before the start: %+v", e.id, places[e.id], v)
		}
		if nv := gws[(i+1)%len(gws)].Check(time.Now(), &s, e.id, nil, rem); nv.Outcome != want || nv.Place != v.Place {
			t.Fatalf("user %d without a pass: %+v, with it %+v", e.id, nv, v)
		}
	}
	sh.set(t, units)
	admitRaffle(t, gws, &s, sh, es, places)
	// Sold out: a loser is still told NOT_SELECTED (final), with the pass
	// or without it.
	for i, e := range es {
		if places[e.id] <= units {
			continue
		}
		for _, p := range [][]byte{e.pass, nil} {
			if v := gws[i%len(gws)].Check(time.Now(), &s, e.id, p, 0); v.Outcome != room.NotSelected || int(v.Place) != places[e.id] {
				t.Fatalf("user %d at place %d after the sell-out: %+v", e.id, places[e.id], v)
			}
		}
	}
	muteRaffle(t, f)
}

// admitRaffle polls every entrant every 50 ms from the start until the
// units are sold: the admitted are exactly places 1..units, admitted in
// place order (a place is never admitted before a lower one, beyond one
// poll), and they buy.
func admitRaffle(t *testing.T, gws []*room.Room, s *room.Sale, sh *shop, es []*entrant, places map[uint64]int) {
	t.Helper()
	time.Sleep(time.Until(s.Start))
	admittedAt := map[int]int{} // place -> round
	for round := 0; sh.units(t) > 0; round++ {
		if round > 200 {
			t.Fatalf("not sold out 10 s after the start: %d left", sh.units(t))
		}
		rem := sh.units(t)
		for i, e := range es {
			if _, done := admittedAt[places[e.id]]; done {
				continue
			}
			switch v := gws[(i+round)%len(gws)].Check(time.Now(), s, e.id, e.pass, rem); v.Outcome {
			case room.Admitted:
				if places[e.id] > int(s.Units) {
					t.Fatalf("place %d admitted in a raffle of %d units", places[e.id], s.Units)
				}
				admittedAt[places[e.id]] = round
				if !sh.buy(t) {
					t.Fatalf("winner at place %d found no unit", places[e.id])
				}
				rem--
			case room.Queued, room.NotSelected, room.SoldOut:
			default:
				t.Fatalf("user %d polled: %+v", e.id, v)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(admittedAt) != int(s.Units) {
		t.Fatalf("%d admitted for %d units", len(admittedAt), s.Units)
	}
	// Gateways tick apart (100 ms) and users poll them in turn: a place may
	// be seen admitted up to a tick and a poll (3 rounds, 5 on a loaded
	// machine) before a lower one.
	lower := 0
	for p := 1; p <= int(s.Units); p++ {
		if admittedAt[p] < lower-5 {
			t.Fatalf("place %d admitted in round %d, a lower place only in round %d", p, admittedAt[p], lower)
		}
		lower = max(lower, admittedAt[p])
	}
}

// muteRaffle: an entrant added after the freeze, a changed seed and a
// tampered place each make the published draw fail verification.
func muteRaffle(t *testing.T, f *room.Frozen) {
	t.Helper()
	clone := func() *draw.Published {
		p := f.Published
		p.Leaves, p.Draws, p.Places = slices.Clone(p.Leaves), slices.Clone(p.Draws), slices.Clone(p.Places)
		return &p
	}
	added := clone()
	extra := draw.Leaf(1, 1, draw.NewNonce())
	i, _ := slices.BinarySearchFunc(added.Leaves, extra, func(a, b draw.Hash) int { return slices.Compare(a[:], b[:]) })
	added.Leaves = slices.Insert(added.Leaves, i, extra)
	added.Draws = slices.Insert(added.Draws, i, draw.Draw(added.Seed, added.Root, extra))
	added.Places = slices.Insert(added.Places, i, 1)
	added.Count++
	reseeded := clone()
	reseeded.Seed = draw.NewSeed()
	moved := clone()
	moved.Places[0], moved.Places[1] = moved.Places[1], moved.Places[0]
	for name, p := range map[string]*draw.Published{"entrant added": added, "seed changed": reseeded, "place moved": moved} {
		if err := draw.Verify(p); !errors.Is(err, draw.ErrMismatch) {
			t.Errorf("%s: verification says %v", name, err)
		}
	}
}

// TestUncommittedSeedPlacesNobody: a seed in Redis whose SHA-256 is not the
// sale's published commitment (swapped after the creation) is refused by
// every gateway: the draw is frozen but nobody is given a place.
func TestUncommittedSeedPlacesNobody(t *testing.T) {
	now := time.Now()
	s := room.Sale{ID: randomSale(), Raffle: true, EntriesOpen: now, EntriesClose: now.Add(2 * time.Second),
		Start: now.Add(time.Minute), End: now.Add(time.Hour), Factor: 1, Units: 5}
	sh := newShop(t, 5, s)
	commit(t, sh.c, &s)
	other := draw.Commitment(draw.NewSeed())
	s.Commitment = &other
	sh.sale.Store(&s)
	gws := gateways(t, 2, sh)
	es := enter(t, gws, &s, sh, 40_000, 20)
	time.Sleep(time.Until(s.EntriesClose.Add(room.FreezeAfter + room.RevealDelay + 500*time.Millisecond)))
	for _, g := range gws {
		st := g.State(s.ID)
		if st == nil || (st.Frozen != nil && st.Frozen.Revealed) {
			t.Fatalf("a swapped seed was accepted: %+v", st)
		}
		if v := g.Check(time.Now(), &s, es[0].id, es[0].pass, 5); v.Place != 0 || v.Outcome == room.Admitted {
			t.Fatalf("placed by a swapped seed: %+v", v)
		}
	}
}

// TestQueueOddsOverThreeGateways: a queue of 10,000 entrants for 500 units
// over three gateways, where four in five admitted users buy. Once the draw
// is revealed, the chances shown fall monotonically with the place (read in
// one state of a gateway); they are never 0 while an estimate; and every
// user whose chance reached zero (told SOLD_OUT) was never admitted, while
// the units all sold.
func TestQueueOddsOverThreeGateways(t *testing.T) {
	const units, crowd = 500, 10_000
	now := time.Now()
	s := room.Sale{ID: randomSale(), Start: now.Add(5 * time.Second), End: now.Add(time.Hour),
		PreQueue: 6 * time.Second, Window: time.Second, Factor: 4, Units: units}
	sh := newShop(t, units, s)
	commit(t, sh.c, &s)
	sh.sale.Store(&s)
	gws := gateways(t, 3, sh)
	waitFor(t, time.Second, "first tick", func() bool { return gws[0].State(s.ID) != nil })
	es := enter(t, gws, &s, sh, 100_000, crowd)
	if !time.Now().Before(s.Closes()) {
		t.Fatal("the entries closed before the 10,000 entrants were in: slow machine")
	}
	sh.set(t, 0) // the cursor holds while the odds are read (see the raffle's test)
	revealed(t, gws, &s, time.Until(s.Closes().Add(2*time.Second)))
	monotonicOdds(t, gws[1], &s, es, units)
	sh.set(t, units)
	time.Sleep(time.Until(s.AdmitsFrom()))
	zero, admitted := map[uint64]bool{}, map[uint64]bool{}
	for round := 0; round < 400 && (sh.units(t) > 0 || round%20 != 0 || len(zero) == 0); round++ {
		rem := sh.units(t)
		for i, e := range es {
			if admitted[e.id] {
				continue
			}
			switch v := gws[(i+round)%3].Check(time.Now(), &s, e.id, e.pass, rem); v.Outcome {
			case room.Admitted:
				if zero[e.id] {
					t.Fatalf("user %d was told its chance was zero, then admitted", e.id)
				}
				admitted[e.id] = true
				if e.id%5 != 0 && sh.buy(t) {
					rem--
				}
			case room.SoldOut:
				zero[e.id] = true
			case room.Queued:
				if v.Chance <= 0 || v.Chance > 1 {
					t.Fatalf("user %d queued with chance %v", e.id, v.Chance)
				}
			default:
				t.Fatalf("user %d polled: %+v", e.id, v)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if sh.units(t) != 0 || len(zero) == 0 {
		t.Fatalf("%d units left, %d users told zero", sh.units(t), len(zero))
	}
	t.Logf("%d admitted for %d units, %d told their chance was zero", len(admitted), units, len(zero))
}

// monotonicOdds reads every entrant's place and chance from one state of
// g (read again if a tick lands in between) and checks that the chance
// never rises with the place.
func monotonicOdds(t *testing.T, g *room.Room, s *room.Sale, es []*entrant, units int64) {
	t.Helper()
	for try := 0; ; try++ {
		st := g.State(s.ID)
		chance := make([]float64, len(es)+1)
		for _, e := range es {
			v := g.Check(time.Now(), s, e.id, e.pass, units)
			if v.Outcome != room.Queued || v.Place < 1 || int(v.Place) > len(es) || chance[v.Place] != 0 {
				t.Fatalf("user %d after the reveal: %+v", e.id, v)
			}
			chance[v.Place] = v.Chance
		}
		if now := g.State(s.ID); now.Cursor != st.Cursor || now.Entrants != st.Entrants || now.Frozen != st.Frozen || now.Final != st.Final {
			if try > 20 {
				t.Fatal("no two reads of the state in a row were equal")
			}
			continue
		}
		for p := 2; p <= len(es); p++ {
			if chance[p] > chance[p-1] {
				t.Fatalf("place %d is shown %.4f, place %d %.4f", p, chance[p], p-1, chance[p-1])
			}
		}
		t.Logf("chances shown: place 1 %.3f, 400 %.3f, 500 %.3f, 600 %.3f, 10000 %.3f",
			chance[1], chance[400], chance[500], chance[600], chance[len(es)])
		return
	}
}

// ackCounter is a room.Acker that counts the writes it carried and those a
// replica did not acknowledge.
type ackCounter struct {
	b         *stock.Batcher
	n, unsafe atomic.Int64
}

func (a *ackCounter) DoAck(ctx context.Context, cmd rueidis.Completed) (rueidis.RedisResult, int64) {
	res, acked := a.b.DoAck(ctx, cmd)
	a.n.Add(1)
	if acked < 1 {
		a.unsafe.Add(1)
	}
	return res, acked
}

// TestEntriesWaitForAReplica: every write a 202 QUEUED promises (an entry
// into the draw, a late arrival's place) goes through the room's Acker and
// is acknowledged by a replica before the answer, as a purchase is: an
// entry told 202 survives a failover.
func TestEntriesWaitForAReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs the local stack")
	}
	now := time.Now()
	s := room.Sale{ID: randomSale(), Start: now.Add(-time.Second), End: now.Add(time.Hour), Window: 2 * time.Second, Factor: 1, Units: 5}
	sh := newShop(t, 5, s)
	rg, err := mac.NewRing([]byte("waiting-room-test-secret"), nil)
	if err != nil {
		t.Fatal(err)
	}
	b := stock.NewBatcher(sh.c, 2, time.Second)
	b.SetAcks(1, 100*time.Millisecond)
	t.Cleanup(b.Close)
	acks := &ackCounter{b: b}
	r, err := room.New(sh.c, room.Config{Ring: rg, Acks: acks})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, v, err := r.Join(context.Background(), time.Now(), &s, uint64(60_000+i), 5, nil); err != nil || v.Outcome != room.Queued {
			t.Fatalf("join %d: %+v %v", i, v, err)
		}
	}
	time.Sleep(time.Until(s.Closes()))
	for i := range 3 {
		if _, v, err := r.Join(context.Background(), time.Now(), &s, uint64(61_000+i), 5, nil); err != nil || v.Outcome != room.Queued {
			t.Fatalf("late join %d: %+v %v", i, v, err)
		}
	}
	// 10 entries, then 3 late arrivals: each asks the draw (closed), then
	// takes its place at the end.
	if n, unsafe := acks.n.Load(), acks.unsafe.Load(); n != 10+2*3 || unsafe != 0 {
		t.Fatalf("%d writes through the Acker (want 16), %d not acknowledged by a replica", n, unsafe)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for k := 0; k < sharding.RoomEntrantsShards; k++ {
			_ = sh.c.Do(ctx, sh.c.B().Del().Key(sharding.RoomEntrantsKey(s.ID, k)).Build()).Error()
		}
		_ = sh.c.Do(ctx, sh.c.B().Del().Key(sharding.RoomTailKey(s.ID)).Build()).Error()
	})
}
