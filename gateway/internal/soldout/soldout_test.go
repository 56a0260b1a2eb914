package soldout

import (
	"sync"
	"testing"
)

func TestMarkAndObserve(t *testing.T) {
	it := NewItem(3)
	if it.MarkShard(0) || it.SoldOut() || !it.ShardSoldOut(0) || !it.Any() {
		t.Fatal("one shard flagged should not sell out the item")
	}
	it.MarkShard(0) // repeated: counted once
	if it.flagged.Load() != 1 {
		t.Fatalf("flagged %d after a repeated reply", it.flagged.Load())
	}
	it.MarkShard(1)
	if it.MarkShard(2) || it.SoldOut() {
		t.Fatal("replies alone must not sell out a sharded item (units move between shards)")
	}
	// Stock comes back on shard 1.
	if n := it.Observe([]int64{0, 3, 0}); n != 1 {
		t.Fatalf("cleared %d", n)
	}
	if it.SoldOut() || it.ShardSoldOut(1) || !it.ShardSoldOut(0) || it.Remaining() != 3 {
		t.Fatal("observe did not clear shard 1")
	}
	// A reading of zero flags a shard.
	it.Observe([]int64{0, 0, 0})
	if !it.SoldOut() || it.Remaining() != 0 {
		t.Fatal("all zero: sold out")
	}
	if it.Observe([]int64{1}) != 0 {
		t.Fatal("a reading of the wrong length must be ignored")
	}
}

// A shard that did not answer (-1, stock.Unknown) keeps its flag; the other
// shards' readings still count, and the item flag is set only by a zero on
// every shard, cleared by stock on any.
func TestObserveWithAShardUnknown(t *testing.T) {
	it := NewItem(3)
	it.Observe([]int64{0, 0, 0})
	if !it.SoldOut() {
		t.Fatal("all zero: sold out")
	}
	it.Observe([]int64{-1, 0, 0})
	if !it.SoldOut() || !it.ShardSoldOut(0) {
		t.Fatal("nothing seen on the shards that answered: still sold out")
	}
	// Units returned to shard 2 while shard 0 is away.
	if n := it.Observe([]int64{-1, 0, 4}); n != 1 || it.SoldOut() || it.ShardSoldOut(2) || !it.ShardSoldOut(0) || it.Remaining() != 4 {
		t.Fatalf("cleared %d, sold out %v, flags %v %v, remaining %d", n, it.SoldOut(), it.ShardSoldOut(0), it.ShardSoldOut(2), it.Remaining())
	}
	// Shard 2 sells out again, shard 0 still away: not confirmed sold out.
	it.Observe([]int64{-1, 0, 0})
	if it.SoldOut() || !it.ShardSoldOut(2) {
		t.Fatal("a zero on the shards that answered must not sell out the item while one is unread")
	}
	fresh := NewItem(2)
	fresh.Observe([]int64{-1, 5})
	if fresh.ShardSoldOut(0) || fresh.SoldOut() || fresh.flagged.Load() != 0 {
		t.Fatal("an unread shard must not be flagged")
	}
}

func TestConcurrentFlags(t *testing.T) {
	it := NewItem(8)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				it.MarkShard(g)
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
	it.Observe(make([]int64, 8))
	if !it.SoldOut() {
		t.Fatal("a reading of zero everywhere did not set the item flag")
	}
	it.Observe([]int64{1, 1, 1, 1, 1, 1, 1, 1})
	if it.Any() || it.flagged.Load() != 0 {
		t.Fatal("not all cleared")
	}
}

func TestRefilledClearsTheShardFlag(t *testing.T) {
	it := NewItem(4)
	it.Observe([]int64{0, 0, 3, 0})
	if !it.ShardSoldOut(0) || it.ShardSoldOut(2) || it.flagged.Load() != 3 {
		t.Fatal("reading not applied")
	}
	it.Refilled(1, 0) // nothing arrived: still flagged
	it.Refilled(0, 2)
	if it.ShardSoldOut(0) || !it.ShardSoldOut(1) || it.flagged.Load() != 2 {
		t.Fatalf("after refill: flagged %d", it.flagged.Load())
	}
	one := NewItem(1)
	if !one.MarkShard(0) {
		t.Fatal("a SOLD_OUT reply of the only shard must set the item flag")
	}
}
