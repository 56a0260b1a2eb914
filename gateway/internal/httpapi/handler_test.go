package httpapi

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"flashsale/gateway/internal/auth"
	"flashsale/sharding"
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

// goldKeyedID is the id earlier releases derived for key "k" of user 42,
// item 7, sale 77.
const goldKeyedID = "0000004d-3398-8839-a6e0-013485114233"

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
