package stock_test

import (
	"context"
	"errors"
	"testing"

	"flashsale/sharding"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

// TestHaltInTheScript: a paused sale's shards refuse new reservations in the
// reserve script itself (nothing written, the stock unchanged), a holder is
// still told its order, a borrow's credit still arrives (no unit lost), resume
// sells again, a reshard carries the pause to the new shards, and an ended
// sale cannot be resumed.
func TestHaltInTheScript(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	sl := newSale(t, s, c, 2, 10)
	tag := sl.Shards[0]
	held := sharding.NewOrderID(sl.ID, 1, 1)
	if r, err := s.Reserve(ctx, reservation(tag, 1, 1, held)); err != nil || r.Outcome != stock.Reserved {
		t.Fatalf("reserve before the pause: %+v %v", r, err)
	}
	got, err := s.SetState(ctx, sl.ID, sale.StatePaused)
	if err != nil || got.State != sale.StatePaused || got.Version != sl.Version+1 {
		t.Fatalf("pause: %+v %v", got, err)
	}
	before, _ := total(t, s, sl, 1)
	if r, err := s.Reserve(ctx, reservation(tag, 1, 2, sharding.NewOrderID(sl.ID, 2, 2))); err != nil || r.Outcome != stock.Paused {
		t.Fatalf("reserve while paused: %+v %v, want Paused", r, err)
	}
	// The replay of the reservation made before the pause is still true.
	if r, err := s.Reserve(ctx, reservation(tag, 1, 1, held)); err != nil || r.Outcome != stock.Reserved || !r.Replay {
		t.Fatalf("replay while paused: %+v %v", r, err)
	}
	// A borrow's credit arrives even though the reservation is refused:
	// the donor's journal is cleared as the gateway does, and no unit is lost.
	id, k, err := s.MoveOut(ctx, 1, sl.Shards[1], tag, 1)
	if err != nil || k != 1 {
		t.Fatalf("move out: %d %v", k, err)
	}
	r := reservation(tag, 1, 3, sharding.NewOrderID(sl.ID, 3, 3))
	r.Credit = stock.Credit{MoveID: id, Units: 1}
	if r, err := s.Reserve(ctx, r); err != nil || r.Outcome != stock.Paused {
		t.Fatalf("borrowing reserve while paused: %+v %v, want Paused", r, err)
	}
	if err := s.DropMove(ctx, sl.Shards[1], id); err != nil {
		t.Fatal(err)
	}
	if after, per := total(t, s, sl, 1); after != before {
		t.Fatalf("stock %d (%v) after the refused reservations, want %d unchanged", after, per, before)
	}
	ls, err := s.LoadSale(ctx, sl.ID)
	if err != nil || ls.State != sale.StatePaused {
		t.Fatalf("stored description: %+v %v", ls, err)
	}
	// A reshard while paused keeps the pause on the new shards.
	top, err := stock.Topology(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	next, _, err := s.Reshard(ctx, sl.ID, 3, top)
	if err != nil {
		t.Fatal(err)
	}
	if halts, err := s.Halts(ctx, next); err != nil || halts[0] != sale.StatePaused || halts[2] != sale.StatePaused || next.State != sale.StatePaused {
		t.Fatalf("halts after the reshard: %v %v (state %q)", halts, err, next.State)
	}
	if _, err := s.SetState(ctx, sl.ID, ""); err != nil {
		t.Fatal(err)
	}
	if halts, _ := s.Halts(ctx, next); halts[0] != "" || halts[1] != "" || halts[2] != "" {
		t.Fatalf("halts after resume: %v", halts)
	}
	home := next.Shards[sharding.HomeShard(4, sl.ID, 3)]
	if r, err := s.Reserve(ctx, reservation(home, 1, 4, sharding.NewOrderID(sl.ID, 4, 4))); err != nil || r.Outcome != stock.Reserved {
		t.Fatalf("reserve after resume: %+v %v", r, err)
	}
	if _, err := s.SetState(ctx, sl.ID, sale.StateEnded); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Reserve(ctx, reservation(home, 1, 5, sharding.NewOrderID(sl.ID, 5, 5))); err != nil || r.Outcome != stock.Ended {
		t.Fatalf("reserve after end: %+v %v, want Ended", r, err)
	}
	for _, st := range []string{"", sale.StatePaused} {
		if _, err := s.SetState(ctx, sl.ID, st); !errors.Is(err, stock.ErrStateChange) {
			t.Fatalf("state %q after end: %v, want ErrStateChange", st, err)
		}
	}
	if _, err := s.SetState(ctx, sl.ID, "GONE"); !errors.Is(err, stock.ErrStateChange) {
		t.Fatalf("unknown state: %v", err)
	}
}

// A pause written through a Batcher (as flashctl's are) is acknowledged: one
// whose WAIT fails is an error, not a pause reported done that a failover
// could undo (here a user that may not run WAIT); with WAIT it is done.
func TestPauseIsAcknowledged(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	sl := storedSale(t, s, c, 2, 10)
	ops, _, user := unconfirmedStore(t)
	if _, err := ops.SetState(ctx, sl.ID, sale.StatePaused); !errors.Is(err, stock.ErrUnconfirmed) {
		t.Fatalf("pause whose WAIT failed: %v, want ErrUnconfirmed", err)
	}
	user.Set("+wait")
	got, err := ops.SetState(ctx, sl.ID, sale.StatePaused)
	if err != nil || got.State != sale.StatePaused {
		t.Fatalf("pause: %+v %v", got, err)
	}
	if halts, err := s.Halts(ctx, got); err != nil || halts[0] != sale.StatePaused || halts[1] != sale.StatePaused {
		t.Fatalf("halt keys %v %v", halts, err)
	}
}
