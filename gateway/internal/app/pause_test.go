package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"flashsale/sharding/sale"
)

// answer is one purchase answered during TestPauseUnderLoad.
type answer struct {
	sent time.Time
	code int
	body string
}

// crowd sends purchases of new buyers to both gateways from workers until
// stop is closed, and keeps every answer.
type crowd struct {
	mu      sync.Mutex
	answers []answer
	users   atomic.Uint64
	stop    chan struct{}
	wg      sync.WaitGroup
}

func startCrowd(t *testing.T, s *stack, addrs []string, workers int) *crowd {
	c := &crowd{stop: make(chan struct{})}
	c.users.Store(rand.Uint64N(1<<40) + 1)
	for w := range workers {
		url := "http://" + addrs[w%len(addrs)] + s.purchasePath()
		c.wg.Go(func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for {
				select {
				case <-c.stop:
					return
				default:
				}
				req.Reset()
				req.Header.SetMethod("POST")
				req.SetRequestURI(url)
				req.Header.Set("Authorization", "Bearer "+token(t, c.users.Add(1)))
				sent := time.Now()
				if err := s.client.DoTimeout(req, resp, 10*time.Second); err != nil {
					t.Errorf("POST: %v", err)
					return
				}
				c.mu.Lock()
				c.answers = append(c.answers, answer{sent: sent, code: resp.StatusCode(), body: string(resp.Body())})
				c.mu.Unlock()
			}
		})
	}
	return c
}

func (c *crowd) end() []answer {
	close(c.stop)
	c.wg.Wait()
	return c.answers
}

// doAt is do against the gateway at addr.
func (s *stack) doAt(addr, method, path string) (int, string) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(method)
	req.SetRequestURI("http://" + addr + path)
	if err := s.client.DoTimeout(req, resp, 10*time.Second); err != nil {
		s.t.Errorf("%s %s: %v", method, path, err)
		return 0, ""
	}
	return resp.StatusCode(), string(resp.Body())
}

// statusOf reads the public sale description's status from a gateway.
func statusOf(t *testing.T, s *stack, addr string) string {
	code, body := s.doAt(addr, "GET", fmt.Sprintf("/api/flash-sales/sales/%d", s.sale.ID))
	var d struct{ Status string }
	if code != 200 || json.Unmarshal([]byte(body), &d) != nil {
		t.Fatalf("sale description from %s: %d %s", addr, code, body)
	}
	return d.Status
}

// waitStatus polls both gateways' sale descriptions until each shows want and
// returns how long that took; it fails past a second.
func waitStatus(t *testing.T, s *stack, addrs []string, want string, since time.Time) time.Duration {
	for _, a := range addrs {
		for statusOf(t, s, a) != want {
			if time.Since(since) > time.Second {
				t.Fatalf("gateway %s still shows %q a second after the change, want %s", a, statusOf(t, s, a), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return time.Since(since)
}

// TestPauseUnderLoad is the kill switch: a crowd buys through two gateways;
// the sale is paused (the call flashctl sale pause makes), and from that
// moment every purchase on every gateway is 503 SALE_PAUSED and the stock does
// not move, both descriptions say PAUSED within a second; resumed, it sells
// again; ended, every purchase is 410 SALE_ENDED. Every 202 holds exactly one
// unit: Q = S + 202s.
//
// A purchase whose reservation call failed under load (its budget out, the
// outcome unknown) is voided and answered 503 UNAVAILABLE, a true answer:
// nothing was reserved, and the retry hears the halt. A fresh clone's run
// beside other packages once saw 15 of 12,215 answers after the end so; a
// few are allowed in each halted window (under 1 %, counted and logged),
// never a 202 and never another code.
func TestPauseUnderLoad(t *testing.T) {
	const units = 1_000_000
	s := start(t, units, 4, nil, "")
	other := second(t, s)
	addrs := []string{s.app.Addr(), other.Addr()}
	ctx := context.Background()
	for _, a := range addrs {
		for statusOf(t, s, a) != "ACTIVE" {
			time.Sleep(20 * time.Millisecond)
		}
	}
	cr := startCrowd(t, s, addrs, 16)
	time.Sleep(400 * time.Millisecond)

	if _, err := s.store.SetState(ctx, s.sale.ID, sale.StatePaused); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	atPause := s.remaining()
	took := waitStatus(t, s, addrs, "PAUSED", paused)
	time.Sleep(time.Second)
	if left := s.remaining(); left != atPause {
		t.Fatalf("stock moved while paused: %d at the pause, %d a second later", atPause, left)
	}
	if _, err := s.store.SetState(ctx, s.sale.ID, ""); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	tookResume := waitStatus(t, s, addrs, "ACTIVE", resumed)
	time.Sleep(500 * time.Millisecond)
	if _, err := s.store.SetState(ctx, s.sale.ID, sale.StateEnded); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	tookEnd := waitStatus(t, s, addrs, "ENDED", ended)
	time.Sleep(300 * time.Millisecond)
	answers := cr.end()

	before, during, after, afterEnd := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	accepted := 0
	const unavailable = `503 {"error":"UNAVAILABLE"}`
	for _, a := range answers {
		key := fmt.Sprintf("%d %s", a.code, strings.TrimSpace(a.body))
		if a.code == 202 {
			accepted++
			key = "202"
		}
		switch {
		case a.sent.Before(paused):
			before[key]++
		case a.sent.Before(resumed):
			during[key]++
			if key != `503 {"error":"SALE_PAUSED"}` && key != unavailable {
				t.Errorf("a purchase sent %v after the pause answered %s", a.sent.Sub(paused), key)
			}
		case a.sent.Before(ended):
			after[key]++
		default:
			afterEnd[key]++
			if key != `410 {"error":"SALE_ENDED"}` && key != unavailable {
				t.Errorf("a purchase sent %v after the end answered %s", a.sent.Sub(ended), key)
			}
		}
	}
	t.Logf("before the pause %v; paused (descriptions PAUSED after %v) %v; resumed (ACTIVE after %v) %v; ended (ENDED after %v) %v",
		before, took.Round(time.Millisecond), during, tookResume.Round(time.Millisecond), after, tookEnd.Round(time.Millisecond), afterEnd)
	if before["202"] == 0 || after["202"] == 0 || len(during) == 0 || len(afterEnd) == 0 {
		t.Fatalf("the crowd did not buy before the pause and after the resume, or sent nothing while paused or ended")
	}
	for name, w := range map[string]map[string]int{"paused": during, "ended": afterEnd} {
		n := 0
		for _, c := range w {
			n += c
		}
		if w[unavailable]*100 >= n {
			t.Errorf("%s: %d of %d purchases answered %s (their reservation failed), want under 1 %%", name, w[unavailable], n, unavailable)
		}
	}
	left := s.remaining()
	if int64(accepted) != units-left {
		t.Fatalf("Q = S + 202s does not hold: %d units, %d left, %d answered 202", units, left, accepted)
	}
	// Every gateway's poller exports the stock per shard: within a refresh
	// (1 s) both show what Redis holds.
	for _, a := range []string{s.app.AdminAddr(), other.AdminAddr()} {
		deadline := time.Now().Add(3 * time.Second)
		for got := exportedStock(t, s, a); got != left; got = exportedStock(t, s, a) {
			if time.Now().After(deadline) {
				t.Fatalf("gateway admin %s exports %d units for the sale, Redis holds %d", a, got, left)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// exportedStock sums flashsale_gateway_stock_units of s's sale over the shards
// from the gateway's /metrics at admin.
func exportedStock(t *testing.T, s *stack, admin string) int64 {
	code, body := s.doAt(admin, "GET", "/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	var n, lines int64
	prefix := fmt.Sprintf(`flashsale_gateway_stock_units{item="%d",sale="%d",shard="`, s.item, s.sale.ID)
	for _, l := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			tag, value, ok := strings.Cut(rest, `"} `)
			v, err := strconv.ParseFloat(value, 64)
			if !ok || err != nil || !slices.Contains(s.sale.Shards, tag) {
				t.Fatalf("metrics line %q: shard %q of %v, value %v", l, tag, s.sale.Shards, err)
			}
			n += int64(v)
			lines++
		}
	}
	if lines != int64(len(s.sale.Shards)) {
		return -1
	}
	return n
}
