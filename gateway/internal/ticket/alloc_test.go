//go:build !race

package ticket

import (
	"testing"
	"time"
)

func TestVerifyAllocatesNothing(t *testing.T) {
	k, _ := New(keyB, keyA, 0)
	now := time.Now()
	tok, _ := k.Append(nil, 42, 7, now)
	forged := append([]byte(nil), tok...)
	forged[10] ^= 1
	start := now.Add(-time.Minute).UnixNano()
	for name, b := range map[string][]byte{"valid": tok, "forged": forged, "short": tok[:5]} {
		if n := testing.AllocsPerRun(1000, func() { _ = k.Verify(b, 42, 7, start, now) }); n != 0 {
			t.Errorf("%s: %v allocs per Verify", name, n)
		}
	}
	buf := make([]byte, 0, 128)
	if n := testing.AllocsPerRun(1000, func() { buf, _ = k.Append(buf[:0], 42, 7, now) }); n != 0 {
		t.Errorf("%v allocs per Append into a large enough buffer", n)
	}
}
