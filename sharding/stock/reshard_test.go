package stock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"flashsale/deploy/testenv"
	"flashsale/lua"
	"flashsale/sharding"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

// A reshard through a Batcher (as flashctl's is) is acknowledged step by
// step: one whose WAIT fails stops with ErrUnconfirmed instead of reporting
// a layout a failover could undo, and running it again resumes it with every
// unit and buyer conserved.
func TestReshardIsAcknowledged(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	sale := storedSale(t, s, c, 2, 20)
	orders := reserveBuyers(t, s, sale, 6)
	top, err := stock.Topology(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	ops, b, user := unconfirmedStore(t)
	if _, _, err := ops.Reshard(ctx, sale.ID, 4, top); !errors.Is(err, stock.ErrUnconfirmed) {
		t.Fatalf("reshard whose WAIT fails: %v, want ErrUnconfirmed", err)
	}
	if ls, err := s.LoadSale(ctx, sale.ID); err != nil || len(ls.Shards) != 2 {
		t.Fatalf("after the unconfirmed reshard the sale reads %+v %v, want its 2 shards", ls, err)
	}
	user.Set("+wait")
	next, rep, err := ops.Reshard(ctx, sale.ID, 4, top)
	if err != nil || !rep.Resumed || len(next.Shards) != 4 {
		t.Fatalf("reshard again: %+v %+v %v, want the first one resumed to 4 shards", next, rep, err)
	}
	if left, per := total(t, s, next, 1); left != 14 {
		t.Fatalf("units left %d (%v), want 14", left, per)
	}
	for u, id := range orders {
		got, held, err := s.Holder(ctx, next.Shards[sharding.HomeShard(u, next.ID, 4)], u)
		if err != nil || !held || got != id {
			t.Fatalf("buyer %d after the reshard: %v %v %v, want %v", u, got, held, err, id)
		}
	}
	if n := b.Unconfirmed(); n == 0 {
		t.Fatal("the batcher counted no unconfirmed write")
	}
}

// The copy is read back before a reshard publishes it: a shard short of what
// was written (as a promoted replica that missed the copy would be) is an
// ErrUnconfirmed.
func TestReshardCopyCheck(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	tag := "s" + strconv.FormatInt(randomSaleID(), 10) + ":0:0"
	buyers := string(sharding.AppendBuyersKey(nil, tag))
	order := string(sharding.AppendOrderKey(nil, tag, sharding.NewOrderID(1, 1, 1)))
	t.Cleanup(func() { c.Do(ctx, c.B().Del().Key(buyers).Build()); c.Do(ctx, c.B().Del().Key(order).Build()) })
	if err := c.Do(ctx, c.B().Hset().Key(buyers).FieldValue().FieldValue("1", "x").FieldValue("2", "y").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, c.B().Hset().Key(order).FieldValue().FieldValue("user", "1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyCheck(ctx, tag, 2, 0, []string{order}); err != nil {
		t.Fatalf("a whole copy: %v", err)
	}
	for _, tc := range []struct {
		name            string
		buyers, entries int64
		orders          []string
	}{
		{"a buyer missing", 3, 0, []string{order}},
		{"a journal entry missing", 2, 1, []string{order}},
		{"an order record missing", 2, 0, []string{order, order + "x"}},
	} {
		if err := s.CopyCheck(ctx, tag, tc.buyers, tc.entries, tc.orders); !errors.Is(err, stock.ErrUnconfirmed) {
			t.Errorf("%s: %v, want ErrUnconfirmed", tc.name, err)
		}
	}
}

// A reshard that stopped after it published the new layout but before its
// journal said so (a crash, or that write unconfirmed) resumes without copying
// again: the new shards are live, and a copy of the frozen old ones over them
// would bring back the units sold since. The state is made by a reshard whose
// user may not DEL (it stops at the drop of the old shards, after the
// journal's "published"), with the journal's phase then set back. Such a
// resume used to copy again: the copy's read-back stopped it, having
// computed 17 units for the new shards where 16 were left, and before the
// read-back existed those 17 were written, an oversell.
func TestReshardResumedAfterPublishDoesNotCopyAgain(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	sale := storedSale(t, s, c, 2, 20)
	reserveBuyers(t, s, sale, 3)
	top, err := stock.Topology(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	user := testenv.NewRedisUser(t, "~*", "+@all", "-del")
	if _, _, err := stock.New(user.Client()).Reshard(ctx, sale.ID, 4, top); err == nil {
		t.Fatal("a reshard that may not DEL finished")
	}
	live, err := s.LoadSale(ctx, sale.ID)
	if err != nil || len(live.Shards) != 4 {
		t.Fatalf("after the stopped reshard the sale reads %+v %v, want the new 4 shards", live, err)
	}
	key := sharding.ReshardKey(sale.ID)
	j, err := c.Do(ctx, c.B().Get().Key(key).Build()).ToString()
	if err != nil || !strings.Contains(j, `"phase":"published"`) {
		t.Fatalf("reshard journal %q %v, want phase published", j, err)
	}
	j = strings.Replace(j, `"phase":"published"`, `"phase":"copying"`, 1)
	if err := c.Do(ctx, c.B().Set().Key(key).Value(j).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	// Sold on the live new layout.
	const late = uint64(4)
	lateID := sharding.NewOrderID(sale.ID, late, 4)
	if r, err := s.Reserve(ctx, reservation(live.Shards[sharding.HomeShard(late, live.ID, 4)], 1, late, lateID)); err != nil || r.Outcome != stock.Reserved {
		t.Fatalf("reserve on the new layout: %+v %v", r, err)
	}
	next, rep, err := s.Reshard(ctx, sale.ID, 4, top)
	if err != nil || !rep.Resumed || len(next.Shards) != 4 {
		t.Fatalf("resume: %+v %+v %v", next, rep, err)
	}
	if left, per := total(t, s, next, 1); left != 16 {
		t.Fatalf("units left %d (%v), want 16: the resume copied the old shards over the live ones", left, per)
	}
	if got, held, err := s.Holder(ctx, next.Shards[sharding.HomeShard(late, next.ID, 4)], late); err != nil || !held || got != lateID {
		t.Fatalf("the buyer on the new layout: %v %v %v", got, held, err)
	}
	for _, tag := range sale.Shards {
		if n, _ := c.Do(ctx, c.B().Exists().Key(string(sharding.AppendStockKey(nil, tag, 1))).Build()).AsInt64(); n != 0 {
			t.Fatalf("old shard %s still has stock after the resume", tag)
		}
	}
}

// storedSale is newSale with its description stored, as flashctl creates one.
func storedSale(t *testing.T, s *stock.Store, c rueidis.Client, shards int, qty ...int64) *sale.Sale {
	t.Helper()
	sale := newSale(t, s, c, shards, qty...)
	if err := s.StoreSale(context.Background(), sale); err != nil {
		t.Fatal(err)
	}
	return sale
}

// reserveBuyers reserves a unit of item 1 for users 1..n on their home shards
// and returns their order ids.
func reserveBuyers(t *testing.T, s *stock.Store, sale *sale.Sale, n uint64) map[uint64]sharding.OrderID {
	t.Helper()
	orders := make(map[uint64]sharding.OrderID, n)
	for u := uint64(1); u <= n; u++ {
		id := sharding.NewOrderID(sale.ID, u, uint32(u))
		tag := sale.Shards[sharding.HomeShard(u, sale.ID, len(sale.Shards))]
		if r, err := s.Reserve(context.Background(), reservation(tag, 1, u, id)); err != nil || r.Outcome != stock.Reserved {
			t.Fatalf("reserve %d: %+v %v", u, r, err)
		}
		orders[u] = id
	}
	return orders
}

// unconfirmedStore returns a Store whose writes go through a Batcher asking
// one replica's acknowledgement, as flashctl's do, signed in as a Redis user
// that may not run WAIT (every acknowledged write is ErrUnconfirmed) until
// the test grants it with user.Set("+wait").
func unconfirmedStore(t *testing.T) (*stock.Store, *stock.Batcher, *testenv.RedisUser) {
	t.Helper()
	user := testenv.NewRedisUser(t, "~*", "+@all", "-wait")
	b := stock.NewBatcher(user.Client(), 4, time.Second)
	t.Cleanup(b.Close)
	b.SetAcks(1, 50*time.Millisecond)
	s := stock.New(user.Client())
	s.SetBatcher(b)
	return s, b, user
}

// After a reshard published its layout, the old shards' order records stay
// readable for stock.LayoutGrace: a gateway whose catalog still names the old
// layout (it refreshes every second) finds the order. A chaos run found pays
// and cancels answered 404 ORDER_NOT_FOUND for orders that existed, because
// the old records went the moment the layout was published.
func TestReshardKeepsTheOldRecordsForTheGrace(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	sale := storedSale(t, s, c, 2, 20)
	orders := reserveBuyers(t, s, sale, 4)
	top, err := stock.Topology(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, _, err := s.Reshard(ctx, sale.ID, 3, top); done <- err }()
	for wait := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if ls, err := s.LoadSale(ctx, sale.ID); err == nil && len(ls.Shards) == 3 {
			break
		}
		if time.Since(wait) > 20*time.Second {
			t.Fatal("the new layout was not published")
		}
	}
	published := time.Now()
	for u, id := range orders {
		old := sale.Shards[sharding.HomeShard(u, sale.ID, len(sale.Shards))]
		if _, found, err := s.Order(ctx, old, u, id); err != nil || !found {
			t.Fatalf("order %v on its old shard right after the publication: found %v, %v", id, found, err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(published); took < stock.LayoutGrace/2 {
		t.Fatalf("the old shards went %v after the publication, want about %v", took, stock.LayoutGrace)
	}
	for u, id := range orders {
		old := sale.Shards[sharding.HomeShard(u, sale.ID, len(sale.Shards))]
		if _, found, _ := s.Order(ctx, old, u, id); found {
			t.Fatalf("order %v still on its old shard after the reshard", id)
		}
	}
}

// relayRound runs one relay.lua round on tag with hold 0 and a fence time
// of ten minutes, and returns its reply's id to read up to ("" for none).
func relayRound(t *testing.T, c rueidis.Client, tag string) string {
	t.Helper()
	keys := []string{string(sharding.AppendEventsKey(nil, tag)), string(sharding.AppendRelayLeaseKey(nil, tag)),
		string(sharding.AppendTakenKey(nil, tag)), string(sharding.AppendRelayMarkKey(nil, tag)),
		string(sharding.AppendFenceMarksKey(nil, tag)), string(sharding.AppendFenceKey(nil, tag)), string(sharding.AppendChainKey(nil, tag))}
	arr, err := rueidis.NewLuaScript(lua.Relay).Exec(context.Background(), c, keys, []string{"reshard-test", "5000", "0", "600000"}).ToArray()
	if err != nil || len(arr) < 4 {
		t.Fatalf("relay round on %s: %v %v", tag, arr, err)
	}
	upto, _ := arr[3].ToString()
	return upto
}

// TestReshardKeepsAQueuedVoidUndoable: a void queued by a gateway cut off
// from a shard's master must still undo its attempt after a reshard moved
// the shard. A chaos run (seed 598733) found two purchases answered 503
// that became orders: the attempts reached the master just as the
// partition began, their voids waited in the gateway's queue (its fence
// mark holding the relays back), a live reshard copied the journal to the
// new shards, and there the entries were neither held by that mark nor
// named by their order records (the copy kept the old entry ids), so the
// voids, landing after the partition healed, answered that the orders
// stood. Now the copy keeps what the old shard knew: each gateway's oldest
// fence mark, the entries a relay had taken (below the new watermark: a
// void of those answers that the order stands) and the ones it had not,
// which the records name by their new ids; and a frozen shard's relay
// closes nothing more, so what the copy read as untaken stays so.
func TestReshardKeepsAQueuedVoidUndoable(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	sale := storedSale(t, s, c, 2, 20)
	tagOf := func(sh []string, u uint64) string { return sh[sharding.HomeShard(u, sale.ID, len(sh))] }
	const relayed, cut = uint64(1), uint64(2)
	rRelayed := reservation(tagOf(sale.Shards, relayed), 1, relayed, sharding.NewOrderID(sale.ID, relayed, 1))
	if r, err := s.Reserve(ctx, rRelayed); err != nil || r.Outcome != stock.Reserved {
		t.Fatalf("reserve: %+v %v", r, err)
	}
	if relayRound(t, c, rRelayed.Tag) == "" {
		t.Fatal("the relay took nothing before the reshard")
	}
	time.Sleep(2 * time.Millisecond) // the cut-off attempt's entry is not in the relayed one's millisecond
	rCut := reservation(tagOf(sale.Shards, cut), 1, cut, sharding.NewOrderID(sale.ID, cut, 2))
	if r, err := s.Reserve(ctx, rCut); err != nil || r.Outcome != stock.Reserved {
		t.Fatalf("reserve: %+v %v", r, err)
	}
	// The cut-off gateway's last beat, before its attempt.
	beat := strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10)
	for _, tag := range sale.Shards {
		if err := c.Do(ctx, c.B().Hset().Key(string(sharding.AppendFenceMarksKey(nil, tag))).FieldValue().FieldValue("cut-off", beat).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	// A frozen shard's relay closes nothing more.
	if err := c.Do(ctx, c.B().Set().Key(string(sharding.AppendFenceKey(nil, rCut.Tag))).Value("0").Ex(time.Minute).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	// (Its mark gone, nothing but the freeze holds the relay back.)
	c.Do(ctx, c.B().Hdel().Key(string(sharding.AppendFenceMarksKey(nil, rCut.Tag))).Field("cut-off").Build())
	takenKey := string(sharding.AppendTakenKey(nil, rCut.Tag))
	before, _ := c.Do(ctx, c.B().Get().Key(takenKey).Build()).ToString()
	upto := relayRound(t, c, rCut.Tag)
	if after, _ := c.Do(ctx, c.B().Get().Key(takenKey).Build()).ToString(); after != before || upto != before {
		t.Errorf("a relay round on a frozen shard read up to %q and moved its watermark from %q to %q", upto, before, after)
	}
	c.Do(ctx, c.B().Hset().Key(string(sharding.AppendFenceMarksKey(nil, rCut.Tag))).FieldValue().FieldValue("cut-off", beat).Build())

	top, err := stock.Topology(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	live, _, err := s.Reshard(ctx, sale.ID, 4, top)
	if err != nil {
		t.Fatal(err)
	}
	newCut := tagOf(live.Shards, cut)
	marks, err := c.Do(ctx, c.B().Hget().Key(string(sharding.AppendFenceMarksKey(nil, newCut))).Field("cut-off").Build()).ToString()
	if err != nil || marks != beat {
		t.Errorf("the new shard's mark of the cut-off gateway: %q %v, want its old %s", marks, err, beat)
	}
	relayRound(t, c, newCut) // held back by the cut-off gateway's mark
	rCut.Tag = newCut
	if out, err := s.Void(ctx, rCut); err != nil || out != stock.Voided {
		t.Errorf("the queued void on the new layout: %v %v, want VOIDED", out, err)
	}
	rRelayed.Tag = tagOf(live.Shards, relayed)
	if out, err := s.Void(ctx, rRelayed); err != nil || out != stock.VoidStands {
		t.Errorf("a void of the entry a relay took before the reshard: %v %v, want STANDS", out, err)
	}
	left, err := s.Remaining(ctx, live, 1)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, n := range left {
		sum += n
	}
	if sum != 19 {
		t.Errorf("%d units left on the new layout, want 19 (20, one sold, one voided)", sum)
	}
}

// After a reshard while Kafka was down, an order a relay had taken but
// not yet produced reached PostgreSQL only by its copy on the new shard;
// its record kept the old entry's id, below every id of the new journal,
// so the first watermark the writer raised on the new shard (another
// order's copy persisted) covered it, and the page said bought (issue 55,
// defect 3). Every copied entry is now named by its new id in its
// records, and a new shard's watermarks speak only for its own journal
// (stock.PersistedSince), so an order reads persisted only once its own
// copy, and every entry before it on its item's chain, is held.
func TestReshardPersistsACopyOnlyWhenItArrives(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	// 60 units, 30 a shard: the 30 buyers fall on their home shards by
	// hash, and with 20 a shard a sale id that sent 21 of them to one
	// shard sold out under the 21st (a fresh clone's make test, 1 run in
	// about 25).
	sale := storedSale(t, s, c, 2, 60)
	// The gateways of the tests running beside this package relay every
	// sale of the index: out of it, no relay but this test's takes its
	// entries (and trims the copies it reads below).
	unindex := func() {
		t.Helper()
		if err := c.Do(ctx, c.B().Srem().Key(sharding.SalesKey).Member(strconv.FormatInt(sale.ID, 10)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	unindex()
	orders := reserveBuyers(t, s, sale, 30)
	for _, tag := range sale.Shards {
		if relayRound(t, c, tag) == "" { // taken: Kafka is down, nothing produced
			t.Fatalf("the relay took nothing from %s", tag)
		}
	}
	top, err := stock.Topology(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	live, _, err := s.Reshard(ctx, sale.ID, 3, top)
	if err != nil {
		t.Fatal(err)
	}
	unindex() // the reshard put it back
	for _, tag := range live.Shards {
		if err := c.Do(ctx, c.B().Set().Key(string(sharding.AppendRelayLeaseKey(nil, tag))).Value("this-test").Px(time.Minute).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	// The writer persists the first copy of each new journal, as the relay
	// of each new shard names it (the chain's start).
	first := map[sharding.OrderID]bool{}
	for _, tag := range live.Shards {
		es, err := c.Do(ctx, c.B().Xrange().Key(string(sharding.AppendEventsKey(nil, tag))).Start("-").End("+").Count(1).Build()).AsXRange()
		if err != nil || len(es) == 0 {
			t.Fatalf("the journal of %s: %v %v", tag, es, err)
		}
		id, _ := sharding.ParseOrderID([]byte(es[0].FieldValues["o"]))
		first[id] = true
		if _, err := s.MarkPersistedRuns(ctx, tag, []stock.Run{{Item: 1, Prev: "0-0", Last: es[0].ID}}); err != nil {
			t.Fatal(err)
		}
	}
	for u, id := range orders {
		rec, found, err := s.Order(ctx, live.Shards[sharding.HomeShard(u, live.ID, 3)], u, id)
		if err != nil || !found {
			t.Fatalf("order of %d after the reshard: %v %v", u, found, err)
		}
		if rec.Persisted != first[id] {
			t.Errorf("order of %d (entry %s): persisted %v, want %v (only each new journal's first copy is held)", u, rec.Journal, rec.Persisted, first[id])
		}
	}
}
