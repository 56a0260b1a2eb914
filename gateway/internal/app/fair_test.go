package app_test

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"flashsale/sharding/draw/beacon"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/valyala/fasthttp"

	"flashsale/gateway/internal/app"
	"flashsale/gateway/internal/auth"
	"flashsale/sharding"
	"flashsale/sharding/draw"
	"flashsale/sharding/ops/drawverify"
	"flashsale/sharding/sale"
)

// get sends GET url with token (none when "") and returns status and body.
func (s *stack) get(url, tok string) (int, []byte) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if err := s.client.DoTimeout(req, resp, 15*time.Second); err != nil {
		s.t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...)
}

// publishedDraw is GET .../draw as a client reads it.
type publishedDraw struct {
	SaleID     int64
	Access     string
	State      string
	Commitment *string
	Count      int
	Root, Seed string
	FrozenAt   time.Time
	Committed  bool
	Beacon     *struct {
		Chain, Signature string
		Round            uint64
	}
	From    int
	Next    *int
	Entries []struct {
		Leaf, Draw string
		Place      int
	}
}

// readDraw reads every page of sale's published draw from gw.
func (s *stack) readDraw(gw *app.App) (publishedDraw, draw.Published) {
	s.t.Helper()
	var all publishedDraw
	var pub draw.Published
	for from := 0; ; {
		code, body := s.get(fmt.Sprintf("http://%s/api/flash-sales/sales/%d/draw?from=%d", gw.Addr(), s.sale.ID, from), "")
		var page publishedDraw
		if err := json.Unmarshal(body, &page); code != 200 || err != nil || page.From != from {
			s.t.Fatalf("draw page from %d: %d %s (%v)", from, code, body, err)
		}
		if from == 0 {
			all = page
		}
		for _, e := range page.Entries {
			pub.Leaves = append(pub.Leaves, mustHash(s.t, e.Leaf))
			pub.Draws = append(pub.Draws, mustHash(s.t, e.Draw))
			pub.Places = append(pub.Places, e.Place)
		}
		if page.Next == nil {
			break
		}
		from = *page.Next
	}
	if all.State == "REVEALED" {
		pub.Seed, pub.Root, pub.Count = mustHash(s.t, all.Seed), mustHash(s.t, all.Root), all.Count
		if all.Commitment != nil {
			pub.Commitment = mustHash(s.t, *all.Commitment)
		}
		if b := all.Beacon; b != nil {
			sig, err := hex.DecodeString(b.Signature)
			if err != nil {
				s.t.Fatalf("the beacon's signature %q: %v", b.Signature, err)
			}
			pub.Beacon = &draw.Beacon{Chain: b.Chain, Round: b.Round, Signature: sig}
		}
	}
	return all, pub
}

func mustHash(t testing.TB, s string) draw.Hash {
	h, err := draw.ParseHash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// raffleSale turns s's sale into a raffle whose entries open now and close
// after entries, starting a second and a half later, with its seed
// committed as `flashctl sale create` does.
func raffleSale(t *testing.T, s *stack, entries time.Duration) draw.Hash {
	t.Helper()
	sl := *s.sale
	now := time.Now()
	seed := draw.NewSeed()
	sl.Access, sl.TicketRequired, sl.Version = sale.AccessRaffle, true, sl.Version+1
	sl.Raffle = &sale.Raffle{EntriesOpen: now, EntriesClose: now.Add(entries)}
	sl.StartsAt = now.Add(entries + 1500*time.Millisecond)
	sl.WaitingRoom = &sale.Room{AdmitFactor: 4}
	sl.Draw = &sale.DrawCommitment{Commitment: draw.Commitment(seed).String()}
	c := s.store.Client()
	ctx := context.Background()
	if err := c.Do(ctx, c.B().Set().Key(sharding.RoomSeedKey(sl.ID)).Value(seed.String()).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := s.store.StoreSale(ctx, &sl); err != nil {
		t.Fatal(err)
	}
	s.sale = &sl
	return seed
}

// fairUser is one entrant as the user knows themself.
type fairUser struct {
	id    uint64
	tok   string
	pass  string
	nonce draw.Nonce
	place int
}

// enterAll has n users enter through the gateways, 8 at a time.
func enterAll(t *testing.T, s *stack, gws []*app.App, first uint64, n int) []*fairUser {
	t.Helper()
	us := make([]*fairUser, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	for w := 0; w < 8; w++ {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				u := &fairUser{id: first + uint64(i), tok: token(t, first+uint64(i))}
				a := s.askTicket(gws[i%len(gws)], u.tok, "", false)
				var q struct {
					Status, Mode, Nonce string
				}
				_ = json.Unmarshal([]byte(a.body), &q)
				if _, err := hex.Decode(u.nonce[:], []byte(q.Nonce)); a.code != 202 || q.Status != "QUEUED" || q.Mode != "raffle" || err != nil {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("user %d: %+v", u.id, a))
					mu.Unlock()
					continue
				}
				u.pass, us[i] = a.pass, u
			}
		})
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d entries failed, first: %s", len(bad), bad[0])
	}
	return us
}

// TestRaffleOverThreeGateways: a raffle of 1,000 entrants for 100 units
// behind three real gateways, seen only through the public API. Places
// follow the published seed exactly (recomputed from GET .../draw and each
// user's own id and nonce, and each user's inclusion proof from
// .../draw/me); the published draw verifies, and an added entrant, a
// changed seed and a moved place each make it fail; everyone past place 100
// hears NOT_SELECTED before the start, with the queue pass or without it
// (another device: the draw knows every entrant); the first 100 places, and
// nobody else, are admitted and buy; once the units are sold and most paid,
// the others still hear NOT_SELECTED (final, not SOLD_OUT) with or without
// the pass, and a user who did not enter ENTRIES_CLOSED.
func TestRaffleOverThreeGateways(t *testing.T) {
	const units, crowd = 100, 1000
	s := start(t, units, 2, nil, "")
	seed := raffleSale(t, s, time.Minute)
	gws := []*app.App{s.app, second(t, s), second(t, s)}
	for _, g := range gws {
		if err := g.Catalog.Refresh(context.Background(), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	us := enterAll(t, s, gws, 300_000, crowd)
	closeEntries(t, s, gws)
	time.Sleep(time.Until(s.sale.Raffle.EntriesClose))
	if a := s.askTicket(gws[2], token(t, 299_999), "", false); a.code != 403 || a.body != `{"error":"ENTRIES_CLOSED"}` {
		t.Fatalf("an entry after the close: %+v", a)
	}
	pub := waitRevealed(t, s, gws, seed, crowd)
	for _, g := range gws { // as `flashctl sale draw verify --gateway` does
		doc, err := drawverify.FetchDraw(context.Background(), http.DefaultClient, "http://"+g.Addr(), s.sale.ID)
		if err != nil {
			t.Fatal(err)
		}
		log, err := drawverify.FetchLog(context.Background(), http.DefaultClient, "http://"+g.Addr(), s.sale.ID)
		if err != nil {
			t.Fatal(err)
		}
		if rep, err := drawverify.CheckDraw(doc, log, s.sale.ID); err != nil || !rep.Verified || rep.Count != crowd ||
			!strings.HasPrefix(rep.Sealed, "yes: dev round") || !strings.HasPrefix(rep.Log, "4 entries") {
			t.Fatalf("flashctl's check of the draw: %+v %v", rep, err)
		}
	}
	checkPlaces(t, s, gws, us, &pub)
	head, _ := s.readDraw(gws[1])
	checkEntryFiles(t, s, gws[1], head.FrozenAt, &pub)
	muteDraw(t, &pub)

	// Before the start: every loser hears NOT_SELECTED, every winner sees a
	// sure unit at their place, with the pass and without it (another
	// device, another gateway).
	for i, u := range us {
		for k, pass := range []string{u.pass, ""} {
			a := s.askTicket(gws[(i+k)%3], u.tok, pass, false)
			if u.place > units {
				if want := fmt.Sprintf(`{"error":"NOT_SELECTED","place":%d}`, u.place); a.code != 410 || a.body != want {
					t.Fatalf("user at place %d (pass %q): %+v, want %s", u.place, pass, a, want)
				}
				continue
			}
			if a.code == 200 && !time.Now().Before(s.sale.StartsAt) {
				continue // a slow machine reached the start: admitted, as it should be
			}
			if a.code != 202 || !strings.Contains(a.body, fmt.Sprintf(`,"place":%d,"chance":1.000`, u.place)) {
				t.Fatalf("winner at place %d before the start (pass %q): %+v", u.place, pass, a)
			}
		}
	}
	winners := admitWinners(t, s, gws, us, units)
	payMost(t, s, gws, winners)
	waitSoldOutFlags(t, s, gws)
	for i, u := range us {
		if u.place <= units {
			continue
		}
		want := fmt.Sprintf(`{"error":"NOT_SELECTED","place":%d}`, u.place)
		for k, pass := range []string{u.pass, ""} {
			if a := s.askTicket(gws[(i+k)%3], u.tok, pass, false); a.code != 410 || a.body != want {
				t.Fatalf("a loser at place %d after the sell-out (pass %q): %+v, want %s", u.place, pass, a, want)
			}
		}
	}
	for _, g := range gws {
		if a := s.askTicket(g, token(t, 299_999), "", false); a.code != 403 || a.body != `{"error":"ENTRIES_CLOSED"}` {
			t.Fatalf("a user who did not enter, after the sell-out: %+v", a)
		}
	}
}

// waitSoldOutFlags waits until every gateway flags s's item sold out: from
// then on the ticket endpoint's cheap SOLD_OUT would answer a queue before
// the token.
func waitSoldOutFlags(t *testing.T, s *stack, gws []*app.App) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for _, g := range gws {
		for !g.Catalog.Snapshot().Item(s.item).Flags.SoldOut() {
			if time.Now().After(deadline) {
				t.Fatal("a gateway did not learn of the sell-out within 3 s")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// closeEntries moves the raffle's entries' close to 300 ms from now and its
// start 1.5 s after that (a new version of the sale, read by every
// gateway), so that the entries never race a slow machine.
func closeEntries(t *testing.T, s *stack, gws []*app.App) {
	t.Helper()
	sale := *s.sale
	r := *sale.Raffle
	r.EntriesClose = time.Now().Add(300 * time.Millisecond)
	sale.Raffle, sale.StartsAt, sale.Version = &r, r.EntriesClose.Add(1500*time.Millisecond), sale.Version+1
	sealDraw(t, s, &sale)
	if err := s.store.StoreSale(context.Background(), &sale); err != nil {
		t.Fatal(err)
	}
	s.sale = &sale
	for _, g := range gws {
		if err := g.Catalog.Refresh(context.Background(), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
}

// sealDraw seals sl's draw, whose entries now close for good, as
// `flashctl sale create --beacon dev` does: the first round of the dev
// chain 2 s or more after the close, a head key in Redis, the log's
// commitment entry; the start moves to the round's time when it was before.
func sealDraw(t *testing.T, s *stack, sl *sale.Sale) {
	t.Helper()
	c := beacon.Dev
	key := draw.NewHeadKey()
	d := *sl.Draw
	d.Chain, d.Round, d.HeadKey = c.Hash, c.RoundFor(sl.Raffle.EntriesClose), hex.EncodeToString(key.Public().(ed25519.PublicKey))
	sl.Draw = &d
	if at := c.TimeOf(d.Round); sl.StartsAt.Before(at) {
		sl.StartsAt = at.Add(100 * time.Millisecond)
	}
	ctx := context.Background()
	expire := sl.EndsAt.Add(48 * time.Hour)
	if _, err := s.store.PutDrawHeadKey(ctx, sl.ID, key, expire); err != nil {
		t.Fatal(err)
	}
	e := &draw.Event{Event: draw.EventCommit, At: time.Now().UnixMilli(), Commitment: d.Commitment, Chain: d.Chain, Round: d.Round, HeadKey: d.HeadKey}
	if _, _, err := s.store.LogDrawEvent(ctx, sl.ID, e, expire); err != nil {
		t.Fatal(err)
	}
}

// waitRevealed waits until every gateway serves the revealed draw, the
// same on each, committed to seed.
func waitRevealed(t *testing.T, s *stack, gws []*app.App, seed draw.Hash, crowd int) draw.Published {
	t.Helper()
	deadline := time.Now().Add(6 * time.Second) // the dev chain's round comes 2-3 s after the close
	var first draw.Published
	for i, g := range gws {
		head, pub := s.readDraw(g)
		for head.State != "REVEALED" {
			if time.Now().After(deadline) {
				t.Fatalf("gateway %d: the draw is %s 6 s after the close", i, head.State)
			}
			time.Sleep(50 * time.Millisecond)
			head, pub = s.readDraw(g)
		}
		if head.Count != crowd || !head.Committed || pub.Seed != seed || pub.Commitment != draw.Commitment(seed) {
			t.Fatalf("gateway %d serves %+v", i, head)
		}
		if i == 0 {
			first = pub
		} else if pub.Root != first.Root || fmt.Sprint(pub.Places) != fmt.Sprint(first.Places) {
			t.Fatalf("gateway %d serves another draw", i)
		}
	}
	if err := draw.Verify(&first); err != nil {
		t.Fatal(err)
	}
	return first
}

// checkEntryFiles: the revealed draw is served under its address (draw.ID,
// computed here from what it publishes), page 0 the same bytes as
// .../draw; each entry by its leaf under it, without its nonce, with its
// proof, draw and place, cached for good (a CDN may keep it); a leaf nobody
// has is 404 NOT_ENTERED.
func checkEntryFiles(t *testing.T, s *stack, gw *app.App, frozenAt time.Time, pub *draw.Published) {
	t.Helper()
	at := fmt.Sprintf("http://%s/api/flash-sales/sales/%d/draw/%s", gw.Addr(), s.sale.ID, draw.ID(s.sale.ID, frozenAt, pub))
	_, first := s.get(fmt.Sprintf("http://%s/api/flash-sales/sales/%d/draw", gw.Addr(), s.sale.ID), "")
	if code, page := s.get(at+"/pages/0", ""); code != 200 || string(page) != string(first) {
		t.Fatalf("page 0 under the draw's address: %d, and not .../draw's bytes: %.200s", code, page)
	}
	for _, i := range []int{0, len(pub.Leaves) / 2, len(pub.Leaves) - 1} {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI(fmt.Sprintf("%s/entries/%s", at, pub.Leaves[i]))
		if err := fasthttp.Do(req, resp); err != nil {
			t.Fatal(err)
		}
		var e struct {
			Nonce, Leaf, Root, Draw string
			Index, Place            int
			Proof                   []string
		}
		err := json.Unmarshal(resp.Body(), &e)
		if cc := string(resp.Header.Peek("Cache-Control")); resp.StatusCode() != 200 || err != nil || cc != "public, max-age=31536000, immutable" ||
			e.Nonce != "" || e.Leaf != pub.Leaves[i].String() || e.Index != i || e.Draw != pub.Draws[i].String() || e.Place != pub.Places[i] {
			t.Fatalf("the entry file of leaf %d: %d %q %s", i, resp.StatusCode(), cc, resp.Body())
		}
		proof := make([]draw.Hash, len(e.Proof))
		for k, p := range e.Proof {
			proof[k] = mustHash(t, p)
		}
		if !draw.VerifyInclusion(pub.Leaves[i], i, len(pub.Leaves), proof, pub.Root) {
			t.Fatalf("the entry file of leaf %d: its proof does not rebuild the root", i)
		}
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
	}
	code, body := s.get(fmt.Sprintf("%s/entries/%s", at, draw.Hash{}), "")
	if code != 404 || string(body) != `{"error":"NOT_ENTERED"}` {
		t.Fatalf("the entry file of nobody's leaf: %d %s", code, body)
	}
}

// checkPlaces recomputes each user's place from the published draw and
// their own id and nonce, and checks their entry from .../draw/me.
func checkPlaces(t *testing.T, s *stack, gws []*app.App, us []*fairUser, pub *draw.Published) {
	t.Helper()
	key, err := draw.KeyOf(pub.Seed, pub.Beacon)
	if err != nil {
		t.Fatal(err)
	}
	_, places := draw.Places(key, pub.Root, pub.Leaves)
	at := map[draw.Hash]int{}
	for i, l := range pub.Leaves {
		at[l] = i
	}
	for k, u := range us {
		leaf := draw.Leaf(s.sale.ID, u.id, u.nonce)
		i, ok := at[leaf]
		if !ok {
			t.Fatalf("user %d's leaf is not published", u.id)
		}
		u.place = places[i]
		if k%50 != 0 {
			continue
		}
		code, body := s.get(fmt.Sprintf("http://%s/api/flash-sales/sales/%d/draw/me", gws[k%3].Addr(), s.sale.ID), u.tok)
		var me struct {
			Nonce, Leaf, Root, Draw string
			Index, Count, Place     int
			Proof                   []string
		}
		if err := json.Unmarshal(body, &me); code != 200 || err != nil || me.Leaf != leaf.String() || me.Index != i || me.Place != u.place {
			t.Fatalf("draw/me of user %d: %d %s", u.id, code, body)
		}
		proof := make([]draw.Hash, len(me.Proof))
		for j, p := range me.Proof {
			proof[j] = mustHash(t, p)
		}
		if !draw.VerifyInclusion(leaf, me.Index, me.Count, proof, pub.Root) {
			t.Fatalf("user %d's inclusion proof fails", u.id)
		}
	}
	if code, body := s.get(fmt.Sprintf("http://%s/api/flash-sales/sales/%d/draw/me", gws[0].Addr(), s.sale.ID), token(t, 299_999)); code != 404 || string(body) != `{"error":"NOT_ENTERED"}` {
		t.Fatalf("draw/me of a user who did not enter: %d %s", code, body)
	}
}

// muteDraw: an entrant added after the freeze, a changed seed and a moved
// place each make the published draw fail verification.
func muteDraw(t *testing.T, pub *draw.Published) {
	t.Helper()
	clone := func() draw.Published {
		p := *pub
		p.Leaves, p.Draws, p.Places = append([]draw.Hash(nil), p.Leaves...), append([]draw.Hash(nil), p.Draws...), append([]int(nil), p.Places...)
		return p
	}
	added := clone()
	extra := draw.Leaf(1, 1, draw.NewNonce())
	added.Leaves = append(added.Leaves, extra)
	draw.Sort(added.Leaves)
	key, _ := draw.KeyOf(added.Seed, added.Beacon)
	added.Draws, added.Places = draw.Places(key, added.Root, added.Leaves)
	added.Count++
	reseeded := clone()
	reseeded.Seed = draw.NewSeed()
	moved := clone()
	moved.Places[3], moved.Places[7] = moved.Places[7], moved.Places[3]
	for name, p := range map[string]*draw.Published{"an entrant added": &added, "the seed changed": &reseeded, "a place moved": &moved} {
		if err := draw.Verify(p); err == nil {
			t.Errorf("%s: the draw still verifies", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// admitWinners polls every winner every 100 ms from the start, buys on
// admission, and returns the winners' order ids by user; nobody past the
// units is ever admitted.
func admitWinners(t *testing.T, s *stack, gws []*app.App, us []*fairUser, units int) map[*fairUser]string {
	t.Helper()
	time.Sleep(time.Until(s.sale.StartsAt))
	orders := map[*fairUser]string{}
	for round := 0; len(orders) < units; round++ {
		if round > 150 {
			t.Fatalf("%d of %d winners bought after 15 s", len(orders), units)
		}
		for i, u := range us {
			if _, done := orders[u]; done || u.place > units {
				continue
			}
			a := s.askTicket(gws[(i+round)%3], u.tok, u.pass, round%2 == 0)
			if a.code == 200 {
				orders[u] = buyOrder(t, s, gws[i%3], u.tok, a.body)
			} else if a.code != 202 {
				t.Fatalf("winner at place %d polled: %+v", u.place, a)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if rem := s.remaining(); rem != 0 {
		t.Fatalf("%d units left after every winner bought", rem)
	}
	return orders
}

// buyOrder buys with the ticket of an ADMITTED body and returns the order id.
func buyOrder(t *testing.T, s *stack, gw *app.App, tok, body string) string {
	t.Helper()
	code, resp := s.buyAs(gw, tok, "X-Purchase-Ticket", ticketOf(t, body))
	var o struct{ OrderID string }
	if err := json.Unmarshal([]byte(resp), &o); code != 202 || err != nil || o.OrderID == "" {
		t.Fatalf("a winner's purchase: %d %s", code, resp)
	}
	return o.OrderID
}

// payMost pays 90 % of the winners' orders.
func payMost(t *testing.T, s *stack, gws []*app.App, orders map[*fairUser]string) {
	t.Helper()
	n := 0
	for u, id := range orders {
		if n >= len(orders)*9/10 {
			break
		}
		url := "http://" + gws[n%3].Addr() + "/api/flash-sales/orders/" + id + "/pay"
		if code := post(t, s.client, url, u.tok); code != 202 {
			t.Fatalf("pay of order %s: %d", id, code)
		}
		n++
	}
}

// buyAs posts a purchase of s's item as tok to gw, with the headers hdr
// (name, value, ...), and returns status and body.
func (s *stack) buyAs(gw *app.App, tok string, hdr ...string) (int, string) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod("POST")
	req.SetRequestURI("http://" + gw.Addr() + s.purchasePath())
	req.Header.Set("Authorization", "Bearer "+tok)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if err := s.client.DoTimeout(req, resp, 15*time.Second); err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode(), string(resp.Body())
}

func tierToken(t *testing.T, user uint64, tier string) string {
	tok, err := auth.MintHS256(secret, user, time.Now().Add(time.Hour), map[string]any{"tier": tier})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestPresaleOverTwoGateways: a presale for tokens with tier "gold" and
// for a listed user, capped at 4 of 10 units, behind two real gateways. A
// token without the claim gets 403 PRESALE_ONLY (ticket and purchase) with
// the general start; the listed user buys without the claim; twelve gold
// buyers racing over both gateways get exactly the rest of the cap, the
// others 403 PRESALE_SOLD_OUT; the general phase opens on time to everyone;
// at the end Q = S + P and no unit of the cap leaked.
func TestPresaleOverTwoGateways(t *testing.T) {
	const units, cap = 10, 4
	s := start(t, units, 2, nil, "")
	sl := *s.sale
	now := time.Now()
	sl.StartsAt, sl.Version = now.Add(time.Minute), sl.Version+1
	sl.Presale = &sale.Presale{StartsAt: now.Add(-time.Second), Claim: "tier", Values: []string{"gold"}, List: true, Cap: cap}
	c, ctx := s.store.Client(), context.Background()
	for _, cmd := range []rueidis.Completed{
		c.B().Set().Key(sharding.PresaleCapKey(sl.ID)).Value(fmt.Sprint(cap)).Build(),
		c.B().Sadd().Key(sharding.PresaleListKey(sl.ID)).Member("9001").Build(),
	} {
		if err := c.Do(ctx, cmd).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.store.StoreSale(ctx, &sl); err != nil {
		t.Fatal(err)
	}
	s.sale = &sl
	gws := []*app.App{s.app, second(t, s)}
	for _, g := range gws {
		if err := g.Catalog.Refresh(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := g.Presale.Refresh(ctx, time.Now(), []*sale.Sale{&sl}); err != nil {
			t.Fatal(err)
		}
	}
	only := fmt.Sprintf(`{"error":"PRESALE_ONLY","startsAt":"%s"}`, sl.StartsAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	plain := token(t, 9000)
	if code, body := s.buyAs(gws[0], plain); code != 403 || body != only {
		t.Fatalf("a purchase without the claim in the presale: %d %s", code, body)
	}
	if a := s.askTicket(gws[1], tierToken(t, 9002, "silver"), "", false); a.code != 403 || a.body != only {
		t.Fatalf("a ticket for another tier in the presale: %+v", a)
	}
	if code, body := s.buyAs(gws[1], token(t, 9001)); code != 202 {
		t.Fatalf("the listed user's purchase: %d %s", code, body)
	}
	// A gold buyer's retries with the same Idempotency-Key replay the
	// order: 202 each time, one unit of the cap.
	gold := tierToken(t, 9300, "gold")
	for i := range 3 {
		if code, body := s.buyAs(gws[i%2], gold, "Idempotency-Key", "presale-retry"); code != 202 {
			t.Fatalf("gold buyer's try %d: %d %s", i, code, body)
		}
	}
	accepted, soldOut := raceGold(t, s, gws, 12)
	if accepted != cap-2 || soldOut != 12-accepted {
		t.Fatalf("gold buyers: %d accepted, %d PRESALE_SOLD_OUT, for %d left of the cap", accepted, soldOut, cap-2)
	}
	if n, err := c.Do(ctx, c.B().Get().Key(sharding.PresaleCapKey(sl.ID)).Build()).AsInt64(); err != nil || n != 0 {
		t.Fatalf("presale cap left %d (%v), want 0: a unit leaked or was oversold", n, err)
	}
	// The general phase: everyone, from the start on (brought forward to
	// 1.5 s from now, so that the presale never races a slow machine).
	sl.StartsAt, sl.Version = time.Now().Add(1500*time.Millisecond), sl.Version+1
	if err := s.store.StoreSale(ctx, &sl); err != nil {
		t.Fatal(err)
	}
	for _, g := range gws {
		if err := g.Catalog.Refresh(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if code, body := s.buyAs(gws[1], plain); code != 403 || !strings.HasPrefix(body, `{"error":"PRESALE_ONLY"`) {
		t.Fatalf("a purchase without the claim just before the start: %d %s", code, body)
	}
	time.Sleep(time.Until(sl.StartsAt))
	general := 0
	for i := 0; general < units-cap; i++ {
		if i > 50 {
			t.Fatalf("%d of %d sold in the general phase", general, units-cap)
		}
		code, body := s.buyAs(gws[i%2], token(t, uint64(9100+i)))
		if code == 202 && time.Now().Before(sl.StartsAt) {
			t.Fatal("a purchase without the claim accepted before the start")
		}
		if code == 202 {
			general++
		} else if code != 410 {
			t.Fatalf("a general purchase: %d %s", code, body)
		}
	}
	if rem := s.remaining(); rem+int64(cap)+int64(general) != units || rem != 0 {
		// (cap: the listed buyer, the retrying gold buyer and the race's.)
		t.Fatalf("Q = S + P does not hold: %d left, %d presale and %d general orders of %d", rem, cap, general, units)
	}
}

// raceGold has n gold buyers race over the gateways in the presale and
// counts the 202s and the 403 PRESALE_SOLD_OUT.
func raceGold(t *testing.T, s *stack, gws []*app.App, n int) (accepted, soldOut int) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range n {
		wg.Go(func() {
			code, body := s.buyAs(gws[i%2], tierToken(t, uint64(9200+i), "gold"))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case code == 202:
				accepted++
			case code == 403 && body[:min(len(body), 34)] == `{"error":"PRESALE_SOLD_OUT","start`:
				soldOut++
			default:
				t.Errorf("gold buyer %d: %d %s", i, code, body)
			}
		})
	}
	wg.Wait()
	return accepted, soldOut
}
