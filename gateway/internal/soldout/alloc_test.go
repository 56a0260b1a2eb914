//go:build !race

package soldout

import "testing"

func TestFlagReadsDoNotAllocate(t *testing.T) {
	it := NewItem(4)
	it.MarkShard(1)
	if n := testing.AllocsPerRun(1000, func() { _ = it.SoldOut() || it.ShardSoldOut(1) || it.Any() }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
