package room

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/draw"
	"flashsale/sharding/draw/beacon"
	"flashsale/sharding/stock"
)

// The sealed draw against the real Redis Cluster (sealed.go): a round whose
// signature is not the chain's never seals a draw, even once recorded in
// Redis, and shows in BeaconStats; a verified round reveals places that
// anyone recomputes from the seed, the round's randomness and the leaves.

// beaconShop is the catalog of one sealed sale.
type beaconShop struct{ s Sale }

func (b *beaconShop) Rooms() []Sale         { return []Sale{b.s} }
func (b *beaconShop) Remaining(int64) int64 { return b.s.Units }

// forger is a beacon source that checks nothing: while forge is set it
// answers round r with the dev chain's signature of round r+1 (a real
// signature, of the wrong round), else that no relay answers, as a relay
// taken out of service.
type forger struct {
	forge             atomic.Bool
	forged, unreached atomic.Int64
}

func (f *forger) Round(_ context.Context, c *beacon.Chain, r uint64) ([]byte, error) {
	if !f.forge.Load() {
		f.unreached.Add(1)
		return nil, errors.New("no relay answers")
	}
	f.forged.Add(1)
	return c.Sign(r + 1)
}

// sealedEntrant is one user of a sealed draw with their nonce and leaf.
type sealedEntrant struct {
	user  uint64
	nonce draw.Nonce
	leaf  draw.Hash
}

// sealedSale writes a sealed raffle on the dev chain to Redis, as `flashctl
// sale create --beacon dev` and room_join.lua would have: its committed
// seed, its tree-head key, its log's commitment entry, and n entrants whose
// entries closed at close. The round is the dev chain's first 2 s or more
// after the close. It returns the sale (its Commitment, Round, HeadKey
// set), the seed and the entrants.
func sealedSale(t *testing.T, c rueidis.Client, close time.Time, n int) (Sale, draw.Hash, []sealedEntrant) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	seed := draw.NewSeed()
	cm := draw.Commitment(seed)
	key := draw.NewHeadKey()
	s := Sale{ID: 1 + rand.Int64N(sharding.MaxSaleID-1), Raffle: true,
		EntriesOpen: close.Add(-time.Minute), EntriesClose: close, Start: now.Add(time.Minute), End: now.Add(time.Hour),
		Factor: 1, Units: 2, Commitment: &cm,
		Chain: beacon.Dev, Round: beacon.Dev.RoundFor(close), HeadKey: hex.EncodeToString(key.Public().(ed25519.PublicKey))}
	keys := []string{sharding.RoomStateKey(s.ID), sharding.RoomTailKey(s.ID), sharding.RoomSeedKey(s.ID),
		sharding.RoomHeadKeyKey(s.ID), sharding.RoomLogKey(s.ID)}
	for k := range sharding.RoomEntrantsShards {
		keys = append(keys, sharding.RoomEntrantsKey(s.ID, k))
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, k := range keys {
			_ = c.Do(ctx, c.B().Del().Key(k).Build()).Error()
		}
	})
	expire := s.End.Add(25 * time.Hour)
	st := stock.New(c)
	if err := c.Do(ctx, c.B().Set().Key(sharding.RoomSeedKey(s.ID)).Value(seed.String()).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutDrawHeadKey(ctx, s.ID, key, expire); err != nil {
		t.Fatal(err)
	}
	commit := &draw.Event{Event: draw.EventCommit, At: now.UnixMilli(), Commitment: cm.String(), Chain: s.Chain.Hash, Round: s.Round, HeadKey: s.HeadKey}
	if _, _, err := st.LogDrawEvent(ctx, s.ID, commit, expire); err != nil {
		t.Fatal(err)
	}
	es := make([]sealedEntrant, n)
	for i := range es {
		e := sealedEntrant{user: uint64(1000 + i), nonce: draw.NewNonce()}
		e.leaf = draw.Leaf(s.ID, e.user, e.nonce)
		k := sharding.RoomEntrantsKey(s.ID, sharding.RoomEntrantsShard(e.user, s.ID))
		if err := c.Do(ctx, c.B().Hset().Key(k).FieldValue().FieldValue(strconv.FormatUint(e.user, 10), e.nonce.String()).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		es[i] = e
	}
	return s, seed, es
}

// sealedRoom is a gateway's room over c taking its rounds from src.
func sealedRoom(t *testing.T, c rueidis.Client, src beacon.Source) *Room {
	t.Helper()
	r, err := New(c, Config{Ring: ring(t, "sealed-draw-test-secret", ""), Beacon: src,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tickUntil ticks r every 50 ms, as Run does every 100 ms, until cond
// holds, for at most d; it returns the ticks' errors.
func tickUntil(t *testing.T, r *Room, shop *beaconShop, d time.Duration, what string, cond func() bool) []error {
	t.Helper()
	var errs []error
	for end := time.Now().Add(d); ; {
		if err := r.Tick(context.Background(), time.Now(), shop); err != nil {
			errs = append(errs, err)
		}
		if cond() {
			return errs
		}
		if time.Now().After(end) {
			t.Fatalf("not within %v: %s (tick errors: %v)", d, what, errors.Join(errs...))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// recordedBeacon reads the signature room_freeze.lua recorded for s ("" for none).
func recordedBeacon(t *testing.T, c rueidis.Client, s *Sale) string {
	t.Helper()
	v, err := c.Do(context.Background(), c.B().Hget().Key(sharding.RoomStateKey(s.ID)).Field("beacon").Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// drawLog reads and checks s's log.
func drawLog(t *testing.T, c rueidis.Client, s *Sale) *draw.LogState {
	t.Helper()
	log, err := stock.New(c).DrawLog(context.Background(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := draw.CheckLog(s.ID, log)
	if err != nil {
		t.Fatalf("the draw's log does not verify: %v", err)
	}
	return ls
}

// checkSealedPlaces checks f, revealed, against what anyone recomputes: the
// committed seed, the round's signature sig (the chain's), the sorted leaves
// and their root; draw.Places over the key of seed and sig's randomness
// gives every entrant's place, and the tree head is signed with s's key.
func checkSealedPlaces(t *testing.T, f *Frozen, s *Sale, seed draw.Hash, sig []byte, es []sealedEntrant) {
	t.Helper()
	if err := s.Chain.Verify(s.Round, sig); err != nil {
		t.Fatalf("the test's own round: %v", err)
	}
	if !f.Revealed || f.Seed != seed || !f.Committed || f.Commitment != *s.Commitment {
		t.Fatalf("revealed %v, seed %s (committed %v): want the committed seed %s", f.Revealed, f.Seed, f.Committed, seed)
	}
	if f.Beacon == nil || f.Beacon.Chain != s.Chain.Hash || f.Beacon.Round != s.Round || !bytes.Equal(f.Beacon.Signature, sig) {
		t.Fatalf("the draw is sealed by %+v, want %s round %d signed %x", f.Beacon, s.Chain.Name, s.Round, sig)
	}
	leaves := make([]draw.Hash, len(es))
	for i, e := range es {
		leaves[i] = e.leaf
	}
	slices.SortFunc(leaves, func(a, b draw.Hash) int { return bytes.Compare(a[:], b[:]) })
	root := draw.Root(leaves)
	draws, places := draw.Places(draw.Key(seed, draw.Hash(beacon.Randomness(sig))), root, leaves)
	if f.Root != root || f.Count != len(es) || !slices.Equal(f.Leaves, leaves) {
		t.Fatalf("frozen root %s of %d entrants, want %s of %d", f.Root, f.Count, root, len(es))
	}
	if !slices.Equal(f.Draws, draws) || !slices.Equal(f.Places, places) {
		t.Fatalf("places %v, want %v (draw.Places over the seed and the round's randomness)", f.Places, places)
	}
	for _, e := range es {
		i := slices.Index(leaves, e.leaf)
		if got := f.Place(e.user); got != int64(places[i]) {
			t.Errorf("user %d: place %d, want %d", e.user, got, places[i])
		}
	}
	// The seed alone (an unsealed draw's key) gives other draws.
	if unsealed, _ := draw.Places(seed, root, leaves); slices.Equal(unsealed, draws) {
		t.Error("the draws do not depend on the round")
	}
	pub, err := hex.DecodeString(s.HeadKey)
	if err != nil {
		t.Fatal(err)
	}
	if f.Head == nil || f.Head.Round != s.Round || f.Head.Chain != s.Chain.Hash || f.Head.Root != root {
		t.Fatalf("tree head %+v", f.Head)
	}
	if err := draw.VerifyHead(ed25519.PublicKey(pub), f.Head, f.HeadSig); err != nil {
		t.Fatalf("tree head: %v", err)
	}
}

// TestSealedDrawRefusesAForgedRound: a beacon source that verifies nothing
// hands a gateway a signature of the wrong round, and room_freeze.lua
// records it (the script cannot check BLS). The gateway's own seal()
// refuses it as read back: no place is computed, none is served, the log
// gets no beacon entry, and BeaconStats counts the refusals and, from
// BeaconGrace after the round's time, the overdue draw. Then the runbook's
// repair (deploy/README.md, FlashsaleDrawBeaconRefused): the forging source
// out of service, the field deleted, the genuine round handed as `flashctl
// sale draw beacon` does: the same gateway reveals the draw with places
// drawn from that round, and nothing is overdue. It waits for the overdue
// count in real time: some 12 s (the dev chain's 2 s lead and BeaconGrace).
func TestSealedDrawRefusesAForgedRound(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs the local stack")
	}
	c := testenv.NewRedis(t)
	// The entries have just closed: the draw freezes at once, before its
	// round's time, as the log requires.
	s, seed, es := sealedSale(t, c, time.Now().Add(-300*time.Millisecond), 6)
	at := s.Chain.TimeOf(s.Round)
	src := &forger{}
	src.forge.Store(true)
	r := sealedRoom(t, c, src)
	shop := &beaconShop{s: s}
	forged, err := s.Chain.Sign(s.Round + 1)
	if err != nil {
		t.Fatal(err)
	}

	errs := tickUntil(t, r, shop, time.Until(at.Add(BeaconGrace+5*time.Second)), "the forged round recorded, refused and the draw overdue", func() bool {
		now := time.Now()
		if now.Before(at) && src.forged.Load() > 0 {
			t.Fatalf("the source was asked for round %d before its time", s.Round)
		}
		if now.Before(at.Add(BeaconGrace)) && r.Beacons.Overdue.Load() != 0 {
			t.Fatalf("overdue %d before BeaconGrace past the round's time", r.Beacons.Overdue.Load())
		}
		st := r.State(s.ID)
		return r.Beacons.Refused.Load() > 0 && r.Beacons.Overdue.Load() == 1 && st != nil && st.Frozen != nil
	})
	if got := recordedBeacon(t, c, &s); got != hex.EncodeToString(forged) {
		t.Fatalf("Redis records the round %q, want the forged %x", got, forged)
	}
	refusedInRedis := slices.ContainsFunc(errs, func(err error) bool { return errors.Is(err, beacon.ErrSignature) })
	if !refusedInRedis {
		t.Fatalf("no tick reported the recorded round refused: %v", errors.Join(errs...))
	}
	f := r.State(s.ID).Frozen
	if f.Revealed || f.Beacon != nil || f.Places != nil || f.Seed != (draw.Hash{}) {
		t.Fatalf("a draw sealed by a forged round: revealed %v, beacon %+v, %d places", f.Revealed, f.Beacon, len(f.Places))
	}
	if f.Count != len(es) || f.Head == nil {
		t.Fatalf("the frozen draw: %d entrants, head %v", f.Count, f.Head)
	}
	for _, e := range es {
		if !f.Entered(e.user) || f.Place(e.user) != 0 {
			t.Fatalf("user %d: entered %v, place %d: want entered and waiting", e.user, f.Entered(e.user), f.Place(e.user))
		}
	}
	if ls := drawLog(t, c, &s); ls.Freeze == nil || ls.Beacon != nil || ls.Reveal != nil {
		t.Fatalf("the log after a forged round: freeze %v, beacon %v, reveal %v; want the freeze alone", ls.Freeze != nil, ls.Beacon, ls.Reveal)
	}
	if src.forged.Load() == 0 {
		t.Fatal("the source was never asked")
	}

	// The runbook: the forging source out of service; once a tick asked it
	// so, no freeze that got the forged round is left in flight (one
	// freeze at a time per sale). Delete the field, hand the genuine round.
	src.forge.Store(false)
	tickUntil(t, r, shop, 5*time.Second, "a tick asking the source out of service", func() bool { return src.unreached.Load() > 0 })
	refused := r.Beacons.Refused.Load()
	if err := c.Do(context.Background(), c.B().Hdel().Key(sharding.RoomStateKey(s.ID)).Field("beacon").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	good, err := s.Chain.Sign(s.Round)
	if err != nil {
		t.Fatal(err)
	}
	if held, err := stock.New(c).PutDrawBeacon(context.Background(), s.ID, good, s.End.Add(time.Hour)); err != nil || held != hex.EncodeToString(good) {
		t.Fatalf("handing the round: held %q, %v", held, err)
	}
	tickUntil(t, r, shop, 10*time.Second, "the draw revealed from the handed round", func() bool {
		st := r.State(s.ID)
		return st != nil && st.Frozen != nil && st.Frozen.Revealed
	})
	checkSealedPlaces(t, r.State(s.ID).Frozen, &s, seed, good, es)
	if n := r.Beacons.Overdue.Load(); n != 0 {
		t.Errorf("overdue %d after the reveal, want 0", n)
	}
	if n := r.Beacons.Refused.Load(); n < refused {
		t.Errorf("refused went back from %d to %d", refused, n)
	}
	ls := drawLog(t, c, &s)
	if ls.Beacon == nil || ls.Beacon.Signature != hex.EncodeToString(good) || ls.Reveal == nil || ls.Reveal.Seed != seed.String() {
		t.Fatalf("the log after the reveal: beacon %+v, reveal %+v", ls.Beacon, ls.Reveal)
	}
}

// TestSealedDrawRevealsFromTheRound: with the real source (beacon.Fetcher,
// signing the dev chain's rounds at their time as a relay serves them) the
// frozen draw waits for its round, then reveals places drawn from the
// committed seed and the round's randomness; nothing is refused or overdue.
func TestSealedDrawRevealsFromTheRound(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs the local stack")
	}
	c := testenv.NewRedis(t)
	s, seed, es := sealedSale(t, c, time.Now().Add(-500*time.Millisecond), 6)
	at := s.Chain.TimeOf(s.Round)
	r := sealedRoom(t, c, &beacon.Fetcher{Dev: true})
	shop := &beaconShop{s: s}
	frozenEarly := false
	errs := tickUntil(t, r, shop, at.Add(10*time.Second).Sub(time.Now()), "the draw revealed after its round", func() bool {
		st := r.State(s.ID)
		if st == nil || st.Frozen == nil {
			return false
		}
		if time.Now().Before(at) {
			if st.Frozen.Revealed {
				t.Fatalf("revealed at %s, before its round's time %s", time.Now().Format(time.StampMilli), at.Format(time.StampMilli))
			}
			frozenEarly = true
		}
		return st.Frozen.Revealed
	})
	if len(errs) > 0 {
		t.Fatalf("ticks failed: %v", errors.Join(errs...))
	}
	if !frozenEarly {
		t.Logf("the draw froze only after its round's time (a slow machine): the wait is not shown")
	}
	good, err := s.Chain.Sign(s.Round)
	if err != nil {
		t.Fatal(err)
	}
	if got := recordedBeacon(t, c, &s); got != hex.EncodeToString(good) {
		t.Fatalf("Redis records %q, want round %d's signature", got, s.Round)
	}
	checkSealedPlaces(t, r.State(s.ID).Frozen, &s, seed, good, es)
	if n, o := r.Beacons.Refused.Load(), r.Beacons.Overdue.Load(); n != 0 || o != 0 {
		t.Errorf("refused %d, overdue %d: want none", n, o)
	}
	if ls := drawLog(t, c, &s); ls.Freeze == nil || ls.Beacon == nil || ls.Beacon.Round != s.Round || ls.Reveal == nil {
		t.Fatalf("the log: freeze %v, beacon %+v, reveal %v", ls.Freeze != nil, ls.Beacon, ls.Reveal != nil)
	}
}
