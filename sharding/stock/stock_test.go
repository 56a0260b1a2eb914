package stock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"flashsale/deploy/testenv"
	"flashsale/lua"
	"flashsale/sharding"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

func newStore(t testing.TB) (*stock.Store, rueidis.Client) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the local stack")
	}
	testenv.Require(t, "redis")
	c := testenv.NewRedis(t)
	return stock.New(c), c
}

func randomSaleID() int64 { return 1 + rand.Int64N(sharding.MaxSaleID-1) }

// tagOffFirstMaster returns a shard tag whose slot a master other than the first
// seed (127.0.0.1:7001) serves, so the client must follow the slot map (and a
// MOVED if its map were stale) rather than talk to the node it dialled first.
func tagOffFirstMaster(t *testing.T, c rueidis.Client, saleID int64) (string, string) {
	t.Helper()
	top, err := stock.Topology(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Masters) != 3 {
		t.Fatalf("want 3 masters, cluster has %d", len(top.Masters))
	}
	first := testenv.RedisAddrs()[0]
	for salt := 0; ; salt++ {
		tag := fmt.Sprintf("s%d:0:%d", saleID, salt)
		if m := top.MasterOfTag(tag); m != first {
			return tag, m
		}
	}
}

func reservation(tag string, item int64, user uint64, id sharding.OrderID) stock.Reservation {
	now := time.Now()
	return stock.Reservation{Tag: tag, SaleID: id.SaleID(), ItemID: item, UserID: user, OrderID: id,
		Attempt: rand.Uint64(), Created: now, Expires: now.Add(10 * time.Minute), TTL: time.Hour}
}

func getInt(t *testing.T, c rueidis.Client, key []byte) int64 {
	t.Helper()
	n, err := c.Do(context.Background(), c.B().Get().Key(string(key)).Build()).AsInt64()
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	return n
}

func TestSlotAgreesWithClusterKeyslot(t *testing.T) {
	_, c := newStore(t)
	ctx := context.Background()
	keys := []string{"foo", "{user1000}.following", "foo{}{bar}", "{}", "{", "}{", "a{b}c{d}"}
	for i := 0; i < 500; i++ {
		keys = append(keys, string(sharding.AppendStockKey(nil, fmt.Sprintf("s%d:%d:%d", rand.Int64N(1e9), i%64, i), int64(i))))
		b := make([]byte, rand.IntN(24))
		for j := range b {
			b[j] = byte(rand.IntN(256))
		}
		keys = append(keys, string(b))
	}
	for _, k := range keys {
		want, err := c.Do(ctx, c.B().ClusterKeyslot().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if got := sharding.Slot([]byte(k)); int64(got) != want {
			t.Fatalf("Slot(%q) = %d, CLUSTER KEYSLOT says %d", k, got, want)
		}
	}
}

// TestRace1000UsersFor100Units is the seed's race test against the real
// cluster: 1,000 users at once for 100 units.
func TestRace1000UsersFor100Units(t *testing.T) {
	t.Run("rueidis", func(t *testing.T) {
		s, c := newStore(t)
		race1000For100(t, s, c)
	})
	t.Run("batched", func(t *testing.T) {
		s, c := newStore(t)
		b := stock.NewBatcher(c, 16, time.Second)
		t.Cleanup(b.Close)
		s.SetBatcher(b)
		race1000For100(t, s, c)
		if n, batches := b.Stats(); batches == 0 || n <= batches {
			t.Errorf("%d commands in %d batches: the race was not batched", n, batches)
		}
	})
}

func race1000For100(t *testing.T, s *stock.Store, c rueidis.Client) {
	ctx := context.Background()
	sale := randomSaleID()
	tag, master := tagOffFirstMaster(t, c, sale)
	t.Logf("item keys on %s (tag %s)", master, tag)
	const item, units, users = 501, 100, 1000
	stockKey := sharding.AppendStockKey(nil, tag, item)
	if err := c.Do(ctx, c.B().Set().Key(string(stockKey)).Value(strconv.Itoa(units)).Build()).Error(); err != nil {
		t.Fatal(err)
	}

	ids := make([]sharding.OrderID, users+1)
	results := make([]stock.Result, users+1)
	errs := make([]error, users+1)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for u := 1; u <= users; u++ {
		ids[u] = sharding.NewOrderID(sale, rand.Uint64(), rand.Uint32())
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[u], errs[u] = s.Reserve(ctx, reservation(tag, item, uint64(u), ids[u]))
		}()
	}
	close(start)
	wg.Wait()

	var reserved, soldOut int
	winner := 0
	for u := 1; u <= users; u++ {
		if errs[u] != nil {
			t.Fatalf("user %d: %v", u, errs[u])
		}
		switch results[u].Outcome {
		case stock.Reserved:
			reserved++
			winner = u
			if results[u].OrderID != ids[u] || results[u].Replay {
				t.Fatalf("user %d reserved %v (replay %v), asked %v", u, results[u].OrderID, results[u].Replay, ids[u])
			}
		case stock.SoldOut:
			soldOut++
		default:
			t.Fatalf("user %d: %v", u, results[u].Outcome)
		}
	}
	if reserved != units || soldOut != users-units {
		t.Fatalf("reserved %d, sold out %d; want %d and %d", reserved, soldOut, units, users-units)
	}
	if left := getInt(t, c, stockKey); left != 0 {
		t.Fatalf("stock left %d, want 0", left)
	}
	buyers, err := c.Do(ctx, c.B().Hlen().Key(string(sharding.AppendBuyersKey(nil, tag))).Build()).AsInt64()
	if err != nil || buyers != units {
		t.Fatalf("buyers %d (%v), want %d", buyers, err, units)
	}

	next, err := s.Reserve(ctx, reservation(tag, item, users+1, sharding.NewOrderID(sale, 1, 1)))
	if err != nil || next.Outcome != stock.SoldOut {
		t.Fatalf("next user: %+v %v, want sold out", next, err)
	}
	again, err := s.Reserve(ctx, reservation(tag, item, uint64(winner), sharding.NewOrderID(sale, 2, 2)))
	if err != nil || again.Outcome != stock.AlreadyPurchased || again.OrderID != ids[winner] {
		t.Fatalf("winner again: %+v %v, want already purchased with %v", again, err, ids[winner])
	}
	replay, err := s.Reserve(ctx, reservation(tag, item, uint64(winner), ids[winner]))
	if err != nil || replay.Outcome != stock.Reserved || !replay.Replay {
		t.Fatalf("winner replaying its own order id: %+v %v, want an idempotent reservation", replay, err)
	}
	if left := getInt(t, c, stockKey); left != 0 {
		t.Fatalf("a replay took a unit: stock %d", left)
	}

	rec, found, err := s.Order(ctx, tag, uint64(winner), ids[winner])
	if err != nil || !found || rec.Status != stock.StatusPending || rec.UserID != uint64(winner) || rec.ItemID != item {
		t.Fatalf("order record %+v found=%v err=%v", rec, found, err)
	}

	rel, err := s.Release(ctx, tag, item, uint64(winner), ids[winner], stock.StatusExpired)
	if err != nil || rel != stock.Released {
		t.Fatalf("first release: %v %v", rel, err)
	}
	if left := getInt(t, c, stockKey); left != 1 {
		t.Fatalf("after one release stock is %d, want 1", left)
	}
	rel, err = s.Release(ctx, tag, item, uint64(winner), ids[winner], stock.StatusExpired)
	if err != nil || rel != stock.ReleaseNothing {
		t.Fatalf("second release: %v %v, want no-op", rel, err)
	}
	if left := getInt(t, c, stockKey); left != 1 {
		t.Fatalf("after a second release stock is %d, want 1", left)
	}
	rec, _, _ = s.Order(ctx, tag, uint64(winner), ids[winner])
	if rec.Status != stock.StatusExpired {
		t.Fatalf("released order shows %q", rec.Status)
	}
	// The released id cannot be reused, but the user may buy again.
	used, err := s.Reserve(ctx, reservation(tag, item, uint64(winner), ids[winner]))
	if err != nil || used.Outcome != stock.IDUsed {
		t.Fatalf("reusing a released id: %+v %v", used, err)
	}
	fresh := sharding.NewOrderID(sale, 3, 3)
	rebuy, err := s.Reserve(ctx, reservation(tag, item, uint64(winner), fresh))
	if err != nil || rebuy.Outcome != stock.Reserved || rebuy.Left != 0 {
		t.Fatalf("rebuy after expiry: %+v %v", rebuy, err)
	}
}

// TestScriptsRefuseBadInput: every malformed call gets an error reply and
// changes nothing.
func TestScriptsRefuseBadInput(t *testing.T) {
	_, c := newStore(t)
	ctx := context.Background()
	sale := randomSaleID()
	tag, _ := tagOffFirstMaster(t, c, sale)
	stockKey := string(sharding.AppendStockKey(nil, tag, 1))
	buyers := string(sharding.AppendBuyersKey(nil, tag))
	id := sharding.NewOrderID(sale, 5, 5)
	order := string(sharding.AppendOrderKey(nil, tag, id))
	fence := string(sharding.AppendFenceKey(nil, tag))
	badStock := string(sharding.AppendStockKey(nil, tag, 2))
	missing := string(sharding.AppendStockKey(nil, tag, 3))
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Do(ctx, c.B().Set().Key(stockKey).Value("5").Build()).Error())
	must(c.Do(ctx, c.B().Set().Key(badStock).Value("lots").Build()).Error())
	must(c.Do(ctx, c.B().Hset().Key(buyers).FieldValue().FieldValue("77", id.String()).Build()).Error())

	reserve, release, status := rueidis.NewLuaScript(lua.Reserve), rueidis.NewLuaScript(lua.Release), rueidis.NewLuaScript(lua.Status)
	void, act, claim, relay := rueidis.NewLuaScript(lua.Void), rueidis.NewLuaScript(lua.Act), rueidis.NewLuaScript(lua.ExpireClaim), rueidis.NewLuaScript(lua.Relay)
	persisted, voidAct := rueidis.NewLuaScript(lua.Persisted), rueidis.NewLuaScript(lua.VoidAct)
	dropBuyer := rueidis.NewLuaScript(lua.DropBuyer)
	upTo, pg := rueidis.NewLuaScript(lua.PersistedUpTo), string(sharding.AppendPersistedKey(nil, tag))
	events := string(sharding.AppendEventsKey(nil, tag))
	marker := string(sharding.AppendNoMoveKey(nil, tag))
	taken := string(sharding.AppendTakenKey(nil, tag))
	lease := string(sharding.AppendRelayLeaseKey(nil, tag))
	mark := string(sharding.AppendRelayMarkKey(nil, tag))
	marks := string(sharding.AppendFenceMarksKey(nil, tag))
	freeze := string(sharding.AppendFenceKey(nil, tag))
	chain := string(sharding.AppendChainKey(nil, tag))
	rl := []string{events, lease, taken, mark, marks, freeze, chain}
	fenceScript := rueidis.NewLuaScript(lua.Fence)
	halt := string(sharding.AppendHaltKey(nil, tag))
	rk := []string{stockKey, buyers, order, fence, events, marker, halt}
	// user, order id, item, created, expires, ttl, sale, bound, attempt, credit, move id, marker ttl
	okArgs := []string{"42", sharding.NewOrderID(sale, 6, 6).String(), "1", "1000", "2000", "60", "7", "100", "9", "0", "", "60"}
	with := func(i int, v string) []string {
		a := append([]string(nil), okArgs...)
		a[i] = v
		return a
	}
	cases := []struct {
		name   string
		script *rueidis.Lua
		keys   []string
		args   []string
		want   string
	}{
		{"reserve: too few keys", reserve, rk[:6], okArgs, "want 7 keys and 12 args"},
		{"reserve: too few args", reserve, rk, okArgs[:11], "want 7 keys and 12 args"},
		{"reserve: no keys", reserve, nil, nil, "want 7 keys"},
		{"reserve: empty user", reserve, rk, with(0, ""), "bad arguments"},
		{"reserve: created not a number", reserve, rk, with(3, "x"), "bad arguments"},
		{"reserve: ttl zero", reserve, rk, with(5, "0"), "bad arguments"},
		{"reserve: sale not a number", reserve, rk, with(6, "s"), "bad arguments"},
		{"reserve: bound zero", reserve, rk, with(7, "0"), "bad arguments"},
		{"reserve: empty attempt", reserve, rk, with(8, ""), "bad arguments"},
		{"reserve: negative credit", reserve, rk, with(9, "-1"), "bad arguments"},
		{"reserve: credit without move id", reserve, rk, with(9, "2"), "bad arguments"},
		{"reserve: non-numeric stock", reserve, []string{badStock, buyers, order, fence, events, marker, halt}, okArgs, "not a non-negative integer"},
		{"reserve: missing stock key", reserve, []string{missing, buyers, order, fence, events, marker, halt}, okArgs, "stock key missing"},
		{"void: wrong arg count", void, []string{stockKey, buyers, order, fence, events, taken}, []string{"77"}, "want 6 keys and 4 args"},
		{"void: empty attempt", void, []string{stockKey, buyers, order, fence, events, taken}, []string{"77", id.String(), "", "60"}, "bad arguments"},
		{"void: ttl zero", void, []string{stockKey, buyers, order, fence, events, taken}, []string{"77", id.String(), "1", "0"}, "bad arguments"},
		{"act: unknown action", act, []string{order, fence, events, buyers}, []string{"refund", "77", id.String(), "7", "10", "1", "5"}, "bad arguments"},
		{"act: wrong key count", act, []string{order, fence, events}, []string{"pay", "77", id.String(), "7", "10", "1", "5"}, "want 4 keys and 7 args"},
		{"act: no attempt", act, []string{order, fence, events, buyers}, []string{"pay", "77", id.String(), "7", "10", "1"}, "want 4 keys and 7 args"},
		{"act: bound zero", act, []string{order, fence, events, buyers}, []string{"pay", "77", id.String(), "7", "0", "1", "5"}, "bad arguments"},
		{"act: attempt not a number", act, []string{order, fence, events, buyers}, []string{"pay", "77", id.String(), "7", "10", "1", "5,6"}, "bad arguments"},
		{"void_act: wrong key count", voidAct, []string{order, fence, events, taken}, []string{"5", "77", id.String()}, "want 5 keys and 3 args"},
		{"void_act: no attempt", voidAct, []string{order, fence, events, taken, buyers}, nil, "want 5 keys and 3 args"},
		{"void_act: attempt not a number", voidAct, []string{order, fence, events, taken, buyers}, []string{"x", "77", id.String()}, "bad arguments"},
		{"void_act: empty user", voidAct, []string{order, fence, events, taken, buyers}, []string{"5", "", id.String()}, "bad arguments"},
		{"expire_claim: no args", claim, []string{order, fence, buyers}, nil, "want 3 keys and 2 args"},
		{"expire_claim: empty order id", claim, []string{order, fence, buyers}, []string{"77", ""}, "bad arguments"},
		{"relay: too few keys", relay, rl[:6], []string{"tok", "1000", "0", "30000"}, "want 7 keys and 4 args"},
		{"relay: too few args", relay, rl, []string{"tok", "1000", "0"}, "want 7 keys and 4 args"},
		{"relay: an item without its entry", relay, rl, []string{"tok", "1000", "0", "30000", "1-1", "2"}, "want 7 keys and 4 args"},
		{"relay: negative hold", relay, rl, []string{"tok", "1000", "-1", "30000"}, "bad arguments"},
		{"relay: no fence time", relay, rl, []string{"tok", "1000", "0", "0"}, "bad arguments"},
		{"relay: empty token", relay, rl, []string{"", "1000", "0", "30000"}, "bad arguments"},
		{"relay: bad acked id", relay, rl, []string{"tok", "1000", "0", "30000", "not-an-id"}, "bad entry id"},
		{"relay: bad chain item", relay, rl, []string{"tok", "1000", "0", "30000", "1-1", "x", "1-1"}, "bad item, entry id pair"},
		{"relay: bad chain entry", relay, rl, []string{"tok", "1000", "0", "30000", "1-1", "7", "1"}, "bad item, entry id pair"},
		{"fence: no key", fenceScript, nil, []string{"g", "beat", "1"}, "want 1 key and 3 args"},
		{"fence: the old four args", fenceScript, []string{marks}, []string{"g", "beat", "1", "200"}, "want 1 key and 3 args"},
		{"fence: bad op", fenceScript, []string{marks}, []string{"g", "stay", "1"}, "bad arguments"},
		{"fence: empty id", fenceScript, []string{marks}, []string{"", "beat", "1"}, "bad arguments"},
		{"fence: bad previous answer", fenceScript, []string{marks}, []string{"g", "beat", "soon"}, "bad arguments"},
		{"fence: negative previous answer", fenceScript, []string{marks}, []string{"g", "beat", "-5"}, "bad arguments"},
		{"release: wrong arg count", release, []string{stockKey, buyers, order, fence}, []string{"77"}, "want 4 keys and 3 args"},
		{"release: empty status", release, []string{stockKey, buyers, order, fence}, []string{"77", id.String(), ""}, "bad arguments"},
		{"release: non-numeric stock", release, []string{badStock, buyers, order, fence}, []string{"77", id.String(), "EXPIRED"}, "not a non-negative integer"},
		{"release: missing stock key", release, []string{missing, buyers, order, fence}, []string{"77", id.String(), "EXPIRED"}, "stock key missing"},
		{"status: unknown status", status, []string{order, fence, buyers}, []string{"SHIPPED", "60", "", "", "", ""}, "bad arguments"},
		{"status: wrong arg count", status, []string{order, fence, buyers}, []string{"PAID"}, "want 3 keys and 6 args"},
		{"status: no buyers key", status, []string{order, fence}, []string{"PAID", "60", "77", "1", "1000", "2000"}, "want 3 keys and 6 args"},
		{"persisted: no user", persisted, []string{fence, buyers, order}, nil, "want the fence, the buyers, at least one order key and a user per order"},
		{"persisted: no order key", persisted, []string{fence, buyers}, nil, "want the fence, the buyers, at least one order key"},
		{"persisted: empty user", persisted, []string{fence, buyers, order}, []string{""}, "bad arguments"},
		{"persisted_upto: a pair", upTo, []string{fence, pg}, []string{"1", "1-1"}, "want 2 keys and item, prev, last triples"},
		{"persisted_upto: no args", upTo, []string{fence, pg}, nil, "want 2 keys and item, prev, last triples"},
		{"persisted_upto: one key", upTo, []string{fence}, []string{"1", "0-0", "1-1"}, "want 2 keys"},
		{"persisted_upto: item not a number", upTo, []string{fence, pg}, []string{"x", "0-0", "1-1"}, "bad arguments"},
		{"persisted_upto: last not an id", upTo, []string{fence, pg}, []string{"1", "0-0", "1-1", "2", "0-0", "soon"}, "bad arguments"},
		{"persisted_upto: prev not before last", upTo, []string{fence, pg}, []string{"1", "2-0", "1-1"}, "bad arguments"},
		{"persisted_upto: prev equal to last", upTo, []string{fence, pg}, []string{"1", "1-1", "1-1"}, "bad arguments"},
		{"persisted_upto: seq out of range", upTo, []string{fence, pg}, []string{"1", "0-0", "1-12345678901234567"}, "bad arguments"},
		{"drop_buyer: wrong key count", dropBuyer, []string{buyers}, []string{"77", id.String()}, "want 2 keys and 2 args"},
		{"drop_buyer: no order id", dropBuyer, []string{buyers, fence}, []string{"77"}, "want 2 keys and 2 args"},
		{"drop_buyer: empty user", dropBuyer, []string{buyers, fence}, []string{"", id.String()}, "bad arguments"},
		{"drop_buyer: empty order id", dropBuyer, []string{buyers, fence}, []string{"77", ""}, "bad arguments"},
	}
	for _, tc := range cases {
		err := tc.script.Exec(ctx, c, tc.keys, tc.args).Error()
		var rerr *rueidis.RedisError
		if !errors.As(err, &rerr) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error reply containing %q", tc.name, err, tc.want)
		}
	}
	// Nothing changed.
	if n, _ := c.Do(ctx, c.B().Exists().Key(pg).Build()).AsInt64(); n != 0 {
		t.Error("a persisted watermark was written")
	}
	if n := getInt(t, c, []byte(stockKey)); n != 5 {
		t.Errorf("stock changed to %d", n)
	}
	if v, _ := c.Do(ctx, c.B().Get().Key(badStock).Build()).ToString(); v != "lots" {
		t.Errorf("bad stock changed to %q", v)
	}
	if n, _ := c.Do(ctx, c.B().Exists().Key(missing).Build()).AsInt64(); n != 0 {
		t.Error("missing stock key was created")
	}
	if m, _ := c.Do(ctx, c.B().Hgetall().Key(buyers).Build()).AsStrMap(); len(m) != 1 || m["77"] != id.String() {
		t.Errorf("buyers changed: %v", m)
	}
	if n, _ := c.Do(ctx, c.B().Exists().Key(order).Build()).AsInt64(); n != 0 {
		t.Error("an order record was written")
	}
	if n, _ := c.Do(ctx, c.B().Exists().Key(events).Build()).AsInt64(); n != 0 {
		t.Error("a journal entry was written")
	}
	if n, _ := c.Do(ctx, c.B().Exists().Key(lease).Build()).AsInt64(); n != 0 {
		t.Error("a relay lease was taken")
	}
}

func TestPreloadAndRemaining(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	top, err := stock.Topology(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	id := randomSaleID()
	tags, err := sharding.PlaceTags(id, 8, top)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	sl := &sale.Sale{ID: id, Name: "t", StartsAt: now, EndsAt: now.Add(time.Hour),
		Items: []sale.Item{{ID: 1, Quantity: 1001}, {ID: 2, Quantity: 3}}, Shards: tags}
	if err := s.Preload(ctx, sl, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Preload(ctx, sl, false); !errors.Is(err, stock.ErrLive) {
		t.Fatalf("second preload without force: %v", err)
	}
	got, err := s.LoadSale(ctx, id)
	if err != nil || len(got.Shards) != 8 || got.Item(2).Quantity != 3 {
		t.Fatalf("LoadSale: %+v %v", got, err)
	}
	for _, it := range sl.Items {
		rem, err := s.Remaining(ctx, sl, it.ID)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, r := range rem {
			sum += r
		}
		if sum != it.Quantity {
			t.Fatalf("item %d: shards %v sum %d, want %d", it.ID, rem, sum, it.Quantity)
		}
	}
	if _, err := s.LoadSale(ctx, randomSaleID()); !errors.Is(err, stock.ErrNoSale) {
		t.Fatalf("unknown sale: %v", err)
	}
}

// Holder answers what the reserve script would find in the buyers record: the
// held order after a reservation, nothing after its release, and an error (not
// a guess) for a record that is not an order id.
func TestHolderReadsTheBuyerRecord(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	sale := randomSaleID()
	tag, _ := tagOffFirstMaster(t, c, sale)
	if err := c.Do(ctx, c.B().Set().Key(string(sharding.AppendStockKey(nil, tag, 1))).Value("3").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if _, found, err := s.Holder(ctx, tag, 42); err != nil || found {
		t.Fatalf("before any purchase: found %v, err %v", found, err)
	}
	id := sharding.NewOrderID(sale, 9, 9)
	if res, err := s.Reserve(ctx, reservation(tag, 1, 42, id)); err != nil || res.Outcome != stock.Reserved {
		t.Fatalf("reserve: %+v %v", res, err)
	}
	held, found, err := s.Holder(ctx, tag, 42)
	if err != nil || !found || held != id {
		t.Fatalf("after the purchase: %v %v %v, want %v", held, found, err, id)
	}
	// The script agrees: a second click is ALREADY_PURCHASED with the same id.
	res, err := s.Reserve(ctx, reservation(tag, 1, 42, sharding.NewOrderID(sale, 10, 10)))
	if err != nil || res.Outcome != stock.AlreadyPurchased || res.OrderID != held {
		t.Fatalf("script on a repeat: %+v %v", res, err)
	}
	if _, found, _ := s.Holder(ctx, tag, 43); found {
		t.Error("another user holds an order")
	}
	if rel, err := s.Release(ctx, tag, 1, 42, id, stock.StatusCancelled); err != nil || rel != stock.Released {
		t.Fatalf("release: %v %v", rel, err)
	}
	if _, found, err := s.Holder(ctx, tag, 42); err != nil || found {
		t.Fatalf("after the release: found %v, err %v", found, err)
	}
	if err := c.Do(ctx, c.B().Hset().Key(string(sharding.AppendBuyersKey(nil, tag))).FieldValue().FieldValue("44", "not-an-id").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if _, found, err := s.Holder(ctx, tag, 44); err == nil || found || !strings.Contains(err.Error(), "malformed order id") {
		t.Fatalf("malformed record: found %v, err %v", found, err)
	}
}

// stockedShard returns a new sale and a shard of it off the first master
// whose item 1 holds units.
func stockedShard(t *testing.T, c rueidis.Client, units int) (int64, string) {
	t.Helper()
	sale := randomSaleID()
	tag, _ := tagOffFirstMaster(t, c, sale)
	key := string(sharding.AppendStockKey(nil, tag, 1))
	if err := c.Do(context.Background(), c.B().Set().Key(key).Value(strconv.Itoa(units)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	return sale, tag
}

// reservedOrder reserves order (sale, 9, 9) of user 42 for item 1 on a
// fresh shard holding 3 units, and returns its shard and id.
func reservedOrder(t *testing.T, s *stock.Store, c rueidis.Client) (string, sharding.OrderID) {
	t.Helper()
	ctx := context.Background()
	sale, tag := stockedShard(t, c, 3)
	id := sharding.NewOrderID(sale, 9, 9)
	if res, err := s.Reserve(ctx, reservation(tag, 1, 42, id)); err != nil || res.Outcome != stock.Reserved {
		t.Fatalf("reserve: %+v %v", res, err)
	}
	return tag, id
}

// TestMarkPersisted: the writer's mark makes Order report Persisted, for an
// order held lazily by its buyer record without making its record; a
// missing or VOID record is not marked (nor created), a frozen shard refuses.
func TestMarkPersisted(t *testing.T) {
	s, c := newStore(t)
	tag, id := reservedOrder(t, s, c)
	sale := id.SaleID()
	ctx := context.Background()
	if rec, _, err := s.Order(ctx, tag, 42, id); err != nil || rec.Persisted {
		t.Fatalf("before the mark: %+v %v", rec, err)
	}
	for range 2 { // marking twice is harmless
		if ok, err := s.MarkPersisted(ctx, tag, 42, id); err != nil || !ok {
			t.Fatalf("mark: %v %v", ok, err)
		}
	}
	if rec, _, err := s.Order(ctx, tag, 42, id); err != nil || !rec.Persisted || rec.Status != stock.StatusPending {
		t.Fatalf("after the mark: %+v %v", rec, err)
	}
	// The order is held lazily: the mark went into its buyer record, and no
	// order record was made for it.
	orderKey := string(sharding.AppendOrderKey(nil, tag, id))
	if n, err := c.Do(ctx, c.B().Exists().Key(orderKey).Build()).AsInt64(); err != nil || n != 0 {
		t.Fatalf("the mark made an order record: %d %v", n, err)
	}
	missing := sharding.NewOrderID(sale, 10, 10)
	if ok, err := s.MarkPersisted(ctx, tag, 46, missing); err != nil || ok {
		t.Fatalf("mark of a missing record: %v %v", ok, err)
	}
	if _, found, _ := s.Order(ctx, tag, 46, missing); found {
		t.Fatal("the mark created a record")
	}
	void := sharding.NewOrderID(sale, 11, 11)
	r := reservation(tag, 1, 43, void)
	if _, err := s.Void(ctx, r); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.MarkPersisted(ctx, tag, 43, void); err != nil || ok {
		t.Fatalf("mark of a VOID record: %v %v", ok, err)
	}
	// Several orders of the shard in one call: each answered in turn.
	second := sharding.NewOrderID(sale, 12, 12)
	if res, err := s.Reserve(ctx, reservation(tag, 1, 44, second)); err != nil || res.Outcome != stock.Reserved {
		t.Fatalf("reserve: %+v %v", res, err)
	}
	marked, err := s.MarkPersistedMany(ctx, tag, []uint64{46, 44, 43, 42}, []sharding.OrderID{missing, second, void, id})
	if err != nil || fmt.Sprint(marked) != "[false true false true]" {
		t.Fatalf("mark of four: %v %v", marked, err)
	}
	if rec, _, err := s.Order(ctx, tag, 44, second); err != nil || !rec.Persisted {
		t.Fatalf("the second order after the mark of four: %+v %v", rec, err)
	}
	third := sharding.NewOrderID(sale, 13, 13)
	if res, err := s.Reserve(ctx, reservation(tag, 1, 45, third)); err != nil || res.Outcome != stock.Reserved {
		t.Fatalf("reserve: %+v %v", res, err)
	}
	if err := c.Do(ctx, c.B().Set().Key(string(sharding.AppendFenceKey(nil, tag))).Value("1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkPersisted(ctx, tag, 42, id); !errors.Is(err, stock.ErrFrozen) {
		t.Fatalf("frozen shard: %v", err)
	}
	if _, err := s.MarkPersistedMany(ctx, tag, []uint64{42, 45}, []sharding.OrderID{id, third}); !errors.Is(err, stock.ErrFrozen) {
		t.Fatalf("frozen shard, two orders: %v", err)
	}
	if rel, err := s.Release(ctx, tag, 1, 45, third, stock.StatusCancelled); err != nil || rel != stock.ReleaseFrozen {
		t.Fatalf("release on a frozen shard: %v %v, want %v", rel, err, stock.ReleaseFrozen)
	}
	if rec, _, err := s.Order(ctx, tag, 45, third); err != nil || rec.Persisted {
		t.Fatalf("a frozen shard's order was marked: %+v %v", rec, err)
	}
}

// TestPersistedWatermark: the writer's watermark of an item marks persisted
// every order of the item whose reservation entry is at or below it, and
// none above. It rises only over runs of the item's chain that link to it:
// a run past a gap (an entry PostgreSQL never got: issue 55, defect 4)
// raises nothing and is reported for marking order by order, and joins
// the watermark once the gap is filled. A lower run lowers nothing; a
// frozen shard refuses; 'since' (a reshard's) keeps the watermark off the
// entries of a replaced journal.
func TestPersistedWatermark(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	sale, tag := stockedShard(t, c, 5)
	const n = 4
	var ids [n]sharding.OrderID
	var entries [n]string
	for i := range ids {
		ids[i] = sharding.NewOrderID(sale, uint64(20+i), 1)
		if res, err := s.Reserve(ctx, reservation(tag, 1, uint64(50+i), ids[i])); err != nil || res.Outcome != stock.Reserved {
			t.Fatalf("reserve %d: %+v %v", i, res, err)
		}
		rec, found, err := s.Order(ctx, tag, uint64(50+i), ids[i])
		if err != nil || !found || rec.Persisted || rec.Journal == "" {
			t.Fatalf("order %d before any mark: %+v %v %v", i, rec, found, err)
		}
		entries[i] = rec.Journal
	}
	persisted := func() string {
		t.Helper()
		var b strings.Builder
		for i := range ids {
			rec, found, err := s.Order(ctx, tag, uint64(50+i), ids[i])
			if err != nil || !found {
				t.Fatalf("order %d: %v %v", i, found, err)
			}
			fmt.Fprint(&b, rec.Persisted, " ")
		}
		return b.String()
	}
	runs := func(want []int, rs ...stock.Run) {
		t.Helper()
		got, err := s.MarkPersistedRuns(ctx, tag, rs)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("runs %+v: unlinked %v %v, want %v", rs, got, err, want)
		}
	}
	// Entries 0 and 1 in one run from the chain's start; item 2's run
	// starts past a gap.
	runs([]int{1}, stock.Run{Item: 1, Prev: "0-0", Last: entries[1]}, stock.Run{Item: 2, Prev: "5-0", Last: "99999999999999-0"})
	if got := persisted(); got != "true true false false " {
		t.Fatalf("after the run to the second entry: %s", got)
	}
	runs(nil, stock.Run{Item: 1, Prev: "0-0", Last: entries[0]}) // a record produced again
	if got := persisted(); got != "true true false false " {
		t.Fatalf("a lower run changed what is persisted: %s", got)
	}
	// Entry 3 arrives before entry 2 (its mark failed, retried later): it
	// does not link, and is marked by itself.
	runs([]int{0}, stock.Run{Item: 1, Prev: entries[2], Last: entries[3]})
	if got := persisted(); got != "true true false false " {
		t.Fatalf("a run past a gap raised the watermark: %s", got)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Do(ctx, c.B().Set().Key(string(sharding.AppendFenceKey(nil, tag))).Value("1").Build()).Error())
	if _, err := s.MarkPersistedRuns(ctx, tag, []stock.Run{{Item: 1, Prev: entries[1], Last: entries[2]}}); !errors.Is(err, stock.ErrFrozen) {
		t.Fatalf("frozen shard: %v, want ErrFrozen", err)
	}
	must(c.Do(ctx, c.B().Del().Key(string(sharding.AppendFenceKey(nil, tag))).Build()).Error())
	if got := persisted(); got != "true true false false " {
		t.Fatalf("a frozen shard's watermark moved: %s", got)
	}
	// The retried entry 2 fills the gap: the watermark joins the pending run.
	runs(nil, stock.Run{Item: 1, Prev: entries[1], Last: entries[2]})
	if got := persisted(); got != "true true true true " {
		t.Fatalf("after the gap was filled: %s", got)
	}
	// A reshard's journal starts past entry 1: the watermark no longer
	// speaks for entries 0 and 1.
	must(c.Do(ctx, c.B().Hset().Key(string(sharding.AppendPersistedKey(nil, tag))).FieldValue().FieldValue(stock.PersistedSince, entries[2]).Build()).Error())
	if got := persisted(); got != "false false true true " {
		t.Fatalf("with since at the third entry: %s", got)
	}
}

// TestDropBuyerOnlyWhileItNamesTheOrder: reconcile's drop of an unknown
// reservation removes the buyer record only while it names that order, and
// not at all on a fenced shard.
func TestDropBuyerOnlyWhileItNamesTheOrder(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	sale := randomSaleID()
	tag, _ := tagOffFirstMaster(t, c, sale)
	buyers := string(sharding.AppendBuyersKey(nil, tag))
	mine, other := sharding.NewOrderID(sale, 1, 1), sharding.NewOrderID(sale, 2, 2)
	if err := c.Do(ctx, c.B().Hset().Key(buyers).FieldValue().FieldValue("42", mine.String()).FieldValue("43", other.String()).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.DropBuyer(ctx, tag, 43, mine); err != nil || ok {
		t.Fatalf("record naming another order: dropped %v, err %v", ok, err)
	}
	if ok, err := s.DropBuyer(ctx, tag, 44, mine); err != nil || ok {
		t.Fatalf("no record: dropped %v, err %v", ok, err)
	}
	fence := string(sharding.AppendFenceKey(nil, tag))
	if err := c.Do(ctx, c.B().Set().Key(fence).Value("1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.DropBuyer(ctx, tag, 42, mine); !errors.Is(err, stock.ErrFrozen) || ok {
		t.Fatalf("fenced shard: dropped %v, err %v, want ErrFrozen", ok, err)
	}
	if err := c.Do(ctx, c.B().Del().Key(fence).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.DropBuyer(ctx, tag, 42, mine); err != nil || !ok {
		t.Fatalf("record naming the order: dropped %v, err %v", ok, err)
	}
	m, err := c.Do(ctx, c.B().Hgetall().Key(buyers).Build()).AsStrMap()
	if err != nil || len(m) != 1 || m["43"] != other.String() {
		t.Fatalf("buyers afterwards: %v %v, want only 43 -> %s", m, err, other)
	}
}

// An order record read back carries its request mark; a record another
// process mangled (times or mark out of their ranges) is an error naming the
// field, not an order.
func TestOrderRecordIsValidated(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	tag, id := reservedOrder(t, s, c)
	key := string(sharding.AppendOrderKey(nil, tag, id))
	set := func(field, value string) {
		t.Helper()
		if err := c.Do(ctx, c.B().Hset().Key(key).FieldValue().FieldValue(field, value).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	// The reservation left the order in its buyer record: write its record
	// as order.lua opens it.
	lazy, found, err := s.Order(ctx, tag, 42, id)
	if err != nil || !found {
		t.Fatalf("the lazy order: %+v %v %v", lazy, found, err)
	}
	if err := c.Do(ctx, c.B().Hset().Key(key).FieldValue().FieldValue("user", "42").FieldValue("item", "1").
		FieldValue("status", "PENDING").FieldValue("created", strconv.FormatInt(lazy.Created.UnixMilli(), 10)).
		FieldValue("expires", strconv.FormatInt(lazy.Expires.UnixMilli(), 10)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	orig, err := c.Do(ctx, c.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"pay", "cancel", "exp"} {
		set("q", q)
		if rec, found, err := s.Order(ctx, tag, 42, id); err != nil || !found || rec.Request != q {
			t.Fatalf("mark %q: %+v %v %v", q, rec, found, err)
		}
	}
	for _, tc := range []struct{ field, value, want string }{
		{"q", "refund", `request mark "refund"`},
		{"expires", "soon", "times"},
		{"user", "-1", "user"},
	} {
		set(tc.field, tc.value)
		if _, found, err := s.Order(ctx, tag, 42, id); err == nil || found || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s=%q: found %v, err %v; want an error naming %s", tc.field, tc.value, found, err, tc.want)
		}
		set(tc.field, orig[tc.field])
	}
}

// Shown is the record's status, but PENDING past the deadline with no pay
// or cancel accepted is EXPIRED.
func TestOrderRecordShown(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		status, request string
		expires         time.Time
		want            string
	}{
		{stock.StatusPending, "", now.Add(time.Second), stock.StatusPending},
		{stock.StatusPending, "", now, stock.StatusPending},                   // within the clocks' grace
		{stock.StatusPending, "", now.Add(-time.Second), stock.StatusPending}, // still
		{stock.StatusPending, "", now.Add(-2 * time.Second), stock.StatusExpired},
		{stock.StatusPending, "exp", now.Add(-time.Second), stock.StatusExpired},
		{stock.StatusPending, "pay", now.Add(-time.Second), stock.StatusPending},
		{stock.StatusPending, "cancel", now.Add(-time.Second), stock.StatusPending},
		{stock.StatusPaid, "pay", now.Add(-time.Hour), stock.StatusPaid},
		{stock.StatusCancelled, "cancel", now.Add(-time.Hour), stock.StatusCancelled},
		{stock.StatusFailed, "", now.Add(-time.Hour), stock.StatusFailed},
	} {
		r := stock.OrderRecord{Status: tc.status, Request: tc.request, Expires: tc.expires}
		if got := r.Shown(now); got != tc.want {
			t.Errorf("%s with mark %q, deadline %v from now: shown %s, want %s", tc.status, tc.request, tc.expires.Sub(now), got, tc.want)
		}
	}
}

// TestReplayTakesTheOrderOver: a purchase retried with the same order id (an
// Idempotency-Key) while its first attempt's void is still queued (that
// attempt answered 503: its outcome was unknown and Redis did not take the
// void in time) is answered Reserved from the order the first attempt made.
// The queued void, landing after, must leave that order alone: the retry's
// client was told 202 (before the replay took the order over, that late void
// undid it). A void of the retry's own attempt still undoes it.
// (reserve_many.lua does the same: TestReserveManyMatchesReserveInTurn
// compares the order records, attempt included, after random replays.)
func TestReplayTakesTheOrderOver(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	sale, tag := stockedShard(t, c, 3)
	stockKey := sharding.AppendStockKey(nil, tag, 1)
	id := sharding.NewOrderID(sale, 9, 9)
	first := reservation(tag, 1, 42, id)
	if res, err := s.Reserve(ctx, first); err != nil || res.Outcome != stock.Reserved {
		t.Fatalf("the first attempt: %+v %v", res, err)
	}
	retry := reservation(tag, 1, 42, id) // another attempt id
	if res, err := s.Reserve(ctx, retry); err != nil || res.Outcome != stock.Reserved || res.OrderID != id {
		t.Fatalf("the retry: %+v %v", res, err)
	}
	if out, err := s.Void(ctx, first); err != nil || out != stock.VoidNothing {
		t.Fatalf("the first attempt's void after the retry: %v %v, want %v", out, err, stock.VoidNothing)
	}
	if rec, found, err := s.Order(ctx, tag, 42, id); err != nil || !found || rec.Status != stock.StatusPending {
		t.Fatalf("the order after the late void: %+v %v %v", rec, found, err)
	}
	if held, found, err := s.Holder(ctx, tag, 42); err != nil || !found || held != id {
		t.Fatalf("the buyer record after the late void: %v %v %v", held, found, err)
	}
	if n := getInt(t, c, stockKey); n != 2 {
		t.Fatalf("stock after the late void: %d, want 2", n)
	}
	if out, err := s.Void(ctx, retry); err != nil || out != stock.Voided {
		t.Fatalf("the retry's own void: %v %v, want %v", out, err, stock.Voided)
	}
	if _, found, _ := s.Holder(ctx, tag, 42); found {
		t.Fatal("the retry's void left the buyer record")
	}
	if n := getInt(t, c, stockKey); n != 3 {
		t.Fatalf("stock after the retry's void: %d, want 3", n)
	}
}

// TestVoidFencesAnAttemptAfterAVoid: a chaos run (seed 243, with a rush of
// buyers before each partition) found a buyer told 503 holding an order. Its
// first attempt reserved and was voided; its retry with the same key went to
// a gateway cut off from the master, whose void landed before the retry's
// reserve (held up in a TCP retransmission). The void found the first
// attempt's VOID record and answered NOTHING without fencing the retry; the
// retry's late reserve then bought anew, as a new attempt after a VOID may.
// The void now fences the attempt on the record, and both scripts refuse
// it.
func TestVoidFencesAnAttemptAfterAVoid(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	sale, tag := stockedShard(t, c, 3)
	id := sharding.NewOrderID(sale, 9, 9)
	first := reservation(tag, 1, 42, id)
	if res, err := s.Reserve(ctx, first); err != nil || res.Outcome != stock.Reserved {
		t.Fatalf("the first attempt: %+v %v", res, err)
	}
	if out, err := s.Void(ctx, first); err != nil || out != stock.Voided {
		t.Fatalf("the first attempt's void: %v %v, want voided", out, err)
	}
	retry := reservation(tag, 1, 42, id)
	if out, err := s.Void(ctx, retry); err != nil || out != stock.VoidFenced {
		t.Fatalf("the retry's void before its reserve: %v %v, want fenced", out, err)
	}
	if res, err := s.Reserve(ctx, retry); err != nil || res.Outcome != stock.IDUsed {
		t.Fatalf("the retry's late reserve: %+v %v, want refused (ID_USED)", res, err)
	}
	b := stock.NewBatcher(c, 4, time.Second)
	defer b.Close()
	joined := stock.New(c)
	joined.SetBatcher(b)
	if res, err := joined.Reserve(ctx, retry); err != nil || res.Outcome != stock.IDUsed {
		t.Fatalf("the retry's late reserve through reserve_many: %+v %v, want refused (ID_USED)", res, err)
	}
	if _, found, _ := s.Holder(ctx, tag, 42); found {
		t.Fatal("a buyer record for the fenced retry")
	}
	if n := getInt(t, c, sharding.AppendStockKey(nil, tag, 1)); n != 3 {
		t.Fatalf("stock %d, want 3: nothing reserved", n)
	}
	// Another attempt, never voided, may still buy after the VOID (a retry
	// the buyer makes after the 503).
	third := reservation(tag, 1, 42, id)
	if res, err := s.Reserve(ctx, third); err != nil || res.Outcome != stock.Reserved {
		t.Fatalf("a third attempt: %+v %v, want reserved", res, err)
	}
}

// TestVoidFencesAnAttemptAnotherHolds: the same buyer's attempts, all told
// 503 by a gateway cut off from the master (make test's chaos run, seed
// 243): the second attempt's void landed while the first attempt held the
// order, answered NOTHING and fenced nothing; the first attempt's void then
// undid the order, and the second attempt's late reserve bought anew.
// Fenced now, the second attempt can neither buy after the VOID nor, as a
// replay, take the order over from the first (whose void must still undo
// it).
func TestVoidFencesAnAttemptAnotherHolds(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	for _, late := range []string{"after the holder's void", "before the holder's void"} {
		sale, tag := stockedShard(t, c, 3)
		id := sharding.NewOrderID(sale, 9, 9)
		first, second := reservation(tag, 1, 42, id), reservation(tag, 1, 42, id)
		if res, err := s.Reserve(ctx, first); err != nil || res.Outcome != stock.Reserved {
			t.Fatalf("%s: the first attempt: %+v %v", late, res, err)
		}
		if out, err := s.Void(ctx, second); err != nil || out != stock.VoidNothing {
			t.Fatalf("%s: the second attempt's void while the first holds: %v %v, want nothing", late, out, err)
		}
		if late == "before the holder's void" {
			// A replay of the fenced attempt changes nothing, through
			// reserve.lua and through reserve_many.lua alike.
			if res, err := s.Reserve(ctx, second); err != nil || res.Outcome != stock.Reserved || !res.Replay {
				t.Fatalf("%s: the second attempt's late replay: %+v %v", late, res, err)
			}
			if reply := reserveMany(t, c, second); !strings.HasPrefix(reply, "1 ") {
				t.Fatalf("%s: the second attempt's late replay through reserve_many: %s", late, reply)
			}
		}
		if out, err := s.Void(ctx, first); err != nil || out != stock.Voided {
			t.Fatalf("%s: the first attempt's void: %v %v, want voided", late, out, err)
		}
		if late == "after the holder's void" {
			if res, err := s.Reserve(ctx, second); err != nil || res.Outcome != stock.IDUsed {
				t.Fatalf("%s: the second attempt's late reserve: %+v %v, want refused", late, res, err)
			}
		}
		if _, found, _ := s.Holder(ctx, tag, 42); found {
			t.Fatalf("%s: the buyer holds an order though every attempt was told 503", late)
		}
		if n := getInt(t, c, sharding.AppendStockKey(nil, tag, 1)); n != 3 {
			t.Fatalf("%s: stock %d, want 3", late, n)
		}
	}
}

// TestAnOlderAttemptTakesNothingOver: a chaos run (seed 227378) answered a
// buyer 202 for a purchase and 202 for its pay, and the order then vanished
// (VOID in Redis, never in PostgreSQL). The first attempt went to a gateway
// cut off from the master and was told 503, its void queued; the retry with
// the same key bought the order fresh (202, then paid); after the cut healed
// the first attempt's reserve, held up in TCP retransmission, ran as a
// replay and took the order over, and its void, landing next, undid it. The
// late attempt now only joins the order's holders (lua/order.lua), through
// either script, and its void lets go of it alone: the retry's order stays.
func TestAnOlderAttemptTakesNothingOver(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	for _, via := range []string{"reserve.lua", "reserve_many.lua"} {
		sale, tag := stockedShard(t, c, 3)
		id := sharding.NewOrderID(sale, 9, 9)
		first, retry := reservation(tag, 1, 42, id), reservation(tag, 1, 42, id)
		first.Created = retry.Created.Add(-2 * time.Second) // sent before the retry
		if res, err := s.Reserve(ctx, retry); err != nil || res.Outcome != stock.Reserved || res.Replay {
			t.Fatalf("%s: the retry: %+v %v, want a fresh reservation", via, res, err)
		}
		if via == "reserve.lua" {
			if res, err := s.Reserve(ctx, first); err != nil || res.Outcome != stock.Reserved || !res.Replay {
				t.Fatalf("%s: the first attempt's late run: %+v %v, want a replay", via, res, err)
			}
		} else if reply := reserveMany(t, c, first); !strings.HasPrefix(reply, "1 ") {
			t.Fatalf("%s: the first attempt's late run: %s, want a replay", via, reply)
		}
		if out, err := s.Void(ctx, first); err != nil || out != stock.VoidNothing {
			t.Fatalf("%s: the first attempt's void: %v %v, want nothing undone", via, out, err)
		}
		if rec, found, err := s.Order(ctx, tag, 42, id); err != nil || !found || rec.Status != stock.StatusPending {
			t.Fatalf("%s: the retry's order after the late attempt and its void: %+v %v %v", via, rec, found, err)
		}
		if held, found, _ := s.Holder(ctx, tag, 42); !found || held != id {
			t.Fatalf("%s: the buyer record after the late attempt and its void: %v %v", via, held, found)
		}
		if n := getInt(t, c, sharding.AppendStockKey(nil, tag, 1)); n != 2 {
			t.Fatalf("%s: stock %d, want 2", via, n)
		}
	}
}

// reserveMany runs reserve_many.lua for r alone and returns its one reply
// as "code order left".
func reserveMany(t *testing.T, c rueidis.Client, r stock.Reservation) string {
	t.Helper()
	keys := []string{string(sharding.AppendStockKey(nil, r.Tag, r.ItemID)), string(sharding.AppendBuyersKey(nil, r.Tag)),
		string(sharding.AppendOrderKey(nil, r.Tag, r.OrderID)), string(sharding.AppendFenceKey(nil, r.Tag)),
		string(sharding.AppendEventsKey(nil, r.Tag)), string(sharding.AppendNoMoveKey(nil, r.Tag)), string(sharding.AppendHaltKey(nil, r.Tag))}
	args := []string{strconv.FormatUint(r.UserID, 10), r.OrderID.String(), strconv.FormatInt(r.ItemID, 10),
		strconv.FormatInt(r.Created.UnixMilli(), 10), strconv.FormatInt(r.Expires.UnixMilli(), 10), "3600",
		strconv.FormatInt(r.SaleID, 10), "1000", strconv.FormatUint(r.Attempt, 10), "0", "", "60"}
	keys, args = stock.JoinedLayout([][]string{keys}, [][]string{args})
	arr, err := rueidis.NewLuaScript(lua.ReserveMany).Exec(context.Background(), c, keys, args).ToArray()
	if err != nil || len(arr) != 1 {
		t.Fatalf("reserve_many: %v %v", arr, err)
	}
	one, _ := arr[0].ToArray()
	var parts []string
	for _, m := range one {
		v, _ := m.ToString()
		if v == "" {
			n, _ := m.AsInt64()
			v = strconv.FormatInt(n, 10)
		}
		parts = append(parts, v)
	}
	return strings.Join(parts, " ")
}
