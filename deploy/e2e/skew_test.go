package e2e_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestGatewayClockSkew: a gateway whose wall clock jumps away from its
// masters' (a bad NTP source, a VM migration) keeps selling and keeps its
// promises; its clock moves only the stamps it hands to others. For each
// skew the gateway's clock is set through its admin listener's test knob
// (package clock), buyers come for a few seconds (past the third of
// -relay-fence after which a gateway whose fence beats fail stops
// journaling), and then the clock is set right again. Every answer is
// counted: a 503 during a skew is service the design lost, and after the
// run every 202 must be in PostgreSQL and Q = S + P.
//
// Before the fence stopped comparing clocks (issue 56), fence.lua refused a
// beat stamped more than 200 ms from the master's TIME: a gateway 300 ms
// off beat nowhere, and three seconds later answered 503 to everyone.
func TestGatewayClockSkew(t *testing.T) {
	need(t)
	t.Setenv("FLASHSALE_CLOCK_OFFSET", "0s") // the knob, served by the processes started below
	const units = 20000
	s := createSale(t, units, 4, -time.Second)
	topic := "e2e-skew-" + randHex()
	startWriter(t, topic, s.ID)
	g := startGateway(t, topic, s)
	g.waitReady(t, 30*time.Second)
	buyers := crowd(t, 6000)
	next := 0
	var all []answer
	var report []string
	for _, skew := range []time.Duration{150 * time.Millisecond, 300 * time.Millisecond, 5 * time.Second, -5 * time.Second} {
		setClock(t, g.admin, skew)
		// The knob moves the gateway's stamps: an order's createdAt is its
		// clock's.
		b := buyers[next]
		next++
		first := purchase(g.addr, s, b)
		all = append(all, first)
		if first.status == 202 {
			c := orderCreated(t, g.addr, b, first.order)
			if d := time.Until(c); d < skew-time.Second || d > skew+time.Second {
				t.Errorf("skew %v: the order was stamped created at %v, %v from this host's clock", skew, c, d)
			}
		}
		during := buyFor(s, g, buyers, &next, 4500*time.Millisecond)
		setClock(t, g.admin, 0)
		recovered, after := recoverAfter(s, g, buyers, &next, 10*time.Second)
		all = append(append(all, during...), after...)
		got := tally(during)
		report = append(report, fmt.Sprintf("skew %v: %v during it (%.0f%% 503), full service %v after it", skew, got,
			100*float64(got[503])/float64(max(len(during), 1)), recovered.Round(10*time.Millisecond)))
		if got[503] != 0 {
			t.Errorf("skew %v: %d of %d purchases answered 503", skew, got[503], len(during))
		}
	}
	t.Log("\n" + strings.Join(report, "\n"))
	a := settled(t, s, 60*time.Second)
	checkInvariants(t, s, units, a, buyers[:next], all)
}

// orderCreated reads order's createdAt from the gateway at addr.
func orderCreated(t *testing.T, addr string, b buyer, order string) time.Time {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + addr + "/api/flash-sales/orders/" + order)
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("X-Forwarded-For", b.ip)
	var v struct{ CreatedAt time.Time }
	if err := fasthttp.DoTimeout(req, resp, 5*time.Second); err != nil || resp.StatusCode() != 200 || json.Unmarshal(resp.Body(), &v) != nil {
		t.Fatalf("GET order %s: %d %s %v", order, resp.StatusCode(), resp.Body(), err)
	}
	return v.CreatedAt
}

// setClock sets the clock offset of the process whose admin listener is at
// admin.
func setClock(t *testing.T, admin string, d time.Duration) {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod("PUT")
	req.SetRequestURI("http://" + admin + "/debug/clock?offset=" + d.String())
	if err := fasthttp.DoTimeout(req, resp, 5*time.Second); err != nil || resp.StatusCode() != 200 {
		t.Fatalf("setting the clock of %s to %v: %d %s %v", admin, d, resp.StatusCode(), resp.Body(), err)
	}
}

// buyFor sends the next buyers to g, 100 a second, for d, and returns their
// answers.
func buyFor(s *createdSale, g *gateway, buyers []buyer, next *int, d time.Duration) []answer {
	var out []answer
	end := time.Now().Add(d)
	for time.Now().Before(end) && *next+10 <= len(buyers) {
		out = append(out, buyAll(s, buyers[*next:*next+10], 10, func(int) string { return g.addr })...)
		*next += 10
		time.Sleep(100 * time.Millisecond)
	}
	return out
}

// recoverAfter buys one at a time until a purchase is answered other than
// 503, and returns how long that took and the answers.
func recoverAfter(s *createdSale, g *gateway, buyers []buyer, next *int, within time.Duration) (time.Duration, []answer) {
	start := time.Now()
	var out []answer
	for time.Since(start) < within && *next < len(buyers) {
		a := purchase(g.addr, s, buyers[*next])
		*next++
		out = append(out, a)
		if a.status != 503 && a.status != 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start), out
}
