//go:build !race

package mac

import "testing"

func TestCheckAllocatesNothing(t *testing.T) {
	r, _ := NewRing([]byte("0123456789abcdef0123"), []byte("fedcba9876543210fedc"))
	msg := []byte("a message of some forty-odd bytes, like a pass")
	tag := r.Append(nil, msg)
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(1000, func() {
		if !r.Check(msg, tag) {
			t.Fatal("refused")
		}
		buf = r.Append(buf[:0], msg)
	}); n != 0 {
		t.Fatalf("%v allocs per Check+Append", n)
	}
}
