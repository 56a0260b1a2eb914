package httpapi

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"flashsale/sharding"
	"flashsale/sharding/orderevent"
	"flashsale/sharding/stock"
)

// GET order is never cached, and an order past its deadline with no pay or
// cancel accepted shows EXPIRED at once (a pay is refused from then on),
// before the writer's expiry pass returns its unit; one whose pay was
// accepted in time still shows PENDING until the writer records PAID.
func TestOrderPastItsDeadlineShowsExpired(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 5})
	c := e.serve("10.0.0.1")
	tok := e.token(42)
	id := bought(t, c, tok)
	path := "/api/flash-sales/orders/" + id.String()
	status := func(what, want string) {
		t.Helper()
		r := do(t, c, "GET", path, tok)
		if r.status != 200 || !strings.Contains(r.body, `"status":"`+want+`"`) || r.header["Cache-Control"] != "no-store" {
			t.Fatalf("%s: %d %s, Cache-Control %q; want status %s, no-store", what, r.status, r.body, r.header["Cache-Control"], want)
		}
	}
	status("in its window", "PENDING")
	tag := e.sale.Shards[homeShard(42)]
	past := time.Now().Add(-2 * time.Second) // past the clocks' grace
	e.st.patch(tag, id, "expires", strconv.FormatInt(past.UnixMilli(), 10))
	status("past its deadline", "EXPIRED")
	for _, q := range []string{"pay", "cancel"} {
		e.st.patch(tag, id, "q", q) // act.lua's mark of an accepted request
		status("past its deadline with a "+q+" accepted in time", "PENDING")
	}
	e.st.patch(tag, id, "q", "exp", "status", stock.StatusPending) // expire_claim.lua's claim
	status("claimed for expiry", "EXPIRED")
}

// GET /sales/{saleId}/order finds the caller's order in the sale without
// its id (a closed tab, another device; after the sell-out a purchase is
// answered 410 by the local flag): the same JSON as GET order, 404 for a
// user with none, an unknown or malformed sale; 401 without a token; 503
// when Redis cannot answer; never cached.
func TestHeldOrderIsFoundWithoutItsID(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 5})
	c := e.serve("10.0.0.1")
	tok := e.token(42)
	const path = "/api/flash-sales/sales/77/order"
	want(t, do(t, c, "GET", path, tok), 404, `{"error":"ORDER_NOT_FOUND"}`)
	id := bought(t, c, tok)
	byID := do(t, c, "GET", "/api/flash-sales/orders/"+id.String(), tok)
	held := do(t, c, "GET", path, tok)
	want(t, held, 200, byID.body)
	if held.header["Cache-Control"] != "no-store" {
		t.Fatalf("Cache-Control %q, want no-store", held.header["Cache-Control"])
	}
	want(t, do(t, c, "GET", path, e.token(43)), 404, `{"error":"ORDER_NOT_FOUND"}`)
	want(t, do(t, c, "GET", "/api/flash-sales/sales/78/order", tok), 404, `{"error":"ORDER_NOT_FOUND"}`)
	want(t, do(t, c, "GET", "/api/flash-sales/sales/07/order", tok), 404, `{"error":"ORDER_NOT_FOUND"}`)
	want(t, do(t, c, "GET", path, ""), 401, `{"error":"UNAUTHORIZED"}`)
	want(t, do(t, c, "POST", path, tok), 405, "")
	e.st.set(func(f *scriptStore) { f.err = errRedisDown })
	want(t, do(t, c, "GET", path, tok), 503, `{"error":"UNAVAILABLE"}`)
}

func TestPayAndCancel(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 10})
	c := e.serve("10.0.0.1")
	type step struct {
		status  string // set before the call; "" keeps it
		expired bool
		action  string
		code    int
		body    string
	}
	cases := map[string][]step{
		"pay pending":      {{action: "pay", code: 202, body: `"status":"PENDING"`}},
		"cancel pending":   {{action: "cancel", code: 202, body: `"status":"PENDING"`}},
		"pay expired":      {{status: stock.StatusExpired, action: "pay", code: 409, body: `{"error":"ORDER_EXPIRED"}`}},
		"pay past window":  {{expired: true, action: "pay", code: 409, body: `{"error":"ORDER_EXPIRED"}`}},
		"pay cancelled":    {{status: stock.StatusCancelled, action: "pay", code: 409, body: `{"error":"ORDER_CANCELLED"}`}},
		"pay paid":         {{status: stock.StatusPaid, action: "pay", code: 202, body: `"status":"PAID"`}},
		"cancel paid":      {{status: stock.StatusPaid, action: "cancel", code: 409, body: `{"error":"ORDER_PAID"}`}},
		"cancel cancelled": {{status: stock.StatusCancelled, action: "cancel", code: 202, body: `"status":"CANCELLED"`}},
		"cancel expired":   {{status: stock.StatusExpired, action: "cancel", code: 409, body: `{"error":"ORDER_EXPIRED"}`}},
		"pay failed":       {{status: stock.StatusFailed, action: "pay", code: 409, body: `{"error":"ORDER_FAILED"}`}},
	}
	user := uint64(100)
	for name, steps := range cases {
		user++
		tok := e.token(user)
		id := bought(t, c, tok)
		for _, s := range steps {
			if s.status != "" || s.expired {
				st := s.status
				if st == "" {
					st = stock.StatusPending
				}
				var exp time.Time
				if s.expired {
					exp = time.Now().Add(-time.Second)
				}
				kv := []string{"status", st}
				if !exp.IsZero() {
					kv = append(kv, "expires", strconv.FormatInt(exp.UnixMilli(), 10))
				}
				e.st.patch(e.sale.Shards[homeShard(user)], id, kv...)
			}
			n := len(e.st.journal())
			r := do(t, c, "POST", "/api/flash-sales/orders/"+id.String()+"/"+s.action, tok)
			if r.status != s.code || !strings.Contains(r.body, s.body) {
				t.Fatalf("%s: got %d %s, want %d %s", name, r.status, r.body, s.code, s.body)
			}
			produced := len(e.st.journal()) - n
			if wantEvent := s.status == "" && !s.expired; (produced == 1) != wantEvent {
				t.Fatalf("%s: %d events produced", name, produced)
			}
		}
		want(t, do(t, c, "POST", "/api/flash-sales/orders/"+id.String()+"/pay", e.token(9999)), 404, `{"error":"ORDER_NOT_FOUND"}`)
	}
	want(t, do(t, c, "POST", "/api/flash-sales/orders/"+sharding.NewOrderID(77, 5, 5).String()+"/cancel", ""), 401, "")
}

// A pay or cancel whose outcome is unknown is settled as a purchase is: its
// attempt is voided before the answer, so that a 503 is true (nothing
// journaled, nothing will be) and a 202 is too.
func TestPayOutcomeUnknownIsSettled(t *testing.T) {
	// bought returns a client, the buyer's token and the order id of a 202.
	bought := func(t *testing.T, e *env) (*fasthttp.Client, string, string) {
		c := e.serve("10.0.0.1")
		tok := e.token(42)
		r := do(t, c, "POST", purchasePath, tok)
		want(t, r, 202, "")
		return c, tok, orderIDOf(t, r.body).String()
	}
	pays := func(e *env) (n int) {
		for _, ev := range e.st.journal() {
			if ev.Type == orderevent.Pay {
				n++
			}
		}
		return n
	}
	drain := func(t *testing.T, e *env) {
		deadline := time.Now().Add(5 * time.Second)
		for e.h.retries.pending() > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := e.h.retries.pending(); n > 0 {
			t.Fatalf("%d voids still queued", n)
		}
	}
	t.Run("reply lost once: voided, asked again, 202", func(t *testing.T) {
		e := newEnv(t, envOpt{stockPerShard: 5})
		c, tok, id := bought(t, e)
		e.st.set(func(f *scriptStore) { f.lostActs = 1 })
		want(t, do(t, c, "POST", "/api/flash-sales/orders/"+id+"/pay", tok), 202, `{"orderId":"`+id+`","status":"PENDING"}`)
		if n := pays(e); n != 1 {
			t.Fatalf("%d pay entries journaled, want one (the lost attempt's taken back)", n)
		}
	})
	t.Run("reply lost, then Redis away: 503, and the queued void takes it back", func(t *testing.T) {
		e := newEnv(t, envOpt{stockPerShard: 5})
		c, tok, id := bought(t, e)
		e.st.set(func(f *scriptStore) { f.lostActs, f.voidErr = 1, errRedisDown })
		want(t, do(t, c, "POST", "/api/flash-sales/orders/"+id+"/pay", tok), 503, `{"error":"UNAVAILABLE"}`)
		if n := e.h.retries.pending(); n != 1 {
			t.Fatalf("%d voids queued, want 1", n)
		}
		if n := pays(e); n != 1 {
			t.Fatalf("%d pay entries before the void, want the lost attempt's", n)
		}
		e.st.set(func(f *scriptStore) { f.voidErr = nil })
		drain(t, e)
		if n := pays(e); n != 0 {
			t.Fatalf("%d pay entries after a 503, want none", n)
		}
		// The order is PENDING again: a new pay is accepted.
		want(t, do(t, c, "POST", "/api/flash-sales/orders/"+id+"/pay", tok), 202, "")
		if n := pays(e); n != 1 {
			t.Fatalf("%d pay entries, want 1", n)
		}
	})
	t.Run("Redis away before the script: 503, fenced", func(t *testing.T) {
		e := newEnv(t, envOpt{stockPerShard: 5})
		c, tok, id := bought(t, e)
		e.st.set(func(f *scriptStore) { f.actErr, f.voidErr = errRedisDown, errRedisDown })
		want(t, do(t, c, "POST", "/api/flash-sales/orders/"+id+"/cancel", tok), 503, `{"error":"UNAVAILABLE"}`)
		e.st.set(func(f *scriptStore) { f.voidErr = nil })
		drain(t, e)
		if n := counterValue(t, e.h, "flashsale_gateway_act_voids_total", "fenced"); n != 1 {
			t.Fatalf("act voids fenced: %v, want 1", n)
		}
		if j := e.st.journal(); len(j) != 1 {
			t.Fatalf("journal %+v: a cancel answered 503 was journaled", j)
		}
	})
	t.Run("reply lost, entry already relayed: 202", func(t *testing.T) {
		e := newEnv(t, envOpt{stockPerShard: 5})
		c, tok, id := bought(t, e)
		e.st.set(func(f *scriptStore) { f.lostActs, f.taken = 2, true })
		want(t, do(t, c, "POST", "/api/flash-sales/orders/"+id+"/pay", tok), 202, `{"orderId":"`+id+`","status":"PENDING"}`)
		if n := pays(e); n != 1 {
			t.Fatalf("%d pay entries, want 1", n)
		}
	})
	t.Run("another request holds it: its 202 stays true", func(t *testing.T) {
		e := newEnv(t, envOpt{stockPerShard: 5})
		c, tok, id := bought(t, e)
		want(t, do(t, c, "POST", "/api/flash-sales/orders/"+id+"/pay", tok), 202, "")
		// A second pay's AGAIN reply is lost and Redis goes: its void (queued)
		// lets go of the request, which the first one still holds.
		e.st.set(func(f *scriptStore) { f.lostActs, f.voidErr = 1, errRedisDown })
		want(t, do(t, c, "POST", "/api/flash-sales/orders/"+id+"/pay", tok), 503, `{"error":"UNAVAILABLE"}`)
		e.st.set(func(f *scriptStore) { f.voidErr = nil })
		drain(t, e)
		if n := pays(e); n != 1 {
			t.Fatalf("%d pay entries, want the first request's", n)
		}
	})
}
