package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"flashsale/gateway/internal/app"
	"flashsale/sharding"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

type asked struct {
	code   int
	body   string
	pass   string // X-Queue-Pass of the answer
	cookie string // its Set-Cookie
	retry  string
}

// askTicket posts to the ticket endpoint of gw with token and, when set, a
// queue pass in X-Queue-Pass (header) or the cookie.
func (s *stack) askTicket(gw *app.App, tok, pass string, asCookie bool, hdr ...string) asked {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod("POST")
	req.SetRequestURI(fmt.Sprintf("http://%s/api/flash-sales/sales/%d/ticket", gw.Addr(), s.sale.ID))
	req.Header.Set("Authorization", "Bearer "+tok)
	if pass != "" && asCookie {
		req.Header.SetCookie("fs_queue", pass)
	} else if pass != "" {
		req.Header.Set("X-Queue-Pass", pass)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if err := s.client.DoTimeout(req, resp, 15*time.Second); err != nil {
		s.t.Fatalf("ticket: %v", err)
	}
	return asked{code: resp.StatusCode(), body: string(resp.Body()), pass: string(resp.Header.Peek("X-Queue-Pass")),
		cookie: string(resp.Header.Peek("Set-Cookie")), retry: string(resp.Header.Peek("Retry-After"))}
}

type queued struct {
	Status   string
	Position int64
	Wait     int64 `json:"estimatedWaitSeconds"`
	Ticket   string
}

// TestWaitingRoomOverTwoGateways: a sale with a pre-queue behind two real
// gateways on the stack: a crowd queues before the start, is admitted at
// about remaining x admitFactor per second, buys with its tickets until the
// stock is gone; then every queued user's next poll is SOLD_OUT and nobody
// is admitted, until a returned unit reopens admission.
func TestWaitingRoomOverTwoGateways(t *testing.T) {
	const units, crowd = 12, 60
	s := start(t, units, 2, nil, "")
	sl := *s.sale
	now := time.Now()
	sl.StartsAt, sl.Version, sl.TicketRequired = now.Add(1500*time.Millisecond), sl.Version+1, true
	sl.WaitingRoom = &sale.Room{PreQueue: sale.Duration(time.Minute), StartWindow: sale.Duration(500 * time.Millisecond), AdmitFactor: 2}
	if err := s.store.StoreSale(context.Background(), &sl); err != nil {
		t.Fatal(err)
	}
	s.sale = &sl
	g2 := second(t, s)
	gws := []*app.App{s.app, g2}
	for _, g := range gws {
		if err := g.Catalog.Refresh(context.Background(), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	toks := make([]string, crowd)
	passes := make([]string, crowd)
	for i := range toks {
		toks[i] = token(t, uint64(7000+i))
		a := s.askTicket(gws[i%2], toks[i], "", false)
		var q queued
		if err := json.Unmarshal([]byte(a.body), &q); a.code != 202 || err != nil || q.Status != "QUEUED" || q.Position < 1 || a.retry == "" {
			t.Fatalf("pre-queue %d: %+v", i, a)
		}
		if !strings.Contains(a.cookie, "fs_queue="+a.pass) || !strings.Contains(a.cookie, fmt.Sprintf("path=/api/flash-sales/sales/%d/ticket", sl.ID)) ||
			!strings.Contains(a.cookie, "HttpOnly") || !strings.Contains(a.cookie, "SameSite=Strict") {
			t.Fatalf("pass cookie %q (pass %q)", a.cookie, a.pass)
		}
		passes[i] = a.pass
	}
	badPasses(t, s, gws, toks, passes)

	// The sale starts: everyone polls every 100 ms, alternately with the
	// header and the cookie, and buys with the ticket once admitted.
	admitted, sold := map[int]bool{}, 0
	var firstAdmit time.Time
	for round := 0; sold < units; round++ {
		if round > 150 {
			t.Fatalf("%d of %d sold after 15 s", sold, units)
		}
		for i := 0; i < len(toks) && sold < units; i++ {
			if admitted[i] {
				continue
			}
			a := s.askTicket(gws[(i+round)%2], toks[i], passes[i], round%2 == 0)
			if a.code == 200 {
				if time.Now().Before(sl.StartsAt) {
					t.Fatalf("admitted before the start: %+v", a)
				}
				if firstAdmit.IsZero() {
					firstAdmit = time.Now()
				}
				admitted[i] = true
				if buy(t, s, gws[i%2], toks[i], a.body) {
					sold++
				}
			} else if a.code != 202 {
				it := gws[(i+round)%2].Catalog.Snapshot().Item(s.item)
				t.Fatalf("user %d polled: %+v (sold %d, remaining %d, flag %v, redis %d)", i, a, sold, it.Flags.Remaining(), it.Flags.SoldOut(), s.remaining())
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("sold out %v after the first admission; %d admitted for %d units", time.Since(firstAdmit), len(admitted), units)
	if len(admitted) > units+units/2 {
		t.Fatalf("%d admitted for %d units: admission ran ahead of the stock", len(admitted), units)
	}
	soldOutEverywhere(t, s, gws, toks, passes, admitted)

	// One order is released (an expiry): admission reopens for about one user.
	var winner int
	for i := range admitted {
		winner = i
		break
	}
	user := uint64(7000 + winner)
	tag := sl.Shards[sharding.HomeShard(user, sl.ID, len(sl.Shards))]
	id, found, err := s.store.Holder(context.Background(), tag, user)
	if err != nil || !found {
		t.Fatalf("winner %d holds no order: %v", winner, err)
	}
	if rel, err := s.store.Release(context.Background(), tag, s.item, user, id, stock.StatusExpired); err != nil || rel != stock.Released {
		t.Fatalf("release: %v %v", rel, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for again := 0; again == 0; {
		if time.Now().After(deadline) {
			t.Fatal("a returned unit admitted nobody within 5 s")
		}
		for i := range toks {
			if !admitted[i] {
				if a := s.askTicket(gws[i%2], toks[i], passes[i], false); a.code == 200 {
					admitted[i], again = true, again+1
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// badPasses: a forged, another user's and a malformed pass are 403
// QUEUE_PASS_INVALID, the cookie is cleared, and the user's own pass is
// still good.
func badPasses(t *testing.T, s *stack, gws []*app.App, toks, passes []string) {
	t.Helper()
	forged := []byte(passes[0])
	forged[20] = 'A' + ('B'-forged[20])&1
	for name, p := range map[string]string{"forged": string(forged), "another user's": passes[1], "malformed": "not-a-pass"} {
		a := s.askTicket(gws[0], toks[0], p, false)
		if a.code != 403 || a.body != `{"error":"QUEUE_PASS_INVALID"}` || !strings.Contains(a.cookie, "fs_queue=;") {
			t.Fatalf("%s pass: %+v", name, a)
		}
	}
	if a := s.askTicket(gws[1], toks[0], passes[0], true); a.code != 202 {
		t.Fatalf("own pass after the refusals: %+v", a)
	}
}

// buy purchases with the ticket of an ADMITTED body; false when sold out.
func buy(t *testing.T, s *stack, gw *app.App, tok, body string) bool {
	t.Helper()
	switch code, resp := s.buyAs(gw, tok, "X-Purchase-Ticket", ticketOf(t, body)); code {
	case 202:
		return true
	case 410:
		return false
	default:
		t.Fatalf("purchase with a ticket: %d %s", code, resp)
		return false
	}
}

// ticketOf returns the ticket of an ADMITTED answer's body.
func ticketOf(t *testing.T, body string) string {
	t.Helper()
	var q queued
	if err := json.Unmarshal([]byte(body), &q); err != nil || q.Status != "ADMITTED" || q.Ticket == "" {
		t.Fatalf("admitted body %s", body)
	}
	return q.Ticket
}

// soldOutEverywhere: once each gateway's catalog read the stock at zero,
// every queued user's next poll is 410 SOLD_OUT, and it stays so.
func soldOutEverywhere(t *testing.T, s *stack, gws []*app.App, toks, passes []string, admitted map[int]bool) {
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
	for round := 0; round < 3; round++ {
		for i := range toks {
			if admitted[i] {
				continue
			}
			if a := s.askTicket(gws[(i+round)%2], toks[i], passes[i], false); a.code != 410 || a.body != `{"error":"SOLD_OUT"}` {
				t.Fatalf("queued user %d after the sell-out: %+v", i, a)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}
