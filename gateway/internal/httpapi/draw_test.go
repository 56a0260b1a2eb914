package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"flashsale/gateway/internal/room"
	"flashsale/sharding/draw"
)

const drawPath = "/api/flash-sales/sales/77/draw"

// TestRevealedDrawByAddress: once revealed, the public draw is served under
// its address (draw.ID over sale, count, root and seed) with a year's
// immutable cache, the same bytes as .../draw (cached 60 s), which names the
// address and the number of pages; an entrant's result is served by leaf
// under the same address. Nothing is served under an address before the
// reveal, under another draw's address, past the last page, or under a
// page number written two ways: each would let one URL name two contents.
func TestRevealedDrawByAddress(t *testing.T) {
	e, rs, users := raffleEnv(t)
	c := e.serve("10.0.0.1")
	before := e.h.Room.Preset(rs, room.State{Entrants: 10, Final: true, At: time.Now()}, users, nil)
	unrevealed := draw.ID(77, before.FrozenAt, &draw.Published{Count: before.Count, Root: before.Root, Seed: draw.NewSeed()})
	for _, id := range []draw.Hash{unrevealed, before.ID} { // (the latter zero until the reveal)
		r := do(t, c, "GET", drawPath+"/"+id.String()+"/pages/0", "")
		want(t, r, 404, `{"error":"NOT_FOUND"}`)
		if r.header["Cache-Control"] != "no-store" {
			t.Fatalf("404 under an address before the reveal: Cache-Control %q, want no-store (another gateway may reveal first)", r.header["Cache-Control"])
		}
	}

	seed := draw.NewSeed()
	f := e.h.Room.Preset(rs, room.State{Cursor: 1, Entrants: 10, Final: true, At: time.Now()}, users, &seed)
	id := draw.ID(77, f.FrozenAt, &f.Published)
	if f.ID != id {
		t.Fatalf("the room's draw id %s, want draw.ID of what it publishes %s", f.ID, id)
	}
	pub := do(t, c, "GET", drawPath, "")
	var doc struct {
		ID    string `json:"id"`
		Pages int    `json:"pages"`
		Seed  string `json:"seed"`
	}
	if err := json.Unmarshal([]byte(pub.body), &doc); pub.status != 200 || err != nil || doc.ID != id.String() || doc.Pages != 1 || doc.Seed != seed.String() ||
		pub.header["Cache-Control"] != "public, max-age=60" {
		t.Fatalf("the revealed draw: %d %q %s (%v), want its id %s and 1 page, cached 60 s", pub.status, pub.header["Cache-Control"], pub.body, err, id)
	}
	at := drawPath + "/" + id.String()
	page := do(t, c, "GET", at+"/pages/0", "")
	if page.status != 200 || page.body != pub.body || page.header["Cache-Control"] != "public, max-age=31536000, immutable" {
		t.Fatalf("page 0 under the address: %d %q, want .../draw's bytes cached for good\n%s\n%s", page.status, page.header["Cache-Control"], page.body, pub.body)
	}
	for _, p := range []string{at + "/pages/1", at + "/pages/00", at + "/pages/-0", at + "/pages/", at + "/pages/0x",
		drawPath + "/" + unrevealed.String() + "/pages/0", drawPath + "/" + strings.ToUpper(id.String()) + "/pages/0"} {
		want(t, do(t, c, "GET", p, ""), 404, `{"error":"NOT_FOUND"}`)
	}
	leaf := f.Leaves[3]
	en := do(t, c, "GET", at+"/entries/"+leaf.String(), "")
	var got struct {
		Leaf  string `json:"leaf"`
		Place int    `json:"place"`
		Nonce string `json:"nonce"`
	}
	if err := json.Unmarshal([]byte(en.body), &got); en.status != 200 || err != nil || got.Leaf != leaf.String() || got.Place != f.Places[3] ||
		got.Nonce != "" || en.header["Cache-Control"] != "public, max-age=31536000, immutable" {
		t.Fatalf("the entry of leaf 3 under the address: %d %q %s (%v)", en.status, en.header["Cache-Control"], en.body, err)
	}
	want(t, do(t, c, "GET", at+"/entries/"+draw.Hash{}.String(), ""), 404, `{"error":"NOT_ENTERED"}`)
	want(t, do(t, c, "GET", at+"/entries/xyz", ""), 404, `{"error":"NOT_ENTERED"}`)
	want(t, do(t, c, "GET", drawPath+"/"+unrevealed.String()+"/entries/"+leaf.String(), ""), 404, `{"error":"NOT_FOUND"}`)
	want(t, do(t, c, "POST", at+"/pages/0", ""), 405, "")
}

// TestFrozenDrawAnswersFromMemory: from the freeze on, .../draw/me answers
// an entrant with their proof and anyone else 404 NOT_ENTERED from the
// frozen draw, with no Redis call (the room has no client): the entrants
// are final, and a crowd polling while it waits for the beacon round costs
// Redis nothing.
func TestFrozenDrawAnswersFromMemory(t *testing.T) {
	e, rs, users := raffleEnv(t)
	c := e.serve("10.0.0.1")
	e.h.Room.Preset(rs, room.State{Entrants: 10, Final: true, At: time.Now()}, users, nil)
	r := do(t, c, "GET", drawPath+"/me", e.token(users[2]))
	if r.status != 200 || !strings.Contains(r.body, `"proof":[`) || strings.Contains(r.body, `"place"`) {
		t.Fatalf("an entrant of the frozen draw: %d %s", r.status, r.body)
	}
	want(t, do(t, c, "GET", drawPath+"/me", e.token(99)), 404, `{"error":"NOT_ENTERED"}`)
}
