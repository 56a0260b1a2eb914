package httpapi

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"flashsale/gateway/internal/room"
	"flashsale/sharding/draw"
	"flashsale/sharding/sale"
)

// raffleEnv is a raffle of 4 units (2 a shard) that started an hour ago,
// whose entries closed an hour before that, with proof of work on; users
// 1..10 entered. Its room has no Redis client: every answer below comes
// from the frozen draw.
func raffleEnv(t testing.TB) (*env, *room.Sale, []uint64) {
	t.Helper()
	now := time.Now()
	e := newEnv(t, envOpt{stockPerShard: 2, access: sale.AccessRaffle, ticketRequired: true, powDifficulty: 8,
		raffle: &sale.Raffle{EntriesOpen: now.Add(-3 * time.Hour), EntriesClose: now.Add(-2 * time.Hour)}})
	cs := e.cat.Snapshot().Sale(77)
	if !cs.InRoom || !cs.Room.Raffle || cs.Room.Units != 4 {
		t.Fatalf("not a raffle of 4 units: %+v", cs.Room)
	}
	return e, &cs.Room, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
}

// An entrant who asks the ticket endpoint without their queue pass
// (another device, a cleared browser) is known by the draw: before the
// reveal they are told they are entered and wait for the draw (202 QUEUED,
// no place), after it their place (the ticket at place 1, a sure unit at 2
// to 4, 410 NOT_SELECTED past the units), never 403 ENTRIES_CLOSED, and
// with no proof of work asked. A user who did not enter is told
// ENTRIES_CLOSED. No Redis call: the room has no client.
func TestRaffleEntrantWithoutPass(t *testing.T) {
	e, rs, users := raffleEnv(t)
	c := e.serve("10.0.0.1")

	e.h.Room.Preset(rs, room.State{Entrants: 10, Final: true, At: time.Now()}, users, nil)
	for _, u := range users {
		r := do(t, c, "POST", ticketPath, e.token(u))
		if r.status != 202 || !strings.HasPrefix(r.body, `{"status":"QUEUED","position":10,`) ||
			!strings.Contains(r.body, `"mode":"raffle"`) || strings.Contains(r.body, `"place"`) {
			t.Fatalf("entrant %d without a pass before the reveal: %d %s", u, r.status, r.body)
		}
	}
	want(t, do(t, c, "POST", ticketPath, e.token(99)), 403, `{"error":"ENTRIES_CLOSED"}`)

	seed := draw.NewSeed()
	f := e.h.Room.Preset(rs, room.State{Cursor: 1, Entrants: 10, Final: true, At: time.Now()}, users, &seed)
	for _, u := range users {
		pl := f.Place(u)
		r := do(t, c, "POST", ticketPath, e.token(u))
		switch {
		case pl == 1:
			if r.status != 200 || !strings.HasPrefix(r.body, `{"status":"ADMITTED","ticket":"`) {
				t.Fatalf("place 1 without a pass: %d %s", r.status, r.body)
			}
		case pl <= 4:
			if r.status != 202 || !strings.Contains(r.body, fmt.Sprintf(`,"place":%d,"chance":1.000`, pl)) {
				t.Fatalf("place %d without a pass: %d %s", pl, r.status, r.body)
			}
		default:
			want(t, r, 410, fmt.Sprintf(`{"error":"NOT_SELECTED","place":%d}`, pl))
		}
	}
	want(t, do(t, c, "POST", ticketPath, e.token(99)), 403, `{"error":"ENTRIES_CLOSED"}`)
	if n := e.st.redisCalls(); n != 0 {
		t.Fatalf("%d Redis calls", n)
	}
}

// After the sell-out a raffle's entrant past the units is told 410
// NOT_SELECTED with the place, with the pass or without it (final: SOLD_OUT
// would invite a retry); an entrant within the units SOLD_OUT (returned
// stock may reach the place); a non-entrant ENTRIES_CLOSED. A queue keeps
// SOLD_OUT for everyone.
func TestRaffleNotSelectedAfterTheSellOut(t *testing.T) {
	e, rs, users := raffleEnv(t)
	c := e.serve("10.0.0.1")
	seed := draw.NewSeed()
	f := e.h.Room.Preset(rs, room.State{Cursor: 4, Entrants: 10, Final: true, At: time.Now()}, users, &seed)
	sellOut(t, e)
	for _, u := range users {
		pl := f.Place(u)
		pass := string(room.AppendPass(nil, testFrontDoorRing, room.Pass{Kind: room.Drawn, SaleID: 77, UserID: u, Expires: e.sale.EndsAt.Unix()}))
		for _, hdr := range [][]string{nil, {"X-Queue-Pass", pass}} {
			r := do(t, c, "POST", ticketPath, e.token(u), hdr...)
			if pl > 4 {
				want(t, r, 410, fmt.Sprintf(`{"error":"NOT_SELECTED","place":%d}`, pl))
			} else {
				want(t, r, 410, `{"error":"SOLD_OUT"}`)
			}
		}
	}
	want(t, do(t, c, "POST", ticketPath, e.token(99)), 403, `{"error":"ENTRIES_CLOSED"}`)

	q := newEnv(t, envOpt{stockPerShard: 2, waitingRoom: &sale.Room{}, ticketRequired: true})
	qc := q.serve("10.0.0.1")
	qf := q.h.Room.Preset(&q.cat.Snapshot().Sale(77).Room, room.State{Cursor: 4, Entrants: 10, Final: true, At: time.Now()}, users, &seed)
	sellOut(t, q)
	for _, u := range users {
		if r := do(t, qc, "POST", ticketPath, q.token(u)); r.status != 410 || r.body != `{"error":"SOLD_OUT"}` {
			t.Fatalf("a queue's place %d after the sell-out: %d %s", qf.Place(u), r.status, r.body)
		}
	}
}

// sellOut empties every shard of the env's item and refreshes the catalog
// until the item is flagged sold out.
func sellOut(t *testing.T, e *env) {
	t.Helper()
	for _, tag := range e.sale.Shards {
		e.st.setStock(tag, 0)
	}
	for i := 0; !saleSoldOut(e.cat.Snapshot().Sale(77)); i++ {
		if i == 5 {
			t.Fatal("the item is not flagged sold out")
		}
		if err := e.cat.Refresh(t.Context(), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
}
