package preload_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"flashsale/sharding"
	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/stock"

	"flashsale/sharding/ops/status"
)

// TestRaceShards is the seed's race test through the tool's preload at S = 1,
// 4, 8 and 16: 1,000 users at once for 100 units give exactly 100
// reservations, spread over every shard, one per user; then a sale of two
// items that every user tries both of.
func TestRaceShards(t *testing.T) {
	e := opstest.NewEnv(t)
	ctx := context.Background()
	for _, s := range []int{1, 4, 8, 16} {
		t.Run(fmt.Sprintf("S=%d", s), func(t *testing.T) {
			sale := e.NewSale(t, s, 100)
			item := sale.Items[0].ID
			sh := opstest.NewShopper(e.T.Store, sale)
			sh.Tries = 50 // a user in the race retries until the item is truly gone
			us := opstest.Users(1000)
			var reserved, soldOut, other atomic.Int64
			held := sync.Map{}
			start := make(chan struct{})
			var wg sync.WaitGroup
			for _, u := range us {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					r, err := sh.Buy(ctx, item, u)
					if err != nil {
						t.Error(err)
						return
					}
					switch r.Outcome {
					case stock.Reserved:
						reserved.Add(1)
						if _, dup := held.LoadOrStore(u, r.OrderID); dup {
							t.Errorf("user %d reserved twice", u)
						}
					case stock.SoldOut:
						soldOut.Add(1)
					default:
						other.Add(1)
					}
				}()
			}
			close(start)
			wg.Wait()
			buyers := e.AllBuyers(t, sale)
			perShard := make([]int, s)
			for u, id := range buyers {
				perShard[sharding.HomeShard(u, sale.ID, s)]++
				if want, ok := held.Load(u); !ok || want.(sharding.OrderID) != id {
					t.Fatalf("buyer %d holds %v, reserved %v", u, id, want)
				}
			}
			t.Logf("S=%d: reserved %d, sold out %d, buyers per shard %v, %d borrows moved %d units",
				s, reserved.Load(), soldOut.Load(), perShard, sh.Borrows.Load(), sh.Borrowed.Load())
			if reserved.Load() != 100 || soldOut.Load() != 900 || other.Load() != 0 || len(buyers) != 100 {
				t.Fatalf("reserved %d, sold out %d, other %d, buyers %d; want 100, 900, 0, 100",
					reserved.Load(), soldOut.Load(), other.Load(), len(buyers))
			}
			if left := e.Left(t, sale, item); left != 0 {
				t.Fatalf("%d units left after 1,000 users", left)
			}
			for i, n := range perShard {
				if n == 0 {
					t.Fatalf("shard %d holds no buyer: %v", i, perShard)
				}
			}
		})
	}
	t.Run("two items S=8", func(t *testing.T) {
		sale := e.NewSale(t, 8, 60, 40)
		sh := opstest.NewShopper(e.T.Store, sale)
		sh.Tries = 50
		us := opstest.Users(1000)
		var reserved, already atomic.Int64
		perItem := make([]atomic.Int64, 2)
		held := sync.Map{}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, u := range us {
			for i, it := range sale.Items {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					r, err := sh.Buy(ctx, it.ID, u)
					if err != nil {
						t.Error(err)
						return
					}
					switch r.Outcome {
					case stock.Reserved:
						reserved.Add(1)
						perItem[i].Add(1)
						if prev, dup := held.LoadOrStore(u, r.OrderID); dup && prev.(sharding.OrderID) != r.OrderID {
							t.Errorf("user %d holds two orders %v and %v", u, prev, r.OrderID)
						}
					case stock.AlreadyPurchased:
						already.Add(1)
					}
				}()
			}
		}
		close(start)
		wg.Wait()
		buyers := e.AllBuyers(t, sale)
		t.Logf("two items: reserved %d (first item: %d, second: %d), already purchased %d, buyers %d",
			reserved.Load(), perItem[0].Load(), perItem[1].Load(), already.Load(), len(buyers))
		q0, q1 := sale.Items[0].Quantity, sale.Items[1].Quantity
		if reserved.Load() != 100 || len(buyers) != 100 || perItem[0].Load() != q0 || perItem[1].Load() != q1 {
			t.Fatalf("reserved %d (%d + %d), buyers %d; want 100 (%d + %d) and 100",
				reserved.Load(), perItem[0].Load(), perItem[1].Load(), len(buyers), q0, q1)
		}
		for _, it := range sale.Items {
			if left := e.Left(t, sale, it.ID); left != 0 {
				t.Fatalf("item %d: %d units left", it.ID, left)
			}
		}
	})
}

// TestSkewedCrowd: 90% of 1,000 users hash to 2 of 8 shards, for 400 units.
// Borrowing still sells every unit. A user answers SOLD_OUT after 8 reservation
// attempts on an empty home shard (each followed by a borrow); the test counts
// the SOLD_OUT answers given while units remained on other shards and asserts
// at most 1% of users (10) saw one.
func TestSkewedCrowd(t *testing.T) {
	e := opstest.NewEnv(t)
	for _, tries := range []int{8, 2} {
		t.Run(fmt.Sprintf("tries=%d", tries), func(t *testing.T) { skewedCrowd(t, e, tries) })
	}
}

func skewedCrowd(t *testing.T, e *opstest.Env, tries int) {
	ctx := context.Background()
	sale := e.NewSale(t, 8, 400)
	item := sale.Items[0].ID
	var us []uint64
	hot, cold := 0, 0
	for _, u := range opstest.Users(20000) {
		h := sharding.HomeShard(u, sale.ID, 8)
		switch {
		case h < 2 && hot < 900:
			hot++
			us = append(us, u)
		case h >= 2 && cold < 100:
			cold++
			us = append(us, u)
		}
	}
	sh := opstest.NewShopper(e.T.Store, sale)
	sh.Tries = tries
	var reserved, soldOut atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, u := range us {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := sh.Buy(ctx, item, u)
			if err != nil {
				t.Error(err)
				return
			}
			if r.Outcome == stock.Reserved {
				reserved.Add(1)
			} else {
				soldOut.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	rem, err := e.T.Store.Remaining(ctx, sale, item)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("skewed crowd (900 users on 2 of 8 shards, 100 on the rest, 400 units, %d attempts a user): reserved %d, SOLD_OUT %d, "+
		"SOLD_OUT while units remained %d, %d borrow calls moved %d units, stranded %v",
		tries, reserved.Load(), soldOut.Load(), sh.SoldOutWithStock.Load(), sh.Borrows.Load(), sh.Borrowed.Load(), rem)
	if got := reserved.Load() + tool.Sum(rem); got != 400 {
		t.Fatalf("reserved %d + left %v != 400 units", reserved.Load(), rem)
	}
	if tries < 8 {
		// Fewer attempts than the race needs: how many users were told
		// SOLD_OUT while units remained is logged, not asserted; the units a
		// user gave up on are sold to the next click.
		return
	}
	if reserved.Load() != 400 || tool.Sum(rem) != 0 {
		t.Fatalf("reserved %d of 400, stranded units %v", reserved.Load(), rem)
	}
	if n := sh.SoldOutWithStock.Load(); n > 10 {
		t.Fatalf("%d users told SOLD_OUT while units remained; bound 10 (1%%)", n)
	}
	rep, err := status.Status(ctx, e.T, sale.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Items[0].SoldOut || rep.Items[0].S != 0 {
		t.Fatalf("status: %+v", rep.Items[0])
	}
}
