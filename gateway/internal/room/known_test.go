package room

import (
	"context"
	"testing"
	"time"

	"flashsale/sharding/draw"
)

// knownRoom is a room with no Redis client (any Redis call would panic)
// whose raffle and queue, sales 11 and 12, froze users 1..8 with
// entrants, cursor and final count as given.
func knownRoom(t *testing.T, now time.Time, revealed bool, cursor int64) (*Room, Sale, Sale, map[uint64]int64) {
	t.Helper()
	r, err := New(nil, Config{Ring: ring(t, "room-secret-0123456789", "")})
	if err != nil {
		t.Fatal(err)
	}
	raffle := Sale{ID: 11, Raffle: true, EntriesOpen: now.Add(-time.Hour), EntriesClose: now.Add(-30 * time.Minute),
		Start: now.Add(-time.Minute), End: now.Add(time.Hour), Factor: 1, Units: 3}
	queue := Sale{ID: 12, Start: now.Add(-time.Minute), End: now.Add(time.Hour), PreQueue: time.Hour, Window: time.Second, Factor: 1, Units: 3}
	users := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	var seed *draw.Hash
	if revealed {
		s := draw.NewSeed()
		seed = &s
	}
	places := map[uint64]int64{}
	for _, s := range []*Sale{&raffle, &queue} {
		f := r.Preset(s, State{Cursor: cursor, Entrants: int64(len(users)), Final: true, At: now}, users, seed)
		if f.Revealed != revealed || f.Count != len(users) {
			t.Fatalf("preset draw: revealed %v, %d entrants", f.Revealed, f.Count)
		}
		for _, u := range users {
			if !f.Entered(u) {
				t.Fatalf("user %d is not known to the frozen draw", u)
			}
			if s.Raffle {
				places[u] = f.Place(u)
			}
		}
	}
	return r, raffle, queue, places
}

// An entrant who asks without their pass (another device, a cleared
// browser) is known from the freeze on: before the reveal they are told
// they are entered and wait for the draw (QUEUED, no place yet), never
// ENTRIES_CLOSED; a raffle's non-entrant is told ENTRIES_CLOSED, a queue's
// joins the end. No Redis call: the room has no client.
func TestEntrantWithoutPassBeforeTheReveal(t *testing.T) {
	now := time.Now()
	r, raffle, queue, _ := knownRoom(t, now, false, 0)
	for _, s := range []*Sale{&raffle, &queue} {
		for u := uint64(1); u <= 8; u++ {
			if v := r.Check(now, s, u, nil, 3); v.Outcome != Queued || v.Place != 0 || v.Position != 8 || v.Chance != -1 {
				t.Fatalf("sale %d: entrant %d without a pass before the reveal: %+v", s.ID, u, v)
			}
		}
	}
	if v := r.Check(now, &raffle, 99, nil, 3); v.Outcome != EntriesClosed {
		t.Fatalf("a raffle's non-entrant: %+v", v)
	}
	if v := r.Check(now, &queue, 99, nil, 3); v.Outcome != NeedJoin {
		t.Fatalf("a queue's non-entrant: %+v", v)
	}
	// A drawn pass the frozen draw does not hold (an entry lost in a
	// failover) is no entry either.
	lost := AppendPass(nil, r.cfg.Ring, Pass{Kind: Drawn, SaleID: 11, UserID: 99, Expires: now.Unix() + 3600})
	if v := r.Check(now, &raffle, 99, lost, 3); v.Outcome != EntriesClosed {
		t.Fatalf("a raffle's lost entry with its pass: %+v", v)
	}
	// Joining after the freeze needs no Redis call: the draw knows nobody
	// new can enter.
	if _, v, err := r.Join(context.Background(), now, &raffle, 99, 3, nil); err != nil || v.Outcome != EntriesClosed {
		t.Fatalf("a raffle's join after the freeze: %+v %v", v, err)
	}
}

// Once the draw is revealed an entrant without their pass is answered from
// it: their place (a sure unit, or the ticket once admitted) or, past the
// units, NOT_SELECTED with the place; a raffle's non-entrant ENTRIES_CLOSED.
func TestEntrantWithoutPassAfterTheReveal(t *testing.T) {
	now := time.Now()
	r, raffle, _, places := knownRoom(t, now, true, 1)
	for u, pl := range places {
		v := r.Check(now, &raffle, u, nil, 3)
		switch {
		case pl == 1:
			if v.Outcome != Admitted || v.Place != 1 {
				t.Fatalf("place 1 without a pass: %+v", v)
			}
		case pl <= raffle.Units:
			if v.Outcome != Queued || v.Place != pl || v.Chance != 1 {
				t.Fatalf("place %d without a pass: %+v", pl, v)
			}
		default:
			if v.Outcome != NotSelected || v.Place != pl {
				t.Fatalf("place %d without a pass: %+v", pl, v)
			}
		}
	}
	if v := r.Check(now, &raffle, 99, nil, 3); v.Outcome != EntriesClosed {
		t.Fatalf("a raffle's non-entrant: %+v", v)
	}
}

// After the sell-out a raffle's place past the units is still told
// NOT_SELECTED (final), with or without the pass, and a place within them
// SOLD_OUT (returned stock may reach it); a queue keeps SOLD_OUT for every
// place.
func TestRaffleNotSelectedAfterTheSellOut(t *testing.T) {
	now := time.Now()
	r, raffle, queue, places := knownRoom(t, now, true, 3)
	for u, pl := range places {
		pass := AppendPass(nil, r.cfg.Ring, Pass{Kind: Drawn, SaleID: 11, UserID: u, Expires: now.Unix() + 3600})
		for name, p := range map[string][]byte{"with its pass": pass, "without a pass": nil} {
			v := r.Check(now, &raffle, u, p, 0)
			if pl > raffle.Units && (v.Outcome != NotSelected || v.Place != pl) {
				t.Fatalf("place %d %s after the sell-out: %+v, want NOT_SELECTED", pl, name, v)
			}
			if pl <= raffle.Units && v.Outcome != SoldOut {
				t.Fatalf("place %d %s after the sell-out: %+v, want SOLD_OUT", pl, name, v)
			}
		}
		if v := r.Check(now, &queue, u, nil, 0); v.Outcome != SoldOut {
			t.Fatalf("a queue's user %d after the sell-out: %+v, want SOLD_OUT", u, v)
		}
	}
	if v := r.Check(now, &raffle, 99, nil, 0); v.Outcome != EntriesClosed {
		t.Fatalf("a raffle's non-entrant after the sell-out: %+v", v)
	}
}
