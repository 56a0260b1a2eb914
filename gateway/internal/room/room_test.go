package room_test

import (
	"context"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"flashsale/deploy/testenv"
	"flashsale/gateway/internal/mac"
	"flashsale/gateway/internal/room"
	"flashsale/sharding"
	"flashsale/sharding/stock"
)

// shop is the test's stand-in for the catalog: the remaining units of one
// sale, kept in a real Redis key that buyers decrement, read by every
// gateway's tick.
type shop struct {
	c    rueidis.Client
	key  string
	sale atomic.Pointer[room.Sale]
}

func (s *shop) Rooms() []room.Sale { return []room.Sale{*s.sale.Load()} }

func (s *shop) Remaining(int64) int64 {
	n, err := s.c.Do(context.Background(), s.c.B().Get().Key(s.key).Build()).AsInt64()
	if err != nil {
		return -1
	}
	return n
}

// units reads the stock the way a gateway's catalog would serve it to a poll.
func (s *shop) units(t *testing.T) int64 {
	t.Helper()
	n := s.Remaining(0)
	if n < 0 {
		t.Fatal("stock key unreadable")
	}
	return n
}

func (s *shop) buy(t *testing.T) bool {
	t.Helper()
	ctx := context.Background()
	n, err := s.c.Do(ctx, s.c.B().Decr().Key(s.key).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	if n < 0 {
		_ = s.c.Do(ctx, s.c.B().Incr().Key(s.key).Build()).Error()
		return false
	}
	return true
}

func (s *shop) set(t *testing.T, n int) {
	t.Helper()
	if err := s.c.Do(context.Background(), s.c.B().Set().Key(s.key).Value(strconv.Itoa(n)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
}

// gateways starts n rooms, each with its own cluster client (as n gateway
// processes would have), ticking every 100 ms until the test ends.
func gateways(t *testing.T, n int, src room.Source) []*room.Room {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the local stack")
	}
	testenv.Require(t, "redis")
	rg, err := mac.NewRing([]byte("waiting-room-test-secret"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	out := make([]*room.Room, n)
	for i := range out {
		// As a gateway runs it: entries through a batcher that waits for
		// a replica.
		c := testenv.NewRedis(t)
		b := stock.NewBatcher(c, 2, time.Second)
		b.SetAcks(1, 100*time.Millisecond)
		t.Cleanup(b.Close)
		r, err := room.New(c, room.Config{Ring: rg, Acks: b})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = r
		wg.Add(1)
		go func() { defer wg.Done(); r.Run(ctx, src) }()
	}
	return out
}

func newShop(t *testing.T, units int, s room.Sale) *shop {
	c := testenv.NewRedis(t)
	sh := &shop{c: c, key: "{test:room:" + strconv.FormatInt(s.ID, 10) + "}:stock"}
	sh.sale.Store(&s)
	sh.set(t, units)
	t.Cleanup(func() { _ = c.Do(context.Background(), c.B().Del().Key(sh.key).Build()).Error() })
	return sh
}

func randomSale() int64 { return 1 + rand.Int64N(sharding.MaxSaleID-1) }

type user struct {
	id   uint64
	pass []byte
	last room.Verdict
}

// waitFor polls cond every 20 ms for at most d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCrowdOverThreeGateways is the waiting room end to end with three
// gateways: a pre-queue and start window drawn at random, late arrivals in
// order, admission that follows the stock, SOLD_OUT to every queued user
// within one poll, and returned stock reopening admission.
func TestCrowdOverThreeGateways(t *testing.T) {
	now := time.Now()
	s := room.Sale{ID: randomSale(), Start: now.Add(2 * time.Second), End: now.Add(time.Hour),
		PreQueue: 3 * time.Second, Window: 1500 * time.Millisecond, Factor: 2}
	const units, drawn, late = 40, 300, 60
	sh := newShop(t, units, s)
	gws := gateways(t, 3, sh)
	ctx := context.Background()
	gw := func(i int) *room.Room { return gws[i%len(gws)] }

	// Pre-queue and start window: 300 users, each through some gateway.
	users := make([]*user, 0, drawn+late)
	waitFor(t, time.Second, "first tick", func() bool { return gws[0].State(s.ID) != nil })
	for i := 0; i < drawn; i++ {
		u := &user{id: uint64(1000 + i)}
		var err error
		u.pass, u.last, err = gw(i).Join(ctx, time.Now(), &s, u.id, sh.units(t), nil)
		if err != nil || u.last.Outcome != room.Queued {
			t.Fatalf("join %d: %+v %v", i, u.last, err)
		}
		users = append(users, u)
	}
	// Asking again enters nothing new: the same entry comes back.
	again, v, err := gw(1).Join(ctx, time.Now(), &s, users[0].id, sh.units(t), nil)
	if err != nil || string(again) != string(users[0].pass) || v.Nonce != users[0].last.Nonce || len(v.Nonce) != 32 {
		t.Fatalf("a second join changed the entry: %s %q vs %s %q (%v)", again, v.Nonce, users[0].pass, users[0].last.Nonce, err)
	}
	if !time.Now().Before(s.Closes()) {
		t.Fatalf("the entries closed before the %d joins were done: slow machine", drawn)
	}
	time.Sleep(time.Until(s.Closes()))
	for i := 0; i < late; i++ {
		u := &user{id: uint64(5000 + i)}
		u.pass, u.last, err = gw(i).Join(ctx, time.Now(), &s, u.id, sh.units(t), nil)
		if err != nil || u.last.Outcome != room.Queued {
			t.Fatalf("late join %d: %+v %v", i, u.last, err)
		}
		users = append(users, u)
	}
	// Every gateway's state shows the final draw and every late arrival
	// (a slow machine may need another tick for the last ones).
	waitFor(t, 2*time.Second, "a final draw of every join and every late arrival on every gateway", func() bool {
		for _, g := range gws {
			if st := g.State(s.ID); st == nil || !st.Final || st.Entrants != drawn || st.Tail != late || st.Frozen == nil || !st.Frozen.Revealed {
				return false
			}
		}
		return true
	})
	poll := func(u *user, i int) room.Verdict {
		u.last = gw(i).Check(time.Now(), &s, u.id, u.pass, sh.units(t))
		return u.last
	}
	checkOrder(t, users, drawn, poll)

	// Admission: everyone polls every 100 ms and buys on admission.
	admitted := map[uint64]bool{}
	for round := 0; sh.units(t) > 0; round++ {
		if round > 100 {
			t.Fatalf("not sold out after 10 s: %d left", sh.units(t))
		}
		for i, u := range users {
			if v := poll(u, i+round); v.Outcome == room.Admitted && !admitted[u.id] {
				admitted[u.id] = true
				sh.buy(t)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	cur := maxCursor(gws, s.ID)
	t.Logf("sold out: %d admitted, cursor %d", len(admitted), cur)
	// The cursor moves at about remaining units per second; admitted users buy
	// within a poll (100 ms), so it may run ahead of the sales by about that.
	if len(admitted) < units || cur > units+units/2 {
		t.Fatalf("%d admitted (cursor %d) for %d units", len(admitted), cur, units)
	}
	for i, u := range users {
		if v := poll(u, i); v.Outcome != room.SoldOut {
			t.Fatalf("user %d polled after the sell-out: %+v", u.id, v)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if c := maxCursor(gws, s.ID); c != cur {
		t.Fatalf("the cursor moved from %d to %d while sold out", cur, c)
	}

	// Two units come back (an expiry, say): admission reopens for about that many.
	sh.set(t, 2)
	fresh := 0
	waitFor(t, 2*time.Second, "admission after returned stock", func() bool {
		for i, u := range users {
			if v := poll(u, i); v.Outcome == room.Admitted && !admitted[u.id] {
				admitted[u.id] = true
				fresh++
				sh.buy(t)
			}
		}
		return fresh > 0
	})
	time.Sleep(300 * time.Millisecond)
	if c := maxCursor(gws, s.ID); c > cur+2+3 {
		t.Fatalf("2 returned units moved the cursor from %d to %d", cur, c)
	}
}

// checkOrder: the drawn places are a random order of the joins (rank
// correlation near zero, every place in 1..drawn), the late places follow
// the draw in the order of arrival.
func checkOrder(t *testing.T, users []*user, drawn int, poll func(*user, int) room.Verdict) {
	t.Helper()
	places := make([]int64, len(users))
	for i, u := range users {
		v := poll(u, i)
		if v.Outcome != room.Queued && v.Outcome != room.Admitted {
			t.Fatalf("user %d: %+v", u.id, v)
		}
		places[i] = v.Place
	}
	for i := drawn; i < len(users); i++ {
		if places[i] != int64(i+1) {
			t.Fatalf("late arrival %d has place %d, want %d", i-drawn+1, places[i], i+1)
		}
	}
	rho := spearman(places[:drawn])
	t.Logf("rank correlation of arrival and drawn place: %.3f", rho)
	if rho > 0.25 || rho < -0.25 {
		t.Fatalf("drawn places follow the arrival order (rho %.3f)", rho)
	}
	seen := map[int64]bool{}
	for _, p := range places[:drawn] {
		if p < 1 || p > int64(drawn) || seen[p] {
			t.Fatalf("drawn place %d outside 1..%d or taken twice", p, drawn)
		}
		seen[p] = true
	}
}

// spearman returns the rank correlation of the arrival index with x.
func spearman(x []int64) float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
	n := float64(len(x))
	var d2 float64
	for rank, i := range idx {
		d := float64(rank - i)
		d2 += d * d
	}
	return 1 - 6*d2/(n*(n*n-1))
}

func maxCursor(gws []*room.Room, sale int64) int64 {
	var m int64
	for _, g := range gws {
		if st := g.State(sale); st != nil && st.Cursor > m {
			m = st.Cursor
		}
	}
	return m
}
