package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"flashsale/gateway/internal/auth"
	"flashsale/sharding"
	"flashsale/sharding/orderevent"
	"flashsale/sharding/stock"
)

const purchasePath = "/api/flash-sales/items/7/purchase"

func orderIDOf(t *testing.T, body string) sharding.OrderID {
	t.Helper()
	var v struct{ OrderID string }
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	id, ok := sharding.ParseOrderID([]byte(v.OrderID))
	if !ok {
		t.Fatalf("body %q: malformed order id", body)
	}
	return id
}

func want(t *testing.T, r reply, status int, body string) {
	t.Helper()
	if r.status != status || (body != "" && r.body != body) {
		t.Fatalf("got %d %s, want %d %s", r.status, r.body, status, body)
	}
	if r.header["Content-Type"] != "application/json" {
		t.Fatalf("Content-Type %q", r.header["Content-Type"])
	}
}

func TestPurchaseAcceptedThenAlreadyPurchased(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 5})
	c := e.serve("10.0.0.1")
	tok := e.token(42)
	r := do(t, c, "POST", purchasePath, tok)
	want(t, r, 202, "")
	id := orderIDOf(t, r.body)
	if !strings.HasSuffix(r.body, `"status":"PENDING"}`) || id.SaleID() != 77 {
		t.Fatalf("body %s", r.body)
	}
	if j := e.st.journal(); len(j) != 1 || j[0].OrderID != id || j[0].UserID != 42 || j[0].ItemID != 7 || j[0].SaleID != 77 {
		t.Fatalf("journal %+v", j)
	}
	r = do(t, c, "POST", purchasePath, tok)
	want(t, r, 409, `{"error":"ALREADY_PURCHASED","orderId":"`+id.String()+`"}`)

	// GET shows PENDING to the owner and nothing to anyone else.
	r = do(t, c, "GET", "/api/flash-sales/orders/"+id.String(), tok)
	want(t, r, 200, "")
	var got map[string]any
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	if got["status"] != "PENDING" || got["orderId"] != id.String() || got["saleId"] != 77.0 || got["itemId"] != 7.0 {
		t.Fatalf("order %s", r.body)
	}
	for _, k := range []string{"createdAt", "expiresAt"} {
		v := got[k].(string)
		if _, err := time.Parse(time.RFC3339, v); err != nil || len(v) != len("2006-01-02T15:04:05.000Z") || v[19] != '.' {
			t.Fatalf("%s %q: want RFC 3339 with milliseconds (%v)", k, v, err)
		}
	}
	if got["persisted"] != false {
		t.Fatalf("persisted before the writer marked the order: %s", r.body)
	}
	e.st.mu.Lock()
	e.st.records[id].Persisted = true
	e.st.mu.Unlock()
	r = do(t, c, "GET", "/api/flash-sales/orders/"+id.String(), tok)
	if !strings.HasSuffix(r.body, `,"persisted":true}`) {
		t.Fatalf("persisted after the writer marked the order: %s", r.body)
	}
	want(t, do(t, c, "GET", "/api/flash-sales/orders/"+id.String(), e.token(43)), 404, `{"error":"ORDER_NOT_FOUND"}`)
	want(t, do(t, c, "GET", "/api/flash-sales/orders/"+id.String(), ""), 401, `{"error":"UNAUTHORIZED"}`)
	want(t, do(t, c, "GET", "/api/flash-sales/orders/not-a-uuid", tok), 404, `{"error":"ORDER_NOT_FOUND"}`)
	other := sharding.NewOrderID(999, 1, 2)
	want(t, do(t, c, "GET", "/api/flash-sales/orders/"+other.String(), tok), 404, `{"error":"ORDER_NOT_FOUND"}`)
}

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
	e.st.mu.Lock()
	rec := e.st.records[id]
	rec.Expires = time.Now().Add(-2 * time.Second) // past the clocks' grace
	e.st.mu.Unlock()
	status("past its deadline", "EXPIRED")
	for _, q := range []string{"pay", "cancel"} {
		e.st.mu.Lock()
		rec.q = q
		e.st.mu.Unlock()
		status("past its deadline with a "+q+" accepted in time", "PENDING")
	}
	e.st.mu.Lock()
	rec.q, rec.Status = "exp", stock.StatusPending
	e.st.mu.Unlock()
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
	e.st.set(func(f *fakeStore) { f.err = errRedisDown })
	want(t, do(t, c, "GET", path, tok), 503, `{"error":"UNAVAILABLE"}`)
}

func TestIdempotencyKeyNamesTheSameOrder(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 5})
	c := e.serve("10.0.0.1")
	tok := e.token(42)
	r1 := do(t, c, "POST", purchasePath, tok, "Idempotency-Key", "k-1")
	want(t, r1, 202, "")
	r2 := do(t, c, "POST", purchasePath, tok, "idempotency-key", "k-1")
	want(t, r2, 202, r1.body)
	// The replay journals nothing: the first attempt's entry carries the order.
	if j := e.st.journal(); len(j) != 1 || j[0].OrderID != orderIDOf(t, r1.body) {
		t.Fatalf("journal %+v", j)
	}
	// Another key is another purchase: the user already holds one.
	r3 := do(t, c, "POST", purchasePath, tok, "Idempotency-Key", "k-2")
	want(t, r3, 409, "")
	// The key's order ended: the same key buys again (SPEC: the user may),
	// under its next id, and a retry of that purchase replays it.
	id := orderIDOf(t, r1.body)
	tag := e.sale.Shards[sharding.HomeShard(42, 77, 2)]
	if !e.st.release(tag, 7, 42, id, stock.StatusExpired) {
		t.Fatal("release failed")
	}
	r4 := do(t, c, "POST", purchasePath, tok, "Idempotency-Key", "k-1")
	want(t, r4, 202, "")
	id2 := orderIDOf(t, r4.body)
	if id2 == id {
		t.Fatal("the second purchase reused the ended order's id")
	}
	want(t, do(t, c, "POST", purchasePath, tok, "Idempotency-Key", "k-1"), 202, r4.body)
	want(t, do(t, c, "POST", purchasePath, tok, "Idempotency-Key", "k-2"), 409, `{"error":"ALREADY_PURCHASED","orderId":"`+id2.String()+`"}`)
	if j := e.st.journal(); len(j) != 2 || j[1].OrderID != id2 {
		t.Fatalf("journal %+v, want the two orders", j)
	}
}

func TestIdempotencyKeyOrdersAreBounded(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 2 * maxKeyedOrders, shards: 1})
	c := e.serve("10.0.0.1")
	tok := e.token(42)
	seen := map[sharding.OrderID]bool{}
	var last sharding.OrderID
	for i := range maxKeyedOrders {
		r := do(t, c, "POST", purchasePath, tok, "Idempotency-Key", "k")
		want(t, r, 202, "")
		if last = orderIDOf(t, r.body); seen[last] {
			t.Fatalf("purchase %d named order %v again", i, last)
		}
		seen[last] = true
		if !e.st.release(e.sale.Shards[0], 7, 42, last, stock.StatusCancelled) {
			t.Fatal("release failed")
		}
	}
	// Every id of the key is used and ended: the key names its last order.
	want(t, do(t, c, "POST", purchasePath, tok, "Idempotency-Key", "k"), 409, `{"error":"ALREADY_PURCHASED","orderId":"`+last.String()+`"}`)
	// A new key buys.
	want(t, do(t, c, "POST", purchasePath, tok, "Idempotency-Key", "k2"), 202, "")
}

// goldKeyedID is the id earlier releases derived for key "k" of user 42,
// item 7, sale 77.
const goldKeyedID = "0000004d-3398-8839-a6e0-013485114233"

func TestKeyedOrderIDs(t *testing.T) {
	a := keyedOrderID([]byte("k"), 77, 7, 42, 0)
	if a != keyedOrderID([]byte("k"), 77, 7, 42, 0) {
		t.Fatal("not deterministic")
	}
	// The first id is the one earlier releases derived: in-flight retries
	// across an upgrade name the same order.
	if got := a.String(); got != goldKeyedID {
		t.Fatalf("first id of key k: %s, want %s", got, goldKeyedID)
	}
	ids := map[sharding.OrderID]string{}
	for _, c := range []struct {
		key              string
		sale, item, user int
		gen              int
	}{{"k", 77, 7, 42, 0}, {"k", 77, 7, 42, 1}, {"k", 77, 7, 42, 2}, {"k", 77, 7, 43, 1}, {"k", 77, 8, 42, 1}, {"k\x00\x01", 77, 7, 42, 0}, {"j", 77, 7, 42, 1}} {
		id := keyedOrderID([]byte(c.key), int64(c.sale), int64(c.item), uint64(c.user), c.gen)
		if prev, dup := ids[id]; dup {
			t.Fatalf("%+v and %s share id %v", c, prev, id)
		}
		ids[id] = fmt.Sprintf("%+v", c)
		if id.SaleID() != int64(c.sale) {
			t.Fatalf("%+v: id %v names sale %d", c, id, id.SaleID())
		}
	}
}

func TestSoldOutSetsTheFlag(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 0, shards: 1})
	c := e.serve("10.0.0.1")
	tok := e.token(42)
	// The first refresh read zero stock: the flag is already set and Redis
	// is never asked.
	want(t, do(t, c, "POST", purchasePath, tok), 410, `{"error":"SOLD_OUT"}`)
	if n, _ := e.st.counts(); n != 0 {
		t.Fatalf("%d reserve calls with the flag set", n)
	}
	// Stock comes back: the poll clears the flag and the purchase goes through.
	e.st.mu.Lock()
	e.st.stock[stockKey{e.sale.Shards[0], 7}] = 1
	e.st.mu.Unlock()
	if err := e.cat.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	want(t, do(t, c, "POST", purchasePath, tok), 202, "")
	// The next buyer finds the shard empty: the reply sets the flag.
	want(t, do(t, c, "POST", purchasePath, e.token(43)), 410, `{"error":"SOLD_OUT"}`)
	if !e.cat.Snapshot().Item(7).Flags.SoldOut() {
		t.Fatal("flag not set by the SOLD_OUT reply")
	}
	n, _ := e.st.counts()
	want(t, do(t, c, "POST", purchasePath, e.token(44)), 410, `{"error":"SOLD_OUT"}`)
	if n2, _ := e.st.counts(); n2 != n {
		t.Fatal("reserve called although the item is flagged")
	}
}

func TestHomeShardFlaggedWhileOthersHaveStock(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 1, shards: 2})
	c := e.serve("10.0.0.1")
	// Find two users with the same home shard and one with the other.
	var same []uint64
	var other uint64
	for u := uint64(1); len(same) < 2 || other == 0; u++ {
		if sharding.HomeShard(u, 77, 2) == 0 {
			if len(same) < 2 {
				same = append(same, u)
			}
		} else if other == 0 {
			other = u
		}
	}
	want(t, do(t, c, "POST", purchasePath, e.token(same[0])), 202, "")
	want(t, do(t, c, "POST", purchasePath, e.token(same[1])), 410, `{"error":"SOLD_OUT"}`)
	it := e.cat.Snapshot().Item(7)
	if it.Flags.SoldOut() || !it.Flags.ShardSoldOut(0) {
		t.Fatal("want shard 0 flagged, item not")
	}
	want(t, do(t, c, "POST", purchasePath, e.token(other)), 202, "")
}

func TestSaleWindow(t *testing.T) {
	now := time.Now()
	e := newEnv(t, envOpt{stockPerShard: 1, start: now.Add(time.Hour), end: now.Add(2 * time.Hour)})
	c := e.serve("10.0.0.1")
	startsAt := e.sale.StartsAt.UTC().Format(rfc3339Milli)
	want(t, do(t, c, "POST", purchasePath, e.token(1)), 403, `{"error":"SALE_NOT_STARTED","startsAt":"`+startsAt+`"}`)

	e = newEnv(t, envOpt{stockPerShard: 1, start: now.Add(-2 * time.Hour), end: now.Add(-time.Hour)})
	c = e.serve("10.0.0.1")
	want(t, do(t, c, "POST", purchasePath, e.token(1)), 410, `{"error":"SALE_ENDED"}`)
}

func TestUnauthorized(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 1})
	c := e.serve("10.0.0.1")
	expired, _ := auth.MintHS256(testSecret, 5, time.Now().Add(-time.Hour), nil)
	wrongKey, _ := auth.MintHS256([]byte("another-secret-0123456789"), 5, time.Now().Add(time.Hour), nil)
	for _, tok := range []string{"", "garbage", "a.b.c", expired, wrongKey, strings.Repeat("x", 5000)} {
		want(t, do(t, c, "POST", purchasePath, tok), 401, `{"error":"UNAUTHORIZED"}`)
	}
	want(t, do(t, c, "POST", purchasePath, "", "Authorization", "Basic Zm9vOmJhcg=="), 401, `{"error":"UNAUTHORIZED"}`)
	if n, _ := e.st.counts(); n != 0 {
		t.Fatalf("%d reserve calls for refused tokens", n)
	}
}

func TestNotFoundAndMethods(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 1})
	c := e.serve("10.0.0.1")
	tok := e.token(1)
	for _, p := range []string{"/api/flash-sales/items/8/purchase", "/api/flash-sales/items/abc/purchase",
		"/api/flash-sales/items/-7/purchase", "/api/flash-sales/items/07/purchase", "/api/flash-sales/items/99999999999999999999/purchase"} {
		want(t, do(t, c, "POST", p, tok), 404, `{"error":"ITEM_NOT_FOUND"}`)
	}
	for _, p := range []string{"/", "/api/flash-sales/", "/api/flash-sales/items/7", "/api/flash-sales/items/7/purchase/x", "/api/other"} {
		want(t, do(t, c, "POST", p, tok), 404, `{"error":"NOT_FOUND"}`)
	}
	r := do(t, c, "GET", purchasePath, tok)
	want(t, r, 405, `{"error":"METHOD_NOT_ALLOWED"}`)
	if r.header["Allow"] != "POST" {
		t.Fatalf("Allow %q", r.header["Allow"])
	}
	r = do(t, c, "POST", "/api/flash-sales/sales/77", tok)
	want(t, r, 405, "")
	if r.header["Allow"] != "GET, HEAD" {
		t.Fatalf("Allow %q", r.header["Allow"])
	}
	// HEAD is GET without the body, on every GET route; never on a POST one.
	for _, p := range []string{"/api/flash-sales/sales/77", "/api/flash-sales/time"} {
		get, head := do(t, c, "GET", p, ""), do(t, c, "HEAD", p, "")
		if get.status != 200 || head.status != 200 || head.body != "" || head.header["Cache-Control"] != get.header["Cache-Control"] {
			t.Fatalf("HEAD %s: %d %q %q, GET: %d %q", p, head.status, head.body, head.header["Cache-Control"], get.status, get.header["Cache-Control"])
		}
	}
	want(t, do(t, c, "HEAD", "/api/flash-sales/orders/"+sharding.NewOrderID(77, 1, 1).String(), tok), 404, "")
	if r = do(t, c, "HEAD", purchasePath, tok); r.status != 405 || r.header["Allow"] != "POST" {
		t.Fatalf("HEAD purchase: %d Allow %q, want 405 POST", r.status, r.header["Allow"])
	}
	want(t, do(t, c, "DELETE", "/api/flash-sales/orders/"+sharding.NewOrderID(77, 1, 1).String(), tok), 405, "")
	want(t, do(t, c, "GET", "/api/flash-sales/orders/"+sharding.NewOrderID(77, 1, 1).String()+"/pay", tok), 405, "")
}

func TestRateLimited(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 100, ipBurst: 2})
	c := e.serve("10.0.0.9")
	tok := e.token(1)
	do(t, c, "POST", purchasePath, tok)
	do(t, c, "POST", purchasePath, tok)
	r := do(t, c, "POST", purchasePath, tok)
	want(t, r, 429, `{"error":"RATE_LIMITED"}`)
	if r.header["Retry-After"] == "" || r.header["Retry-After"] == "0" {
		t.Fatalf("Retry-After %q", r.header["Retry-After"])
	}
	// Another client IP has its own bucket.
	want(t, do(t, e.serve("10.0.0.10"), "POST", purchasePath, e.token(2)), 202, "")

	e = newEnv(t, envOpt{stockPerShard: 100, userBurst: 1})
	c = e.serve("10.0.0.9")
	tok = e.token(5)
	want(t, do(t, c, "POST", purchasePath, tok), 202, "")
	r = do(t, c, "POST", purchasePath, tok)
	want(t, r, 429, `{"error":"RATE_LIMITED"}`)
	if r.header["Retry-After"] == "" {
		t.Fatal("no Retry-After")
	}
}

// A 503 is true: whatever happened to the attempt in Redis, nothing stays
// reserved and nothing stays journaled for it; a void that finds the entry
// already taken by a relay answers 202, which is then true.
func TestUnavailable(t *testing.T) {
	settled := func(t *testing.T, e *env) {
		t.Helper()
		if j := e.st.journal(); len(j) != 0 {
			t.Fatalf("journal %+v after a 503", j)
		}
		e.st.mu.Lock()
		defer e.st.mu.Unlock()
		if got := e.st.stock[stockKey{e.sale.Shards[0], 7}]; got != 1 {
			t.Fatalf("stock %d after a 503, want 1", got)
		}
		if len(e.st.buyers[e.sale.Shards[0]]) != 0 {
			t.Fatal("buyer record left behind")
		}
	}
	t.Run("redis down", func(t *testing.T) {
		e := newEnv(t, envOpt{stockPerShard: 1, shards: 1})
		c := e.serve("10.0.0.1")
		e.st.set(func(f *fakeStore) { f.err = errRedisDown })
		want(t, do(t, c, "POST", purchasePath, e.token(1)), 503, `{"error":"UNAVAILABLE"}`)
		if _, voids := e.st.counts(); voids != 1 {
			t.Fatalf("%d voids, want 1", voids)
		}
		// The void left a VOID record: the same attempt arriving late is refused.
		e.st.set(func(f *fakeStore) { f.err = nil })
		e.st.mu.Lock()
		records := maps.Clone(e.st.records)
		e.st.mu.Unlock()
		for id, rec := range records {
			if rec.Status != stock.StatusVoid {
				t.Fatalf("record %v is %s, want VOID", id, rec.Status)
			}
			res, err := e.st.Reserve(context.Background(), stock.Reservation{Tag: e.sale.Shards[0], SaleID: 77, ItemID: 7, UserID: 1, OrderID: id, Attempt: rec.attempt})
			if err != nil || res.Outcome != stock.IDUsed {
				t.Fatalf("late run of the voided attempt: %+v %v, want refused", res, err)
			}
		}
		settled(t, e)
	})
	t.Run("reply lost", func(t *testing.T) {
		e := newEnv(t, envOpt{stockPerShard: 1, shards: 1})
		c := e.serve("10.0.0.1")
		e.st.set(func(f *fakeStore) { f.lostReply = true })
		want(t, do(t, c, "POST", purchasePath, e.token(1)), 503, `{"error":"UNAVAILABLE"}`)
		settled(t, e)
	})
	t.Run("reply lost, entry already relayed", func(t *testing.T) {
		e := newEnv(t, envOpt{stockPerShard: 1, shards: 1})
		c := e.serve("10.0.0.1")
		e.st.set(func(f *fakeStore) { f.lostReply, f.taken = true, true })
		r := do(t, c, "POST", purchasePath, e.token(1))
		want(t, r, 202, "")
		if j := e.st.journal(); len(j) != 1 || j[0].OrderID != orderIDOf(t, r.body) {
			t.Fatalf("journal %+v, want the order's entry", j)
		}
	})
	t.Run("journal full", func(t *testing.T) {
		e := newEnv(t, envOpt{stockPerShard: 2, shards: 1})
		c := e.serve("10.0.0.1")
		e.st.set(func(f *fakeStore) { f.bound = 1 })
		want(t, do(t, c, "POST", purchasePath, e.token(1)), 202, "")
		want(t, do(t, c, "POST", purchasePath, e.token(2)), 503, `{"error":"UNAVAILABLE"}`)
		if got := e.st.stock[stockKey{e.sale.Shards[0], 7}]; got != 1 || len(e.st.journal()) != 1 {
			t.Fatalf("stock %d, journal %d after a full journal's 503; want 1 and 1", got, len(e.st.journal()))
		}
		if _, voids := e.st.counts(); voids != 0 {
			t.Fatal("a definite refusal was voided")
		}
	})
	t.Run("void unreachable", func(t *testing.T) {
		e := newEnv(t, envOpt{stockPerShard: 1, shards: 1})
		c := e.serve("10.0.0.1")
		e.st.set(func(f *fakeStore) { f.lostReply, f.voidErr = true, errRedisDown })
		want(t, do(t, c, "POST", purchasePath, e.token(1)), 503, `{"error":"UNAVAILABLE"}`)
		if e.h.retries.pending() != 1 {
			t.Fatalf("%d voids queued, want 1", e.h.retries.pending())
		}
		// Redis is back: the queue voids the attempt.
		e.st.set(func(f *fakeStore) { f.voidErr = nil })
		deadline := time.Now().Add(5 * time.Second)
		for e.h.retries.pending() > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		settled(t, e)
	})
	t.Run("voids unreachable: one try per shard and round, all settled soon after", func(t *testing.T) {
		// A relay takes nothing from a shard it could not see until the shard
		// has answered for 3 s (journal.Config): the queue must void in less.
		const users = 20
		e := newEnv(t, envOpt{stockPerShard: users, shards: 1})
		c := e.serve("10.0.0.1")
		e.st.set(func(f *fakeStore) { f.lostReply, f.voidErr = true, errRedisDown })
		var wg sync.WaitGroup
		for u := range uint64(users) {
			wg.Go(func() { want(t, do(t, c, "POST", purchasePath, e.token(u+1)), 503, `{"error":"UNAVAILABLE"}`) })
		}
		wg.Wait()
		if n := e.h.retries.pending(); n != users {
			t.Fatalf("%d voids queued, want %d", n, users)
		}
		_, before := e.st.counts()
		time.Sleep(2 * time.Second) // a failover's length
		_, during := e.st.counts()
		// One try per round of 50 ms at most; a try per void would be about 160.
		if n := during - before; n < 1 || n > 42 {
			t.Fatalf("%d tries of %d queued voids of one shard in 2 s, want 1-42", n, users)
		}
		e.st.set(func(f *fakeStore) { f.voidErr = nil })
		back := time.Now()
		for e.h.retries.pending() > 0 && time.Since(back) < 5*time.Second {
			time.Sleep(10 * time.Millisecond)
		}
		if took := time.Since(back); e.h.retries.pending() > 0 || took > time.Second {
			t.Fatalf("%d voids still queued %v after Redis came back, want none within 1 s", e.h.retries.pending(), took)
		}
		e.st.mu.Lock()
		defer e.st.mu.Unlock()
		if got := e.st.stock[stockKey{e.sale.Shards[0], 7}]; got != users || len(e.st.buyers[e.sale.Shards[0]]) != 0 {
			t.Fatalf("stock %d and %d buyer records after the voids, want %d and none", got, len(e.st.buyers[e.sale.Shards[0]]), users)
		}
	})
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
				e.st.setStatus(id, st, exp)
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

func TestSaleDescription(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 3})
	c := e.serve("10.0.0.1")
	r := do(t, c, "GET", "/api/flash-sales/sales/77", "")
	want(t, r, 200, "")
	if r.header["Cache-Control"] != "public, max-age=1" {
		t.Fatalf("Cache-Control %q", r.header["Cache-Control"])
	}
	var d struct {
		SaleID        int64  `json:"saleId"`
		Name          string `json:"name"`
		Status        string `json:"status"`
		StartsAt      string `json:"startsAt"`
		EndsAt        string `json:"endsAt"`
		PaymentWindow string `json:"paymentWindow"`
		Items         []struct {
			ItemID, Price, Quantity int64
			Remaining               *int64
			Name, Currency          string
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.body), &d); err != nil {
		t.Fatalf("%s: %v", r.body, err)
	}
	if d.SaleID != 77 || d.Name != `Test "sale"` || len(d.Items) != 1 || d.Items[0].Remaining == nil || *d.Items[0].Remaining != 6 ||
		d.Items[0].Quantity != 6 || d.Items[0].Price != 1999 || d.PaymentWindow != "10m0s" || d.Status != "ACTIVE" {
		t.Fatalf("description %s", r.body)
	}
	want(t, do(t, c, "GET", "/api/flash-sales/sales/78", ""), 404, `{"error":"SALE_NOT_FOUND"}`)
	want(t, do(t, c, "GET", "/api/flash-sales/sales/x", ""), 404, `{"error":"SALE_NOT_FOUND"}`)
}

func TestWinnerRepeatAfterSoldOut(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 1, shards: 1})
	c := e.serve("10.0.0.1")
	tok := e.token(1)
	id := bought(t, c, tok)
	want(t, do(t, c, "POST", purchasePath, e.token(2)), 410, `{"error":"SOLD_OUT"}`)
	if !e.cat.Snapshot().Item(7).Flags.SoldOut() {
		t.Fatal("not flagged")
	}
	n, _ := e.st.counts()
	want(t, do(t, c, "POST", purchasePath, tok), 409, `{"error":"ALREADY_PURCHASED","orderId":"`+id.String()+`"}`)
	if n2, _ := e.st.counts(); n2 != n {
		t.Fatal("the repeat reached Redis")
	}
}

// A known buyer's repeat click reads the buyer record instead of running the
// reserve script; Redis still decides, so a released order lets the user buy
// again and a Redis error reserves nothing.
func TestRepeatClickReadsTheBuyerRecord(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 5})
	c := e.serve("10.0.0.1")
	tok := e.token(42)
	id := bought(t, c, tok)
	if e.st.reserves != 1 || e.st.holders != 0 {
		t.Fatalf("first click: %d reserves, %d holder reads", e.st.reserves, e.st.holders)
	}
	for range 3 {
		want(t, do(t, c, "POST", purchasePath, tok), 409, `{"error":"ALREADY_PURCHASED","orderId":"`+id.String()+`"}`)
	}
	if e.st.reserves != 1 || e.st.holders != 3 {
		t.Fatalf("repeats: %d reserves, %d holder reads; want 1 and 3", e.st.reserves, e.st.holders)
	}
	// Another token of the same user is not known here: the script answers.
	tok2, err := auth.MintHS256(testSecret, 42, time.Now().Add(2*time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	want(t, do(t, c, "POST", purchasePath, tok2), 409, `{"error":"ALREADY_PURCHASED","orderId":"`+id.String()+`"}`)
	if e.st.reserves != 2 || e.st.holders != 3 {
		t.Fatalf("new token: %d reserves, %d holder reads; want 2 and 3", e.st.reserves, e.st.holders)
	}
	// The order is cancelled: the record is gone and the click buys again.
	tag := e.sale.Shards[sharding.HomeShard(42, 77, 2)]
	if !e.st.release(tag, 7, 42, id, stock.StatusCancelled) {
		t.Fatal("release failed")
	}
	id2 := bought(t, c, tok)
	if j := e.st.journal(); id2 == id || e.st.reserves != 3 || len(j) != 2 || j[1].OrderID != id2 {
		t.Fatalf("buying again: order %v (old %v), %d reserves, journal %+v", id2, id, e.st.reserves, j)
	}
	// The winners entry now names the new order; a repeat shows it.
	want(t, do(t, c, "POST", purchasePath, tok), 409, `{"error":"ALREADY_PURCHASED","orderId":"`+id2.String()+`"}`)
	// Redis fails: 503, and no script ran.
	e.st.mu.Lock()
	e.st.err = errRedisDown
	reserves := e.st.reserves
	e.st.mu.Unlock()
	want(t, do(t, c, "POST", purchasePath, tok), 503, "")
	if e.st.reserves != reserves {
		t.Fatal("the script ran after the buyer record could not be read")
	}
}

// After the sell-out a winner's click is answered from the buyer record, not
// from the winners entry alone: once the order ended (expired, or cancelled
// through another gateway) the click is told SOLD_OUT, not of an order the
// user no longer holds. Clicks of anyone else stay free of Redis, and a Redis
// error answers SOLD_OUT too (the item has no unit).
func TestWinnerOfAnEndedOrderIsToldSoldOut(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 1, shards: 1})
	c := e.serve("10.0.0.1")
	tok := e.token(42)
	id := bought(t, c, tok)
	want(t, do(t, c, "POST", purchasePath, e.token(43)), 410, `{"error":"SOLD_OUT"}`) // sets the flag
	holders := e.st.holders
	want(t, do(t, c, "POST", purchasePath, tok), 409, `{"error":"ALREADY_PURCHASED","orderId":"`+id.String()+`"}`)
	want(t, do(t, c, "POST", purchasePath, e.token(44)), 410, `{"error":"SOLD_OUT"}`)
	if e.st.holders != holders+1 {
		t.Fatalf("%d buyer-record reads for a winner's and a stranger's click; want 1 (the winner's)", e.st.holders-holders)
	}
	// The writer expires the order and another user takes the unit back
	// (here: it is taken straight out of stock), so the item is sold out again.
	tag := e.sale.Shards[0]
	if !e.st.release(tag, 7, 42, id, stock.StatusExpired) {
		t.Fatal("release failed")
	}
	e.st.set(func(f *fakeStore) { f.stock[stockKey{tag, 7}] = 0 })
	want(t, do(t, c, "POST", purchasePath, tok), 410, `{"error":"SOLD_OUT"}`)
	want(t, do(t, c, "POST", purchasePath, tok), 410, `{"error":"SOLD_OUT"}`)
	if e.st.holders != holders+2 {
		t.Fatalf("%d buyer-record reads; want 2: the ended order's entry is dropped after the first", e.st.holders-holders)
	}
	// A winner whose record cannot be read is told SOLD_OUT, and nothing runs.
	e2 := newEnv(t, envOpt{stockPerShard: 1, shards: 1})
	c2 := e2.serve("10.0.0.1")
	bought(t, c2, tok)
	want(t, do(t, c2, "POST", purchasePath, e2.token(43)), 410, `{"error":"SOLD_OUT"}`)
	e2.st.set(func(f *fakeStore) { f.err = errRedisDown })
	reserves, _ := e2.st.counts()
	want(t, do(t, c2, "POST", purchasePath, tok), 410, `{"error":"SOLD_OUT"}`)
	if r, _ := e2.st.counts(); r != reserves {
		t.Fatal("a script ran for a winner's click on a sold-out item")
	}
}

// An Idempotency-Key retry of a known buyer still reaches the script, which
// replays the reservation (202 with the same order, nothing journaled again).
func TestRepeatClickWithIdempotencyKeyReplays(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 5})
	c := e.serve("10.0.0.1")
	tok := e.token(42)
	r1 := do(t, c, "POST", purchasePath, tok, "Idempotency-Key", "k-1")
	want(t, r1, 202, "")
	want(t, do(t, c, "POST", purchasePath, tok, "Idempotency-Key", "k-1"), 202, r1.body)
	if j := e.st.journal(); e.st.holders != 1 || e.st.reserves != 2 || len(j) != 1 {
		t.Fatalf("%d holder reads, %d reserves, %d journal entries; want 1, 2, 1", e.st.holders, e.st.reserves, len(j))
	}
	want(t, do(t, c, "POST", purchasePath, tok, "Idempotency-Key", "k-2"), 409, `{"error":"ALREADY_PURCHASED","orderId":"`+orderIDOf(t, r1.body).String()+`"}`)
	if e.st.reserves != 2 {
		t.Fatalf("a repeat with another key ran the script (%d reserves)", e.st.reserves)
	}
}

// With -repeat-read=false every repeat click runs the reserve script.
func TestRepeatReadOff(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 5, noRepeatRead: true})
	c := e.serve("10.0.0.1")
	tok := e.token(42)
	r := do(t, c, "POST", purchasePath, tok)
	want(t, r, 202, "")
	want(t, do(t, c, "POST", purchasePath, tok), 409, `{"error":"ALREADY_PURCHASED","orderId":"`+orderIDOf(t, r.body).String()+`"}`)
	if reserves, _ := e.st.counts(); reserves != 2 || e.st.holders != 0 {
		t.Fatalf("%d reserves, %d holder reads; want 2 and 0", reserves, e.st.holders)
	}
}

// A request with more than one Authorization header, in any spelling, has no
// token: a proxy in front and the gateway could each read another one.
func TestTwoAuthorizationHeadersAre401(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 5})
	good, bad := e.token(42), "not.a.token"
	reqs := map[string]string{
		"valid then bad":          "Authorization: Bearer " + good + "\nAuthorization: Bearer " + bad,
		"bad then valid":          "Authorization: Bearer " + bad + "\nAuthorization: Bearer " + good,
		"lower bad, canonical":    "authorization: Bearer " + bad + "\nAuthorization: Bearer " + good,
		"valid twice":             "Authorization: Bearer " + good + "\nAUTHORIZATION: Bearer " + good,
		"odd spelling then valid": "AuThOrIzAtIoN: Bearer " + bad + "\nauthorization: Bearer " + good,
	}
	for name, hdrs := range reqs {
		code, body := e.raw("10.0.0.1", "POST "+purchasePath+" HTTP/1.1\nHost: gateway\n"+hdrs+"\nContent-Length: 0\n\n")
		if code != 401 || body != `{"error":"UNAUTHORIZED"}` {
			t.Errorf("%s: %d %s, want 401", name, code, body)
		}
	}
	if n, _ := e.st.counts(); n != 0 {
		t.Fatalf("%d reserve calls for requests with two tokens", n)
	}
	// One header in any spelling is fine.
	if code, body := e.raw("10.0.0.1", "POST "+purchasePath+" HTTP/1.1\nHost: gateway\nAUTHORIZATION: Bearer "+good+"\nContent-Length: 0\n\n"); code != 202 {
		t.Fatalf("one upper-case header: %d %s", code, body)
	}
}

// Behind a proxy that appends its own X-Forwarded-For line, a client that
// writes a random first line still lands in the bucket of the address the
// proxy saw.
func TestEveryForwardedForLineIsRead(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 100, ipBurst: 10, trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	codes := map[int]int{}
	for i := range 14 {
		req := fmt.Sprintf("POST %s HTTP/1.1\nHost: gateway\nAuthorization: Bearer %s\nX-Forwarded-For: 198.51.%d.%d\nx-forwarded-for: 203.0.113.9\nContent-Length: 0\n\n",
			purchasePath, e.token(uint64(500+i)), i, i+1)
		code, _ := e.raw("127.0.0.1", req)
		codes[code]++
	}
	if codes[202] != 10 || codes[429] != 4 {
		t.Fatalf("answers %v: want 10 x 202 then 4 x 429 (one bucket: 203.0.113.9's)", codes)
	}
	// Too many lines to read: the request is keyed on its peer, the proxy.
	var many strings.Builder
	for i := range maxXFFLines + 1 {
		fmt.Fprintf(&many, "X-Forwarded-For: 192.0.2.%d\n", i+1)
	}
	code, _ := e.raw("127.0.0.2", "POST "+purchasePath+" HTTP/1.1\nHost: gateway\nAuthorization: Bearer "+e.token(900)+"\n"+many.String()+"Content-Length: 0\n\n")
	if code != 202 {
		t.Fatalf("with %d lines: %d", maxXFFLines+1, code)
	}
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
		e.st.set(func(f *fakeStore) { f.lostActs = 1 })
		want(t, do(t, c, "POST", "/api/flash-sales/orders/"+id+"/pay", tok), 202, `{"orderId":"`+id+`","status":"PENDING"}`)
		if n := pays(e); n != 1 {
			t.Fatalf("%d pay entries journaled, want one (the lost attempt's taken back)", n)
		}
	})
	t.Run("reply lost, then Redis away: 503, and the queued void takes it back", func(t *testing.T) {
		e := newEnv(t, envOpt{stockPerShard: 5})
		c, tok, id := bought(t, e)
		e.st.set(func(f *fakeStore) { f.lostActs, f.voidErr = 1, errRedisDown })
		want(t, do(t, c, "POST", "/api/flash-sales/orders/"+id+"/pay", tok), 503, `{"error":"UNAVAILABLE"}`)
		if n := e.h.retries.pending(); n != 1 {
			t.Fatalf("%d voids queued, want 1", n)
		}
		if n := pays(e); n != 1 {
			t.Fatalf("%d pay entries before the void, want the lost attempt's", n)
		}
		e.st.set(func(f *fakeStore) { f.voidErr = nil })
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
		e.st.set(func(f *fakeStore) { f.actErr, f.voidErr = errRedisDown, errRedisDown })
		want(t, do(t, c, "POST", "/api/flash-sales/orders/"+id+"/cancel", tok), 503, `{"error":"UNAVAILABLE"}`)
		e.st.set(func(f *fakeStore) { f.voidErr = nil })
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
		e.st.set(func(f *fakeStore) { f.lostActs, f.taken = 2, true })
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
		e.st.set(func(f *fakeStore) { f.lostActs, f.voidErr = 1, errRedisDown })
		want(t, do(t, c, "POST", "/api/flash-sales/orders/"+id+"/pay", tok), 503, `{"error":"UNAVAILABLE"}`)
		e.st.set(func(f *fakeStore) { f.voidErr = nil })
		drain(t, e)
		if n := pays(e); n != 1 {
			t.Fatalf("%d pay entries, want the first request's", n)
		}
	})
}

func TestServerTime(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 1})
	c := e.serve("10.0.0.1")
	before := time.Now().Truncate(time.Millisecond)
	r := do(t, c, "GET", "/api/flash-sales/time", "")
	want(t, r, 200, "")
	var got struct {
		ServerTime string `json:"serverTime"`
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339, got.ServerTime)
	if err != nil || len(got.ServerTime) != len("2006-01-02T15:04:05.000Z") || at.Before(before) || at.After(time.Now()) {
		t.Fatalf("serverTime %q (%v): want RFC 3339 with ms, now", got.ServerTime, err)
	}
	if cc := r.header["Cache-Control"]; cc != "no-store" {
		t.Fatalf("Cache-Control %q", cc)
	}
	want(t, do(t, c, "POST", "/api/flash-sales/time", ""), 405, `{"error":"METHOD_NOT_ALLOWED"}`)
}

// bought makes one purchase with tok, wants it accepted and returns its order id.
func bought(t *testing.T, c *fasthttp.Client, tok string) sharding.OrderID {
	t.Helper()
	r := do(t, c, "POST", purchasePath, tok)
	want(t, r, 202, "")
	return orderIDOf(t, r.body)
}
