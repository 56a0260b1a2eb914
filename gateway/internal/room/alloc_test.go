//go:build !race

package room

import (
	"testing"
	"time"
)

// TestPollAllocatesNothing: a poll with a pass (queued or admitted), an
// entrant's poll without one (answered from the revealed draw, or entered
// and waiting before the reveal), a raffle's NOT_SELECTED and
// ENTRIES_CLOSED and a refused pass allocate nothing and call no Redis (the
// room has no client).
func TestPollAllocatesNothing(t *testing.T) {
	rg := ring(t, "room-secret-0123456789", "")
	r, err := New(nil, Config{Ring: rg})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s := Sale{ID: 9, Start: now.Add(-time.Minute), End: now.Add(time.Hour), Window: 2 * time.Second, Factor: 1}
	r.track([]Sale{s})
	// Users 5 and 6 drew places 7 and 60 of 100.
	f := &Frozen{Revealed: true, index: map[uint64]int32{5: 0, 6: 1}}
	f.Places = []int{7, 60}
	(*r.rooms.Load())[9].Store(&State{Cursor: 10, Entrants: 100, Final: true, Tail: 5, Frozen: f})
	raffle := s
	raffle.Raffle, raffle.Units = true, 50
	queued := AppendPass(nil, rg, Pass{Kind: Late, SaleID: 9, UserID: 5, Number: 3, Expires: now.Unix() + 3600})
	admitted := AppendPass(nil, rg, Pass{Kind: Drawn, SaleID: 9, UserID: 5, Number: 0, Expires: now.Unix() + 3600})
	forged := append([]byte(nil), queued...)
	forged[5] = 'A' + ('B'-forged[5])&1 // another letter: still base64url, no longer signed
	for name, p := range map[string][]byte{"queued": queued, "admitted": admitted, "forged": forged, "no pass": nil} {
		var v Verdict
		if n := testing.AllocsPerRun(1000, func() { v = r.Check(now, &s, 5, p, 50) }); n != 0 {
			t.Errorf("%s poll: %v allocs", name, n)
		}
		t.Logf("%s: %+v", name, v)
	}
	var v Verdict
	if n := testing.AllocsPerRun(1000, func() { v = r.Check(now, &raffle, 6, nil, 50) }); n != 0 || v.Outcome != NotSelected || v.Place != 60 {
		t.Errorf("not selected: %v allocs, %+v", n, v)
	}
	// Frozen, not revealed yet: an entrant without a pass is entered and
	// waits for the draw, a raffle's non-entrant is told ENTRIES_CLOSED.
	frozen := raffle
	frozen.ID = 10
	r.Preset(&frozen, State{Entrants: 2, Final: true}, []uint64{5, 6}, nil)
	for user, want := range map[uint64]Outcome{5: Queued, 7: EntriesClosed} {
		if n := testing.AllocsPerRun(1000, func() { v = r.Check(now, &frozen, user, nil, 50) }); n != 0 || v.Outcome != want || v.Place != 0 {
			t.Errorf("user %d without a pass before the reveal: %v allocs, %+v", user, n, v)
		}
	}
	if v := r.Check(now, &s, 6, nil, 50); v.Outcome != Queued || v.Place != 60 || v.Chance <= 0 || v.Chance >= 1 {
		t.Fatalf("an entrant without a pass, queued: %+v", v)
	}
	if v := r.Check(now, &s, 5, nil, 50); v.Outcome != Admitted || v.Place != 7 {
		t.Fatalf("an entrant without a pass, admitted: %+v", v)
	}
	if v := r.Check(now, &s, 5, queued, 50); v.Outcome != Queued || v.Place != 103 || v.Position != 93 {
		t.Fatalf("queued: %+v", v)
	}
	if v := r.Check(now, &s, 5, admitted, 50); v.Outcome != Admitted {
		t.Fatalf("admitted: %+v", v)
	}
	if v := r.Check(now, &s, 5, forged, 50); v.Outcome != Refused || v.Problem != PassForged {
		t.Fatalf("forged: %+v", v)
	}
}
