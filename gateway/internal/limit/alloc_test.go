//go:build !race

package limit

import (
	"net/netip"
	"testing"
	"time"
)

func TestAllowAllocs(t *testing.T) {
	l := New(Config{Rate: 1, Burst: 1})
	l.Allow(t0, 1)
	now := t0
	allowed := testing.AllocsPerRun(1000, func() {
		now = now.Add(2 * time.Second)
		if ok, _ := l.Allow(now, 1); !ok {
			t.Fatal("refused")
		}
	})
	refused := testing.AllocsPerRun(1000, func() {
		if ok, _ := l.Allow(now, 1); ok {
			t.Fatal("allowed")
		}
	})
	if allowed != 0 || refused != 0 {
		t.Fatalf("allocs per Allow: %v allowed, %v refused; want 0", allowed, refused)
	}
}

func TestClientIPAllocs(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, xff := range []string{"", "203.0.113.7", "1.1.1.1, 203.0.113.7, 10.0.0.2", "2001:db8::1", "[2001:db8::1]:443", "203.0.113.7:80", "garbage", "fe80::1%eth0", "1.2.3.4.5"} {
		b := []byte(xff)
		for _, peer := range []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("203.0.113.9")} {
			if n := testing.AllocsPerRun(1000, func() { _ = ClientIP(peer, b, trusted) }); n != 0 {
				t.Errorf("ClientIP(%v, %q): %v allocs; want 0", peer, xff, n)
			}
		}
	}
}

func TestClientIPLinesAllocs(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	peer := netip.MustParseAddr("10.0.0.1")
	for _, lines := range [][]string{nil, {""}, {"198.51.100.77", "203.0.113.7"}, {"1.1.1.1, 10.0.0.9", "203.0.113.7, 10.0.0.2", "10.0.0.3"}, {"garbage", "[2001:db8::1]:443"}, {"10.0.0.3", "10.0.0.2"}} {
		b := make([][]byte, len(lines))
		for i, l := range lines {
			b[i] = []byte(l)
		}
		if n := testing.AllocsPerRun(1000, func() { _ = ClientIPLines(peer, b, trusted) }); n != 0 {
			t.Errorf("ClientIPLines(%q): %v allocs; want 0", lines, n)
		}
	}
}

func TestClientIPForwardedAllocs(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	peer := netip.MustParseAddr("10.0.0.1")
	for _, lines := range [][]string{nil, {""}, {"for=198.51.100.77", "for=203.0.113.7;proto=https"},
		{`for=192.0.2.43, for="[2001:db8:cafe::17]:4711"`}, {`for="203.0.113.\7:_p"`}, {`x="a\", b";For=203.0.113.7, for=10.0.0.2`}, {"for=unknown"}} {
		b := make([][]byte, len(lines))
		for i, l := range lines {
			b[i] = []byte(l)
		}
		if n := testing.AllocsPerRun(1000, func() { _ = ClientIPForwarded(peer, b, trusted) }); n != 0 {
			t.Errorf("ClientIPForwarded(%q): %v allocs; want 0", lines, n)
		}
	}
}

func TestIPKeyAllocs(t *testing.T) {
	for _, s := range []string{"192.0.2.1", "::ffff:192.0.2.1", "2001:db8::1", "fe80::1%eth0"} {
		a := netip.MustParseAddr(s)
		if n := testing.AllocsPerRun(1000, func() { _ = IPKey(a) }); n != 0 {
			t.Errorf("IPKey(%s): %v allocs; want 0", s, n)
		}
	}
}
