//go:build !race

package orderevent

import "testing"

func TestAppendJSONDoesNotAllocate(t *testing.T) {
	e := sample()
	buf := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() {
		buf = AppendJSON(buf[:0], &e)
		buf = AppendKey(buf[:0], &e)
	}); n != 0 {
		t.Fatalf("%v allocs, want 0", n)
	}
}
