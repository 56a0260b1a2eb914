package stock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"flashsale/deploy/testenv"
	"flashsale/lua"
	"flashsale/sharding"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

func newSale(t *testing.T, s *stock.Store, c rueidis.Client, shards int, qty ...int64) *sale.Sale {
	t.Helper()
	ctx := context.Background()
	top, err := stock.Topology(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	id := randomSaleID()
	tags, err := sharding.PlaceTags(id, shards, top)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	sl := &sale.Sale{ID: id, Name: "t", StartsAt: now, EndsAt: now.Add(time.Hour), Shards: tags}
	for i, q := range qty {
		sl.Items = append(sl.Items, sale.Item{ID: int64(i + 1), Quantity: q})
	}
	if err := s.Preload(ctx, sl, false); err != nil {
		t.Fatal(err)
	}
	return sl
}

func total(t *testing.T, s *stock.Store, sale *sale.Sale, item int64) (sum int64, per []int64) {
	t.Helper()
	per, err := s.Remaining(context.Background(), sale, item)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range per {
		sum += r
	}
	return sum, per
}

func TestMoveConservesUnits(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	sale := newSale(t, s, c, 4, 100)
	k, err := s.Move(ctx, 1, sale.Shards[0], sale.Shards[3], 10)
	if err != nil || k != 10 {
		t.Fatalf("move: %d %v", k, err)
	}
	sum, per := total(t, s, sale, 1)
	if sum != 100 || per[0] != 15 || per[3] != 35 {
		t.Fatalf("after move: %v", per)
	}
	k, err = s.Move(ctx, 1, sale.Shards[0], sale.Shards[3], 1000) // more than the donor has
	if err != nil || k != 15 {
		t.Fatalf("big move: %d %v", k, err)
	}
	if sum, per = total(t, s, sale, 1); sum != 100 || per[0] != 0 {
		t.Fatalf("after draining move: %v", per)
	}
	if k, err = s.Move(ctx, 1, sale.Shards[0], sale.Shards[3], 1); err != nil || k != 0 {
		t.Fatalf("move from an empty shard: %d %v", k, err)
	}
	if p, _ := s.PendingMoves(ctx, sale); len(p) != 0 {
		t.Fatalf("journal not clean: %+v", p)
	}
}

// TestMoveCrashIsFinishedOnce plants a move that crashed after its first step
// and checks that recovery credits it exactly once, even when run twice.
func TestMoveCrashIsFinishedOnce(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	sale := newSale(t, s, c, 2, 50)
	from, to := sale.Shards[0], sale.Shards[1]
	out := rueidis.NewLuaScript(lua.MoveOut)
	k, err := out.Exec(ctx, c,
		[]string{string(sharding.AppendStockKey(nil, from, 1)), string(sharding.AppendJournalKey(nil, from)), string(sharding.AppendFenceKey(nil, from))},
		[]string{"crash1", "7", to, "1"}).AsInt64()
	if err != nil || k != 7 {
		t.Fatalf("move_out: %d %v", k, err)
	}
	if sum, _ := total(t, s, sale, 1); sum != 43 {
		t.Fatalf("in flight: %d units visible, want 43 (7 journaled)", sum)
	}
	p, err := s.PendingMoves(ctx, sale)
	if err != nil || len(p) != 1 || p[0].Units != 7 || p[0].To != to {
		t.Fatalf("pending: %+v %v", p, err)
	}
	for i := 0; i < 2; i++ {
		if _, err := s.RecoverMoves(ctx, sale); err != nil {
			t.Fatal(err)
		}
	}
	sum, per := total(t, s, sale, 1)
	if sum != 50 || per[1] != 32 {
		t.Fatalf("after recovery: %v", per)
	}
	// A replay of the credit step with the same id changes nothing.
	in := rueidis.NewLuaScript(lua.MoveIn)
	n, err := in.Exec(ctx, c, []string{string(sharding.AppendStockKey(nil, to, 1)), string(sharding.AppendMoveKey(nil, to, "crash1")), string(sharding.AppendFenceKey(nil, to))},
		[]string{"crash1", "7", "", "60"}).AsInt64()
	if err != nil || n != 0 {
		t.Fatalf("replayed move_in: %d %v", n, err)
	}
	if sum, _ := total(t, s, sale, 1); sum != 50 {
		t.Fatalf("replay changed the total to %d", sum)
	}
}

// TestSkewedCrowdBorrows: every user hashes to one shard of four; borrowing
// from the other shards still sells every unit.
func TestSkewedCrowdBorrows(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	sale := newSale(t, s, c, 4, 100)
	var users []uint64
	for u := uint64(1); len(users) < 400; u++ {
		if sharding.HomeShard(u, sale.ID, 4) == 0 {
			users = append(users, u)
		}
	}
	var reserved, retries, gaveUpWhileStock, borrowed atomic.Int64
	var wg sync.WaitGroup
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for try := 0; try < 4; try++ {
				r, err := s.Reserve(ctx, reservation(sale.Shards[0], 1, u, sharding.NewOrderID(sale.ID, rand.Uint64(), rand.Uint32())))
				if err != nil {
					t.Error(err)
					return
				}
				if r.Outcome == stock.Reserved {
					reserved.Add(1)
					return
				}
				rem, err := s.Remaining(ctx, sale, 1)
				if err != nil {
					t.Error(err)
					return
				}
				k, err := s.Borrow(ctx, sale, 1, 0, rem)
				if err != nil {
					t.Error(err)
					return
				}
				borrowed.Add(k)
				if k == 0 {
					if sum, _ := total(t, s, sale, 1); sum == 0 {
						return // truly sold out
					}
				}
				retries.Add(1)
			}
			if sum, _ := total(t, s, sale, 1); sum > 0 {
				gaveUpWhileStock.Add(1) // this user would have seen SOLD_OUT with units left
			}
		}()
	}
	wg.Wait()
	sum, per := total(t, s, sale, 1)
	t.Logf("reserved %d, borrowed %d units, %d retries after a borrow, SOLD_OUT while units remained: %d",
		reserved.Load(), borrowed.Load(), retries.Load(), gaveUpWhileStock.Load())
	if reserved.Load() != 100 || sum != 0 {
		t.Fatalf("reserved %d, stranded %v", reserved.Load(), per)
	}
}

// TestReshardWhilePurchasing reshards 4 -> 16 -> 4 while users buy, and checks
// that units and buyers are conserved exactly.
func TestReshardWhilePurchasing(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	// Enough stock for about 9 s of purchases: the reshards must run under
	// load, also when a loaded machine makes them slow.
	const units = 30000 + 5000
	sd := newSale(t, s, c, 4, 30000, 5000)
	top, err := stock.Topology(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var cur atomic.Pointer[sale.Sale]
	cur.Store(sd)
	var reserved, frozen atomic.Int64
	winners := sync.Map{}
	var next atomic.Uint64
	// buy is one user's purchase, again on the new layout while the shard is
	// frozen.
	buy := func(u uint64) bool {
		item := int64(1 + u%2)
		for {
			sl := cur.Load()
			tag := sl.Shards[sharding.HomeShard(u, sl.ID, len(sl.Shards))]
			id := sharding.NewOrderID(sl.ID, rand.Uint64(), rand.Uint32())
			r, err := s.Reserve(ctx, reservation(tag, item, u, id))
			if errors.Is(err, stock.ErrFrozen) {
				frozen.Add(1)
				fresh, err := s.LoadSale(ctx, sl.ID)
				if err != nil {
					t.Error(err)
					return false
				}
				cur.Store(fresh)
				time.Sleep(time.Millisecond)
				continue
			}
			if err != nil {
				t.Error(err)
				return false
			}
			if r.Outcome == stock.Reserved {
				reserved.Add(1)
				winners.Store(u, r.OrderID)
			}
			return true
		}
	}
	// 8 workers at about 500 purchases/s each keep buying through both reshards.
	shoppers := testenv.StartShoppers(t, 8, 2*time.Millisecond, func() bool { return buy(next.Add(1)) })
	for _, n := range []int{16, 4} {
		time.Sleep(150 * time.Millisecond)
		if reserved.Load() >= units {
			t.Fatal("sold out before the reshard: the test would not show a reshard under load")
		}
		got, rep, err := s.Reshard(ctx, sd.ID, n, top)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("reshard %d -> %d: %d buyers, %d orders, units %v, frozen %v", rep.From, rep.To, rep.Buyers, rep.Orders, rep.Units, rep.Frozen)
		if len(got.Shards) != n {
			t.Fatalf("sale has %d shards", len(got.Shards))
		}
	}
	time.Sleep(100 * time.Millisecond)
	shoppers.Stop()
	final, err := s.LoadSale(ctx, sd.ID)
	if err != nil || len(final.Shards) != 4 || final.Version != sd.Version+2 {
		t.Fatalf("final sale %+v %v", final, err)
	}
	var left int64
	for _, it := range final.Items {
		sum, _ := total(t, s, final, it.ID)
		left += sum
	}
	buyers := 0
	for i, tag := range final.Shards {
		m, err := c.Do(ctx, c.B().Hgetall().Key(string(sharding.AppendBuyersKey(nil, tag))).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		for user, oid := range m {
			oid, _, _ = strings.Cut(oid, "|") // the order the buyer record names
			u, _ := strconv.ParseUint(user, 10, 64)
			if sharding.HomeShard(u, final.ID, 4) != i {
				t.Fatalf("user %d on shard %d, home is %d", u, i, sharding.HomeShard(u, final.ID, 4))
			}
			want, ok := winners.Load(u)
			if !ok || want.(sharding.OrderID).String() != oid {
				t.Fatalf("buyer %d holds %s, reserved %v", u, oid, want)
			}
			id, _ := sharding.ParseOrderID([]byte(oid))
			if _, found, err := s.Order(ctx, tag, u, id); err != nil || !found {
				t.Fatalf("order record of %s did not follow its owner: %v", oid, err)
			}
			buyers++
		}
	}
	t.Logf("reserved %d, refused by the fence %d times", reserved.Load(), frozen.Load())
	if int64(buyers) != reserved.Load() || left+reserved.Load() != units {
		t.Fatalf("units left %d + reserved %d != %d, buyers %d", left, reserved.Load(), units, buyers)
	}
	for _, tag := range sd.Shards {
		if n, _ := c.Do(ctx, c.B().Exists().Key(string(sharding.AppendStockKey(nil, tag, 1))).Build()).AsInt64(); n != 0 {
			t.Fatalf("old shard %s still has stock", tag)
		}
	}
}

// A shard that does not answer reads Unknown in ReadStock, and the shards
// that do still count: the sold-out poll sees units returned to them while
// a failover is under way. Available, which the borrow path decides a
// SOLD_OUT on, fails instead. Here the reader is a user that may not read
// the first shard's keys, so that shard's reads are refused.
func TestReadStockWithAShardUnreachable(t *testing.T) {
	s, c := newStore(t)
	sale := newSale(t, s, c, 3, 9) // 3 units a shard
	ctx := context.Background()
	var rules []string
	for _, tag := range sale.Shards[1:] {
		rules = append(rules, "~{"+tag+"}*")
	}
	reader := stock.New(testenv.NewRedisUser(t, append(rules, "+@all")...).Client())
	got, err := reader.ReadStock(ctx, sale, 1)
	if err != nil || len(got) != 3 || got[0] != stock.Unknown || got[1] != 3 || got[2] != 3 {
		t.Fatalf("ReadStock with shard 0 refused: %v, %v; want [%d 3 3]", got, err, stock.Unknown)
	}
	if got, err := reader.Available(ctx, sale, 1); err == nil {
		t.Fatalf("Available with shard 0 refused: %v, want an error", got)
	}
	if got, err := s.ReadStock(ctx, sale, 1); err != nil || got[0] != 3 {
		t.Fatalf("ReadStock with every shard: %v, %v", got, err)
	}
	none := stock.New(testenv.NewRedisUser(t, "~nothing:*", "+@all").Client())
	if got, err := none.ReadStock(ctx, sale, 1); err == nil {
		t.Fatalf("ReadStock with no shard answering: %v, want an error", got)
	}
}
