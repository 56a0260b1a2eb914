package stock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"flashsale/sharding"
	"flashsale/sharding/stock"
)

// TestVoidAct runs act.lua and void_act.lua on the real cluster: a pay or
// cancel attempt whose answer was never given is taken back (its journal
// entry gone, the order PENDING again) or fenced (a late run of it changes
// nothing), unless a relay took its entry (it stands) or another attempt,
// which may have been told 202, still holds the request.
func TestVoidAct(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	sale := randomSaleID()
	tag, _ := tagOffFirstMaster(t, c, sale)
	if err := c.Do(ctx, c.B().Set().Key(string(sharding.AppendStockKey(nil, tag, 1))).Value("10").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	events := string(sharding.AppendEventsKey(nil, tag))
	user := uint64(0)
	// order reserves a new order for a new user and returns its pay request.
	order := func(t *testing.T) stock.ActRequest {
		t.Helper()
		user++
		r := reservation(tag, 1, user, sharding.NewOrderID(sale, 1, uint32(user)))
		if res, err := s.Reserve(ctx, r); err != nil || res.Outcome != stock.Reserved {
			t.Fatalf("reserve: %+v, %v", res, err)
		}
		return stock.ActRequest{Tag: tag, Action: stock.ActPay, SaleID: sale, UserID: user, OrderID: r.OrderID, At: time.Now(), Attempt: rand.Uint64()}
	}
	act := func(t *testing.T, a stock.ActRequest, want string) {
		t.Helper()
		if v, err := s.Act(ctx, a); err != nil || v != want {
			t.Fatalf("%s attempt %d: %q, %v; want %q", a.Action, a.Attempt, v, err, want)
		}
	}
	void := func(t *testing.T, a stock.ActRequest, want stock.VoidOutcome) {
		t.Helper()
		if out, err := s.VoidAct(ctx, a); err != nil || out != want {
			t.Fatalf("void of %s attempt %d: %v, %v; want %v", a.Action, a.Attempt, out, err, want)
		}
	}
	// requests counts the journal's pay and cancel entries of a's order.
	requests := func(t *testing.T, a stock.ActRequest) int {
		t.Helper()
		es, err := c.Do(ctx, c.B().Xrange().Key(events).Start("-").End("+").Build()).AsXRange()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range es {
			if t := e.FieldValues["t"]; e.FieldValues["o"] == a.OrderID.String() && (t == "pay" || t == "cancel") {
				n++
			}
		}
		return n
	}
	another := func(a stock.ActRequest) stock.ActRequest { a.Attempt = rand.Uint64(); return a }

	t.Run("journaled, then voided: taken back, the order takes a pay again", func(t *testing.T) {
		a := order(t)
		act(t, a, stock.ActOK)
		void(t, a, stock.Voided)
		if n := requests(t, a); n != 0 {
			t.Fatalf("%d request entries after the void, want 0", n)
		}
		act(t, a, stock.ActVoided) // the same attempt, late: refused
		void(t, a, stock.VoidNothing)
		b := another(a)
		act(t, b, stock.ActOK)
		if n := requests(t, a); n != 1 {
			t.Fatalf("%d request entries, want the new attempt's", n)
		}
	})
	t.Run("voided before it ran: fenced, its late run changes nothing", func(t *testing.T) {
		a := order(t)
		void(t, a, stock.VoidFenced)
		act(t, a, stock.ActVoided)
		if n := requests(t, a); n != 0 {
			t.Fatalf("%d request entries, want 0", n)
		}
		act(t, another(a), stock.ActOK)
	})
	t.Run("another attempt told AGAIN holds it: the entry stays until both let go", func(t *testing.T) {
		a := order(t)
		act(t, a, stock.ActOK)
		b := another(a)
		act(t, b, stock.ActAgain)
		void(t, a, stock.VoidNothing) // b may have been told 202
		if n := requests(t, a); n != 1 {
			t.Fatalf("%d request entries, want 1", n)
		}
		void(t, b, stock.Voided)
		if n := requests(t, a); n != 0 {
			t.Fatalf("%d request entries after both let go, want 0", n)
		}
		// A cancel of the same order is now free to go.
		cancel := another(a)
		cancel.Action = stock.ActCancel
		act(t, cancel, stock.ActOK)
	})
	t.Run("past 16 holders the request is held for good", func(t *testing.T) {
		a := order(t)
		act(t, a, stock.ActOK)
		holders := []stock.ActRequest{a}
		for range 16 {
			b := another(a)
			act(t, b, stock.ActAgain)
			holders = append(holders, b)
		}
		for _, h := range holders {
			void(t, h, stock.VoidNothing)
		}
		if n := requests(t, a); n != 1 {
			t.Fatalf("%d request entries after every holder let go, want 1 (held for good)", n)
		}
	})
	t.Run("taken by a relay: it stands", func(t *testing.T) {
		a := order(t)
		act(t, a, stock.ActOK)
		// A relay round raises the watermark past the entry (relay.lua).
		if err := c.Do(ctx, c.B().Set().Key(string(sharding.AppendTakenKey(nil, tag))).Value("99999999999999-0").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Do(ctx, c.B().Del().Key(string(sharding.AppendTakenKey(nil, tag))).Build()) })
		void(t, a, stock.VoidStands)
		if n := requests(t, a); n != 1 {
			t.Fatalf("%d request entries, want 1", n)
		}
		act(t, another(a), stock.ActAgain)
	})
	t.Run("a frozen shard refuses the void", func(t *testing.T) {
		a := order(t)
		act(t, a, stock.ActOK)
		fence := string(sharding.AppendFenceKey(nil, tag))
		if err := c.Do(ctx, c.B().Set().Key(fence).Value("1").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		out, err := s.VoidAct(ctx, a)
		c.Do(ctx, c.B().Del().Key(fence).Build())
		if err != nil || out != stock.VoidFrozen {
			t.Fatalf("void on a frozen shard: %v %v, want %v", out, err, stock.VoidFrozen)
		}
		void(t, a, stock.Voided)
	})
	t.Run("no such order", func(t *testing.T) {
		a := order(t)
		a.OrderID = sharding.NewOrderID(sale, 1, 999999)
		void(t, a, stock.VoidNothing)
		act(t, a, stock.ActNotFound)
	})
}

// TestFaultServesShardsNamesAStalledShard: ServesShards (what /readyz reads
// besides loading the scripts) answers nil while every shard's master
// serves keys, and names the shard whose master does not: here a master
// that holds every client's commands (CLIENT PAUSE ALL), as it answers
// nothing while it loads its data, and one that holds back writes only
// (CLIENT PAUSE WRITE), as a master being shut down does while it still
// answers reads. The probe was a plain read until a fresh-clone run of
// TestFaultRedisRestart saw /readyz green 0.94 s into the restart and the
// purchase after it answered 503; the WRITE pause fails a plain read. A
// fault test: the pause stalls that master for every other test too.
func TestFaultServesShardsNamesAStalledShard(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	sale := randomSaleID()
	stalled, master := tagOffFirstMaster(t, c, sale)
	other := ""
	top, err := stock.Topology(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for salt := 100; other == ""; salt++ {
		if tag := fmt.Sprintf("s%d:1:%d", sale, salt); top.MasterOfTag(tag) != master {
			other = tag
		}
	}
	if err := s.ServesShards(ctx, nil); err != nil {
		t.Fatalf("no shards: %v", err)
	}
	if err := s.ServesShards(ctx, []string{other, stalled}); err != nil {
		t.Fatalf("every master serving: %v", err)
	}
	node, ok := c.Nodes()[master]
	if !ok {
		t.Fatalf("no connection to %s", master)
	}
	// ALL: a stalled master. WRITE: one that holds back writes, as SHUTDOWN
	// does while its replicas catch up; a plain read still passes there.
	for _, mode := range []string{"ALL", "WRITE"} {
		const pause = 1500 * time.Millisecond
		if err := node.Do(ctx, pauseCmd(node, mode, pause)).Error(); err != nil {
			t.Fatal(err)
		}
		paused := time.Now()
		t.Cleanup(func() { _ = node.Do(context.Background(), node.B().ClientUnpause().Build()).Error() })
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err = s.ServesShards(short, []string{other, stalled})
		cancel()
		if err == nil || !strings.Contains(err.Error(), "shard "+stalled+":") {
			t.Fatalf("master %s paused (%s): got %v, want an error naming shard %s", master, mode, err, stalled)
		}
		if err := s.ServesShards(ctx, []string{other}); err != nil {
			t.Fatalf("the other shard's master serves (%s): %v", mode, err)
		}
		time.Sleep(time.Until(paused.Add(pause + 100*time.Millisecond)))
		if err := s.ServesShards(ctx, []string{other, stalled}); err != nil {
			t.Fatalf("after the pause (%s): %v", mode, err)
		}
	}
}

// pauseCmd is CLIENT PAUSE d, of every client (ALL) or of writes (WRITE).
func pauseCmd(node rueidis.Client, mode string, d time.Duration) rueidis.Completed {
	if mode == "WRITE" {
		return node.B().ClientPause().Timeout(d.Milliseconds()).Write().Build()
	}
	return node.B().ClientPause().Timeout(d.Milliseconds()).All().Build()
}
