package soldout

import (
	"sync"
	"testing"
)

type recorder struct {
	mu    sync.Mutex
	calls []int
}

func (r *recorder) ShardEmpty(_, _ int64, shard int) {
	r.mu.Lock()
	r.calls = append(r.calls, shard)
	r.mu.Unlock()
}

func TestMarkAndObserve(t *testing.T) {
	it := NewItem(1, 2, 3)
	r := &recorder{}
	if it.MarkShard(0, r) || it.SoldOut() || !it.ShardSoldOut(0) || !it.Any() {
		t.Fatal("one shard flagged should not sell out the item")
	}
	it.MarkShard(0, r) // repeated: no second call
	if len(r.calls) != 1 || r.calls[0] != 0 {
		t.Fatalf("rebalancer calls %v", r.calls)
	}
	it.MarkShard(1, r)
	if it.MarkShard(2, r) || it.SoldOut() {
		t.Fatal("replies alone must not sell out a sharded item (units move between shards)")
	}
	if len(r.calls) != 3 {
		t.Fatalf("rebalancer calls %v", r.calls)
	}
	// Stock comes back on shard 1.
	if n := it.Observe([]int64{0, 3, 0}, r); n != 1 {
		t.Fatalf("cleared %d", n)
	}
	if it.SoldOut() || it.ShardSoldOut(1) || !it.ShardSoldOut(0) || it.Remaining() != 3 {
		t.Fatal("observe did not clear shard 1")
	}
	// A reading of zero flags a shard.
	it.Observe([]int64{0, 0, 0}, r)
	if !it.SoldOut() || it.Remaining() != 0 {
		t.Fatal("all zero: sold out")
	}
	if it.Observe([]int64{1}, r) != 0 {
		t.Fatal("a reading of the wrong length must be ignored")
	}
}

func TestConcurrentFlags(t *testing.T) {
	it := NewItem(1, 2, 8)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				it.MarkShard(g, NopRebalancer{})
				_ = it.SoldOut()
			}
		}()
	}
	wg.Wait()
	// Replies alone never declare a sharded item sold out (units may have
	// moved); a full reading does.
	if it.SoldOut() || it.flagged.Load() != 8 {
		t.Fatalf("flagged %d, sold out %v", it.flagged.Load(), it.SoldOut())
	}
	it.Observe(make([]int64, 8), nil)
	if !it.SoldOut() {
		t.Fatal("a reading of zero everywhere did not set the item flag")
	}
	it.Observe([]int64{1, 1, 1, 1, 1, 1, 1, 1}, nil)
	if it.Any() || it.flagged.Load() != 0 {
		t.Fatal("not all cleared")
	}
}

func TestRefilledClearsTheShardFlag(t *testing.T) {
	it := NewItem(1, 2, 4)
	it.Observe([]int64{0, 0, 3, 0}, nil)
	if !it.ShardSoldOut(0) || !it.ElsewhereThan(0) || it.ElsewhereThan(2) {
		t.Fatal("reading not applied")
	}
	it.Refilled(0, 2)
	if it.ShardSoldOut(0) || it.Stock(nil)[0] != 2 || it.flagged.Load() != 2 {
		t.Fatalf("after refill: flagged %d stock %v", it.flagged.Load(), it.Stock(nil))
	}
	one := NewItem(1, 3, 1)
	if !one.MarkShard(0, nil) {
		t.Fatal("a SOLD_OUT reply of the only shard must set the item flag")
	}
}
