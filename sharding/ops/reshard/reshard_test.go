package reshard_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/ops/reshard"
	"flashsale/sharding/stock"
)

// TestReshardThroughOps reshards 4 -> 16 -> 4 with the tool while users buy,
// and checks that units and buyers are conserved exactly.
func TestReshardThroughOps(t *testing.T) {
	e := opstest.NewEnv(t)
	ctx := context.Background()
	// More units than buyers, and buyers enough to last both reshards:
	// each keeps the old shards for stock.LayoutGrace (2 s), and on a free
	// machine the 8 shoppers bought 3,500 units in less than one (the test
	// once sold out before its second reshard, and passed only on a busy
	// machine).
	const units = 30_000 + 5_000
	sale := e.NewSale(t, 4, 30_000, 5_000)
	sh := opstest.NewShopper(e.T.Store, sale)
	var reserved atomic.Int64
	winners := sync.Map{}
	us := opstest.Users(30_000)
	var next atomic.Int64
	shoppers := testenv.StartShoppers(t, 8, 2*time.Millisecond, func() bool {
		i := next.Add(1)
		if int(i) >= len(us) {
			return false
		}
		u := us[i]
		r, err := sh.Buy(ctx, sale.Items[i%2].ID, u)
		if err != nil {
			t.Error(err)
			return false
		}
		if r.Outcome == stock.Reserved {
			reserved.Add(1)
			winners.Store(u, r.OrderID)
		}
		return true
	})
	for _, n := range []int{16, 4} {
		time.Sleep(200 * time.Millisecond)
		if int(next.Load()) >= len(us) {
			t.Fatal("every buyer had bought before the reshard: the test would not show a reshard under load")
		}
		rep, err := reshard.Reshard(ctx, e.T, sale.ID, n)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("reshard %d -> %d: %d buyers, %d orders, units %v, frozen %.1f ms", rep.From, rep.To, rep.Buyers, rep.Orders, rep.Units, rep.FrozenMillis)
		if rep.To != n {
			t.Fatalf("sale has %d shards", rep.To)
		}
	}
	time.Sleep(150 * time.Millisecond)
	shoppers.Stop()
	final, err := e.T.Store.LoadSale(ctx, sale.ID)
	if err != nil || len(final.Shards) != 4 || final.Version != sale.Version+2 {
		t.Fatalf("final sale %+v %v", final, err)
	}
	var left int64
	for _, it := range final.Items {
		left += e.Left(t, final, it.ID)
	}
	buyers := e.AllBuyers(t, final)
	for u, id := range buyers {
		want, ok := winners.Load(u)
		if !ok || want.(sharding.OrderID) != id {
			t.Fatalf("buyer %d holds %v, reserved %v", u, id, want)
		}
		tag := final.Shards[sharding.HomeShard(u, final.ID, 4)]
		if _, found, err := e.T.Store.Order(ctx, tag, u, id); err != nil || !found {
			t.Fatalf("order record %v did not follow its owner: %v", id, err)
		}
	}
	t.Logf("reserved %d, refused by the fence %d times, %d units left", reserved.Load(), sh.Frozen.Load(), left)
	if int64(len(buyers)) != reserved.Load() || left+reserved.Load() != units {
		t.Fatalf("units left %d + reserved %d != %d, buyers %d", left, reserved.Load(), units, len(buyers))
	}
	if reserved.Load() == 0 {
		t.Fatal("nobody bought: the reshards ran without load")
	}
}
