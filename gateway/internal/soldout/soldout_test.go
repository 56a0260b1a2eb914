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
	if !it.MarkShard(2, r) || !it.SoldOut() {
		t.Fatal("all shards flagged: item sold out")
	}
	if len(r.calls) != 2 {
		t.Fatalf("rebalancer called for the last shard: %v", r.calls)
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
	if !it.SoldOut() || it.flagged.Load() != 8 {
		t.Fatalf("flagged %d", it.flagged.Load())
	}
	it.Observe([]int64{1, 1, 1, 1, 1, 1, 1, 1}, nil)
	if it.Any() || it.flagged.Load() != 0 {
		t.Fatal("not all cleared")
	}
}
