package e2e_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestIdempotencyKeyBuysAgain: on the real stack (gateway, Redis Cluster,
// Kafka, writer, PostgreSQL), a buyer who sends one Idempotency-Key for
// every click gets one order for its retries, may buy again once that order
// is cancelled (SPEC: "A user whose order expired or was cancelled may buy
// again"), and the retries of the second purchase name the second order.
// PostgreSQL ends with the first order CANCELLED, the second PENDING, and
// Q = S + P.
func TestIdempotencyKeyBuysAgain(t *testing.T) {
	need(t)
	const units = 3
	s := createSale(t, units, 2, -time.Second)
	topic := "e2e-keyed-" + randHex()
	startWriter(t, topic, s.ID)
	g := startGateway(t, topic, s)
	g.waitReady(t, 30*time.Second)
	b := crowd(t, 1)[0]
	buy := func(key string) answer {
		t.Helper()
		st, body := call(t, g.addr, "POST", fmt.Sprintf("/api/flash-sales/items/%d/purchase", s.item), b, "Idempotency-Key", key)
		var v struct{ OrderID string }
		_ = json.Unmarshal(body, &v)
		return answer{status: st, order: v.OrderID, body: string(body)}
	}
	first := buy("same-key")
	if first.status != 202 || first.order == "" {
		t.Fatalf("first purchase: %d %s", first.status, first.body)
	}
	if again := buy("same-key"); again.status != 202 || again.order != first.order {
		t.Fatalf("retry of the first purchase: %d %s, want 202 naming %s", again.status, again.body, first.order)
	}
	waitOrder(t, g, b, first.order, "PENDING", true)
	if st, body := call(t, g.addr, "POST", "/api/flash-sales/orders/"+first.order+"/cancel", b); st != 202 {
		t.Fatalf("cancel: %d %s", st, body)
	}
	waitOrder(t, g, b, first.order, "CANCELLED", true)

	second := buy("same-key")
	if second.status != 202 || second.order == "" || second.order == first.order {
		t.Fatalf("buying again with the same key after the cancel: %d %s, want 202 naming a new order", second.status, second.body)
	}
	if again := buy("same-key"); again.status != 202 || again.order != second.order {
		t.Fatalf("retry of the second purchase: %d %s, want 202 naming %s", again.status, again.body, second.order)
	}
	if other := buy("another-key"); other.status != 409 || other.order != second.order {
		t.Fatalf("another key while the second order is active: %d %s, want 409 naming it", other.status, other.body)
	}
	a := settled(t, s, 30*time.Second)
	if a.all[first.order] != "CANCELLED" || a.all[second.order] != "PENDING" || len(a.all) != 2 {
		t.Fatalf("PostgreSQL holds %v, want %s CANCELLED and %s PENDING", a.all, first.order, second.order)
	}
	if p := int64(len(a.active)); a.redis+p != units {
		t.Fatalf("Q = %d, S = %d, P = %d", units, a.redis, p)
	}
}

// call sends one request as b and returns the status and body (status 0: no
// answer); a 429 is waited out (Retry-After) and sent again, as a client
// does, since the per-user bucket counts every request of the test's buyer.
func call(t *testing.T, addr, method, path string, b buyer, hdr ...string) (int, []byte) {
	t.Helper()
	for range 20 {
		st, body, wait := callOnce(t, addr, method, path, b, hdr...)
		if st != fasthttp.StatusTooManyRequests {
			return st, body
		}
		time.Sleep(wait)
	}
	t.Fatalf("%s %s: still 429 after 20 tries", method, path)
	return 0, nil
}

func callOnce(t *testing.T, addr, method, path string, b buyer, hdr ...string) (int, []byte, time.Duration) {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(method)
	req.SetRequestURI("http://" + addr + path)
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("X-Forwarded-For", b.ip)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if err := client.DoTimeout(req, resp, 20*time.Second); err != nil {
		t.Logf("%s %s: %v", method, path, err)
		return 0, nil, 0
	}
	wait, err := time.ParseDuration(string(resp.Header.Peek("Retry-After")) + "s")
	if err != nil || wait <= 0 {
		wait = time.Second
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...), wait
}

// waitOrder polls GET of b's order until it shows status and persisted.
func waitOrder(t *testing.T, g *gateway, b buyer, order, status string, persisted bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		st, body := call(t, g.addr, "GET", "/api/flash-sales/orders/"+order, b)
		var v struct {
			Status    string
			Persisted bool
		}
		if st == 200 && json.Unmarshal(body, &v) == nil && v.Status == status && v.Persisted == persisted {
			return
		}
		last = fmt.Sprintf("%d %s", st, body)
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("order %s never showed %s (persisted %v): last %s", order, status, persisted, last)
}
