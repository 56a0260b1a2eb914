//go:build !race

package pow

import (
	"testing"
	"time"
)

func TestVerifyAllocatesNothing(t *testing.T) {
	is := issuer(t, "pow-secret-0123456789", "pow-secret-old-0123456789")
	now := time.Unix(1_800_000_000, 0)
	_, proof := Solve(is.AppendChallenge(nil, now, 7, 42, 8), 8)
	forged := append([]byte(nil), proof...)
	forged[40] ^= 2
	buf := make([]byte, 0, 64)
	for name, p := range map[string][]byte{"good": proof, "forged": forged} {
		if n := testing.AllocsPerRun(1000, func() { is.Verify(now, p, 7, 42) }); n != 0 {
			t.Errorf("Verify of a %s proof: %v allocs", name, n)
		}
	}
	if n := testing.AllocsPerRun(1000, func() { buf = is.AppendChallenge(buf[:0], now, 7, 42, 8) }); n != 0 {
		t.Errorf("AppendChallenge: %v allocs", n)
	}
	var l Level
	l.Operator = 8
	if n := testing.AllocsPerRun(1000, func() { l.Arrive(now); l.For(now, 0) }); n != 0 {
		t.Errorf("Level: %v allocs", n)
	}
}
