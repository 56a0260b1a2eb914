package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/valyala/fasthttp"
)

// The chaos crowd: chaosRate new buyers a second for the run's duration,
// each with a draw of its own from the seed.
const chaosRate = 40

// chaosBuyer is one buyer of the chaos crowd and everything it was told.
type chaosBuyer struct {
	buyer
	key      string // the Idempotency-Key of its purchase, kept through retries
	rng      *rand.Rand
	item     int64    // the item it buys
	hedge    bool     // its first purchase goes to both gateways at once, one reply dropped
	attempts []answer // every purchase attempt's answer, in order (a dropped one too)
	order    string   // the order a 202 or 409 named
	action   string   // "pay", "cancel" or "" (the order is left to expire)
	acts     []int    // the pay or cancel attempts' statuses
}

// final is the buyer's last purchase answer.
func (b *chaosBuyer) final() answer {
	if len(b.attempts) == 0 {
		return answer{}
	}
	return b.attempts[len(b.attempts)-1]
}

// told202 reports whether any attempt was answered 202, a dropped one too.
func (b *chaosBuyer) told202() bool {
	for _, a := range b.attempts {
		if a.status == 202 {
			return true
		}
	}
	return false
}

// newChaosBuyer draws a buyer's item and whether it hedges (1 in hedgeOdds).
func (c *chaosCrowd) newChaosBuyer(u buyer, key string, rng *rand.Rand, hedgeOdds int) *chaosBuyer {
	items := c.env.items
	return &chaosBuyer{buyer: u, key: key, rng: rng, item: items[rng.IntN(len(items))], hedge: rng.IntN(hedgeOdds) == 0}
}

// chaosCrowd is the crowd under way.
type chaosCrowd struct {
	env    *chaosEnv
	seed   uint64
	mu     sync.Mutex
	buyers []*chaosBuyer
	wg     sync.WaitGroup
	rushes int  // rushes sent so far, each with users of its own
	ended  bool // the schedule is over: no more rushes
	// early names the orders a GET called persisted while PostgreSQL had
	// no row of them; watched counts the orders seen persisted.
	early   []string
	watched int
}

// rushSize is how many buyers a rush sends at once.
const rushSize = 48

// rush sends rushSize new buyers to gateway g at once, in the background, so
// that a fault struck a moment later meets purchases in flight: their
// replies lost, their voids needed (the nemesis's fault under load). The
// buyers then behave as the others, their retries to either gateway.
func (c *chaosCrowd) rush(g int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return // a fault held back past the crowd's end
	}
	c.rushes++
	n := c.rushes
	users := crowdOf(rushSize, c.seed+uint64(n)*1_000_003)
	for i := range users {
		b := c.newChaosBuyer(users[i], fmt.Sprintf("rush-%d-%d-%d", c.seed, n, i), rand.New(rand.NewPCG(c.seed+uint64(n), uint64(i)+2)), 3)
		c.buyers = append(c.buyers, b)
		c.wg.Go(func() { c.shopAt(b, g) })
	}
}

// startChaosCrowd sends chaosRate buyers a second for d, to either gateway
// at random, each for one of the sale's items. One in five hedges: its
// first purchase goes to both gateways at once with one key (a hedged
// client, a second tap, a load balancer's retry), and it drops one of the
// two replies. A buyer told 503 or left without an answer tries again with
// the same key, up to 5 times with growing pauses, with odds of 3 in 4 each
// time (the others give up, as people do); one told 202 pays (55 %) or
// cancels (15 %) within 3 s, or lets the order expire. Every order told 202
// is watched: its GET must not say persisted before PostgreSQL has it.
func startChaosCrowd(e *chaosEnv, seed uint64, d time.Duration) *chaosCrowd {
	c := &chaosCrowd{env: e, seed: seed}
	users := crowdOf(int(d.Seconds()*chaosRate)+1, seed)
	start := time.Now()
	c.wg.Go(func() {
		// No rush once the schedule is over: every wg.Go then happens
		// while this goroutine still holds the group open.
		defer func() { c.mu.Lock(); c.ended = true; c.mu.Unlock() }()
		for i := range users {
			at := start.Add(time.Duration(i) * time.Second / chaosRate)
			if at.Sub(start) >= d {
				return
			}
			time.Sleep(time.Until(at))
			b := c.newChaosBuyer(users[i], fmt.Sprintf("chaos-%d-%d", seed, i), rand.New(rand.NewPCG(seed, uint64(i)+2)), 5)
			c.mu.Lock()
			c.buyers = append(c.buyers, b)
			c.mu.Unlock()
			c.wg.Go(func() { c.shop(b) })
		}
	})
	return c
}

// crowdOf is crowd with users drawn from seed, so a replay has the same.
func crowdOf(n int, seed uint64) []buyer {
	rng := rand.New(rand.NewPCG(seed, 0))
	base := rng.Uint64N(1<<40) + 1
	out := make([]buyer, n)
	for i := range out {
		out[i] = buyer{user: base + uint64(i), token: mint(base+uint64(i), time.Now().Add(time.Hour)),
			ip: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)}
	}
	return out
}

func (c *chaosCrowd) shop(b *chaosBuyer) { c.shopAt(b, -1) }

// shopAt is shop with the first purchase sent to gateway first (-1: either).
func (c *chaosCrowd) shopAt(b *chaosBuyer, first int) {
	for try := 0; try < 5; try++ {
		var a answer
		if try == 0 && b.hedge {
			a = c.hedged(b, first)
		} else {
			g := c.env.gateways[b.rng.IntN(2)]
			if try == 0 && first >= 0 {
				g = c.env.gateways[first]
			}
			a = itemPurchase(g.addr, b.item, b.buyer, b.key)
			b.attempts = append(b.attempts, a)
		}
		if a.status != 503 && a.status != 0 {
			break
		}
		if b.rng.IntN(4) == 0 {
			break // gives up
		}
		time.Sleep(time.Duration(100<<try)*time.Millisecond + time.Duration(b.rng.IntN(100))*time.Millisecond)
	}
	for _, a := range b.attempts {
		if a.status == 202 {
			c.wg.Go(func() { c.watch(b, a.order) })
			break
		}
	}
	f := b.final()
	if f.status != 202 {
		if f.status == 409 {
			b.order = f.order
		}
		return
	}
	b.order = f.order
	switch p := b.rng.IntN(100); {
	case p < 55:
		b.action = "pay"
	case p < 70:
		b.action = "cancel"
	default:
		return
	}
	time.Sleep(time.Duration(300+b.rng.IntN(2700)) * time.Millisecond)
	for try := 0; try < 4; try++ {
		g := c.env.gateways[b.rng.IntN(2)]
		st := act(g.addr, b.buyer, b.order, b.action)
		b.acts = append(b.acts, st)
		if st != 503 && st != 0 {
			return
		}
		time.Sleep(time.Duration(200<<try) * time.Millisecond)
	}
}

// hedged sends b's purchase to both gateways, the second a few
// milliseconds after the first, as a hedging client does, and keeps one
// reply at random, as a client does whose other reply was lost: both are
// recorded (the dropped one first), and the kept one is the answer. A
// rushed buyer (late >= 0) sends its second attempt to gateway late, the
// one a fault strikes next: that attempt is the one in flight when it
// strikes.
func (c *chaosCrowd) hedged(b *chaosBuyer, late int) answer {
	if late < 0 {
		late = b.rng.IntN(2)
	}
	delay := time.Duration(1+b.rng.IntN(8)) * time.Millisecond
	var got [2]answer
	var wg sync.WaitGroup
	for k, g := range c.env.gateways {
		wg.Go(func() {
			if k == late {
				time.Sleep(delay)
			}
			got[k] = itemPurchase(g.addr, b.item, b.buyer, b.key)
		})
	}
	wg.Wait()
	keep := b.rng.IntN(2)
	drop := got[1-keep]
	drop.dropped = true
	b.attempts = append(b.attempts, drop, got[keep])
	return got[keep]
}

// watch polls the GET of order, answered 202 to b, until it says persisted
// (at most watchFor), and then asks PostgreSQL for the order at once: a
// GET that called it persisted while PostgreSQL had no row of it told the
// page "bought" too early (issue 55: the watermark over a gap, a copy a
// reshard made while Kafka was down).
func (c *chaosCrowd) watch(b *chaosBuyer, order string) {
	deadline := time.Now().Add(watchFor)
	for time.Now().Before(deadline) {
		time.Sleep(watchEvery)
		g := c.env.gateways[b.rng.IntN(2)]
		if !orderPersisted(g.addr, b.buyer, order) {
			continue
		}
		found, ok := c.env.orderInPostgres(order)
		for try := 0; !ok && try < 20; try++ {
			time.Sleep(250 * time.Millisecond)
			found, ok = c.env.orderInPostgres(order)
		}
		c.mu.Lock()
		c.watched++
		if ok && !found {
			c.early = append(c.early, fmt.Sprintf("user %d, order %s", b.user, order))
		}
		c.mu.Unlock()
		return
	}
}

// The watch of an order's persisted flag: every watchEvery, for watchFor
// (past a Kafka outage and the catch-up after it, when the orders the
// outage held back are persisted batch by batch).
const (
	watchEvery = 300 * time.Millisecond
	watchFor   = 30 * time.Second
)

// wait waits for every buyer to be done, its pay or cancel included.
func (c *chaosCrowd) wait() { c.wg.Wait() }

// orderPersisted reports whether the gateway at addr answers b's GET of
// order with persisted: true (false for any other answer).
func orderPersisted(addr string, b buyer, order string) bool {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + addr + "/api/flash-sales/orders/" + order)
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("X-Forwarded-For", b.ip)
	if err := client.DoTimeout(req, resp, 5*time.Second); err != nil || resp.StatusCode() != 200 {
		return false
	}
	var v struct{ Persisted bool }
	return json.Unmarshal(resp.Body(), &v) == nil && v.Persisted
}

// orderInPostgres reports whether PostgreSQL holds order; ok is false when
// it could not be asked.
func (e *chaosEnv) orderInPostgres(order string) (found, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var st string
	err := e.pool.QueryRow(ctx, `SELECT status FROM orders WHERE id = $1::uuid`, order).Scan(&st)
	switch {
	case err == nil:
		return true, true
	case errors.Is(err, pgx.ErrNoRows):
		return false, true
	}
	return false, false
}
