//go:build !race

package sharding

import "testing"

func TestKeyBuildersDoNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 128)
	id := NewOrderID(7, 1, 2)
	n := testing.AllocsPerRun(100, func() {
		buf = AppendStockKey(buf[:0], "s7:1:0", 12345)
		buf = AppendBuyersKey(buf[:0], "s7:1:0")
		buf = AppendOrderKey(buf[:0], "s7:1:0", id)
		_ = Slot(buf)
		_ = HomeShard(42, 7, 8)
		_, _ = ParseOrderID(buf[len(buf)-36:])
	})
	if n != 0 {
		t.Fatalf("%v allocs per run, want 0", n)
	}
}
