package reconcile_test

import (
	"bytes"
	"context"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/ops/reconcile"
	"flashsale/sharding/stock"
)

func kinds(c *reconcile.Check) string {
	var k []string
	for _, f := range c.Findings {
		k = append(k, f.Kind)
	}
	sort.Strings(k)
	return strings.Join(k, ",")
}

// TestReconcileFindsAndRepairs plants one of each kind of damage and checks
// that reconcile reports it, changes nothing without --repair, and repairs it
// with --repair so that Q = S + P afterwards. Orphans are released only once
// the writers' group was read with no lag: the repair once released them on
// sight, and with a writer stopped or behind for longer than the grace that
// is every order the relay produced and the writer had not persisted, whose
// units would then sell twice.
func TestReconcileFindsAndRepairs(t *testing.T) {
	e := opstest.NewEnv(t)
	ctx := context.Background()
	sale := e.NewSale(t, 4, 100)
	item := sale.Items[0].ID
	sh := opstest.NewShopper(e.T.Store, sale)
	us := opstest.Users(10)
	ids := map[uint64]sharding.OrderID{}
	for _, u := range us {
		r, err := sh.Buy(ctx, item, u)
		if err != nil || r.Outcome != stock.Reserved {
			t.Fatalf("buy: %+v %v", r, err)
		}
		ids[u] = r.OrderID
	}
	homes := make([]int, len(us))
	for i, u := range us {
		homes[i] = sharding.HomeShard(u, sale.ID, 4)
	}
	t.Logf("home shards of the 10 users: %v", homes)
	now := time.Now()
	// us[0..6] reached the writer; us[7], us[8] never did (orphans); us[9]
	// reached it and then expired, but its release never ran.
	for _, u := range us[:7] {
		e.InsertOrder(t, sale.ID, item, u, ids[u], stock.StatusPending, now)
	}
	e.InsertOrder(t, sale.ID, item, us[9], ids[us[9]], stock.StatusExpired, now)
	e.SyncSold(t, sale.ID)
	// A failover lost us[0]'s reservation: buyer record gone, unit back.
	lost := sale.Shards[sharding.HomeShard(us[0], sale.ID, 4)]
	opstest.Must(t, e.C.Do(ctx, e.C.B().Hdel().Key(string(sharding.AppendBuyersKey(nil, lost))).Field(strconv.FormatUint(us[0], 10)).Build()).Error())
	opstest.Must(t, e.C.Do(ctx, e.C.B().Incr().Key(string(sharding.AppendStockKey(nil, lost, item))).Build()).Error())
	// And 3 units vanished from another shard.
	opstest.Must(t, e.C.Do(ctx, e.C.B().Decrby().Key(string(sharding.AppendStockKey(nil, sale.Shards[(sharding.HomeShard(us[0], sale.ID, 4)+1)%4], item))).Decrement(3).Build()).Error())

	// Within the grace period the two unpersisted reservations are hand-offs.
	rep, err := reconcile.Reconcile(ctx, e.T, sale.ID, reconcile.ReconcileOptions{Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(rep.Before); got != "ended-order-still-held,lost-buyer,unit-drift" || rep.Before.Items[0].HandOff != 2 {
		t.Fatalf("with a long grace: findings %s, items %+v", got, rep.Before.Items)
	}
	// Past it, reservations still in the hand-off journal are in flight too
	// (Kafka may be away for longer than any grace).
	rep, err = reconcile.Reconcile(ctx, e.T, sale.ID, reconcile.ReconcileOptions{Grace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(rep.Before); got != "ended-order-still-held,lost-buyer,unit-drift" || rep.Before.Items[0].HandOff != 2 {
		t.Fatalf("journaled, past the grace: findings %s, items %+v", got, rep.Before.Items)
	}
	// Their journal entries are lost (a relay took them and Kafka lost the
	// records, say): past the grace they are orphans.
	for _, u := range us[7:9] {
		tag := sale.Shards[sharding.HomeShard(u, sale.ID, 4)]
		rec, _, err := e.T.Store.Order(ctx, tag, u, ids[u])
		opstest.Must(t, err)
		opstest.Must(t, e.C.Do(ctx, e.C.B().Xdel().Key(string(sharding.AppendEventsKey(nil, tag))).Id(rec.Journal).Build()).Error())
	}
	// Q 100 = S 89 + P 6 + H 0 + drift 5:
	// 2 orphans + 1 ended + 3 lost - 1 restored.
	var out bytes.Buffer
	rep, err = reconcile.Reconcile(ctx, e.T, sale.ID, reconcile.ReconcileOptions{Grace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Text(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	if rep.Clean || kinds(rep.Before) != "ended-order-still-held,lost-buyer,orphan-reservation,orphan-reservation,unit-drift" {
		t.Fatalf("findings %s", kinds(rep.Before))
	}
	if d := rep.Before.Items[0].Drift; d != 5 {
		t.Fatalf("drift %d, want 5", d)
	}
	again, err := reconcile.Reconcile(ctx, e.T, sale.ID, reconcile.ReconcileOptions{Grace: time.Millisecond})
	if err != nil || kinds(again.Before) != kinds(rep.Before) || again.Before.Items[0].S != rep.Before.Items[0].S {
		t.Fatalf("a report-only reconcile changed something: %v %s", err, kinds(again.Before))
	}

	// The orphans' events may be in Kafka, unpersisted: while the writers'
	// consumer group has lag, or its lag is not known, a repair releases
	// neither (it repairs the rest), and says why.
	behind, _, _ := opstest.WriterLag(t, 3)
	for _, tc := range []struct {
		name string
		lag  func(context.Context) (int64, error)
		why  string
	}{{"no lag reader", nil, "lag is unknown"}, {"a writer behind", behind, "have 3 records in Kafka"}} {
		rep, err = reconcile.Reconcile(ctx, e.T, sale.ID, reconcile.ReconcileOptions{Grace: time.Millisecond, Repair: true, WriterLag: tc.lag})
		if err != nil {
			t.Fatal(err)
		}
		// The ended order and the lost buyer are repaired; the drift left,
		// 4 (2 orphans + 3 lost - 1 restored), is not repaired either: the
		// orphans' units count in it.
		held := make([]string, len(rep.Held))
		for i, f := range rep.Held {
			held[i] = f.Kind
		}
		if rep.Clean || kinds(rep.After) != "orphan-reservation,orphan-reservation,unit-drift" || rep.After.Items[0].Drift != 4 ||
			strings.Join(held, ",") != "orphan-reservation,orphan-reservation,unit-drift" || !strings.Contains(rep.Held[0].Repair, tc.why) {
			t.Fatalf("%s: after the repair %s (drift %d), held %v (%q); want the 2 orphans and their drift held (%q)",
				tc.name, kinds(rep.After), rep.After.Items[0].Drift, held, rep.Held[0].Repair, tc.why)
		}
		for _, u := range us[7:9] {
			if buyers := e.AllBuyers(t, sale); buyers[u] != ids[u] {
				t.Fatalf("%s: the orphan of user %d was released", tc.name, u)
			}
		}
	}
	out.Reset()
	caughtUp, _, _ := opstest.WriterLag(t, 0)
	rep, err = reconcile.Reconcile(ctx, e.T, sale.ID, reconcile.ReconcileOptions{Grace: time.Millisecond, Repair: true, WriterLag: caughtUp})
	if err != nil {
		t.Fatal(err)
	}
	_ = rep.Text(&out)
	t.Logf("\n%s", out.String())
	if !rep.Clean {
		t.Fatalf("not clean after repair: %s", kinds(rep.After))
	}
	e.AssertSettled(t, sale.ID)
	buyers := e.AllBuyers(t, sale)
	if len(buyers) != 7 || buyers[us[0]] != ids[us[0]] {
		t.Fatalf("buyers after repair: %d, restored %v", len(buyers), buyers[us[0]])
	}
	if r, err := sh.Buy(ctx, item, us[0]); err != nil || r.Outcome != stock.AlreadyPurchased {
		t.Fatalf("the restored buyer bought again: %+v %v", r, err)
	}
}
