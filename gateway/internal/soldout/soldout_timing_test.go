package soldout

import "testing"

func BenchmarkSoldOut(b *testing.B) {
	it := NewItem(4)
	b.ReportAllocs()
	for b.Loop() {
		_ = it.SoldOut() || it.ShardSoldOut(2)
	}
}
