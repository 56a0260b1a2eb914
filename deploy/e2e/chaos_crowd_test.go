package e2e_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// The chaos crowd: chaosRate new buyers a second for the run's duration,
// each with a draw of its own from the seed.
const chaosRate = 40

// chaosBuyer is one buyer of the chaos crowd and everything it was told.
type chaosBuyer struct {
	buyer
	key      string // the Idempotency-Key of its purchase, kept through retries
	rng      *rand.Rand
	attempts []answer // every purchase attempt's answer, in order
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

// chaosCrowd is the crowd under way.
type chaosCrowd struct {
	env    *chaosEnv
	seed   uint64
	mu     sync.Mutex
	buyers []*chaosBuyer
	wg     sync.WaitGroup
	rushes int  // rushes sent so far, each with users of its own
	ended  bool // the schedule is over: no more rushes
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
		b := &chaosBuyer{buyer: users[i], key: fmt.Sprintf("rush-%d-%d-%d", c.seed, n, i),
			rng: rand.New(rand.NewPCG(c.seed+uint64(n), uint64(i)+2))}
		c.buyers = append(c.buyers, b)
		c.wg.Go(func() { c.shopAt(b, g) })
	}
}

// startChaosCrowd sends chaosRate buyers a second for d, to either gateway
// at random. A buyer told 503 or left without an answer tries again with
// the same key, up to 5 times with growing pauses, with odds of 3 in 4 each
// time (the others give up, as people do); one told 202 pays (55 %) or
// cancels (15 %) within 3 s, or lets the order expire.
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
			b := &chaosBuyer{buyer: users[i], key: fmt.Sprintf("chaos-%d-%d", seed, i), rng: rand.New(rand.NewPCG(seed, uint64(i)+2))}
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
		g := c.env.gateways[b.rng.IntN(2)]
		if try == 0 && first >= 0 {
			g = c.env.gateways[first]
		}
		a := keyedPurchase(g.addr, c.env.sale, b.buyer, b.key)
		b.attempts = append(b.attempts, a)
		if a.status != 503 && a.status != 0 {
			break
		}
		if b.rng.IntN(4) == 0 {
			return // gives up
		}
		time.Sleep(time.Duration(100<<try)*time.Millisecond + time.Duration(b.rng.IntN(100))*time.Millisecond)
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

// wait waits for every buyer to be done, its pay or cancel included.
func (c *chaosCrowd) wait() { c.wg.Wait() }
