package limit

import (
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

func BenchmarkAllowHit(b *testing.B) {
	l := New(Config{Rate: 1e9, Burst: 1 << 30})
	for k := range uint64(1024) {
		l.Allow(t0, k)
	}
	now := t0
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		l.Allow(now, i&1023)
		i++
	}
}

func BenchmarkAllowRefused(b *testing.B) {
	l := New(Config{Rate: 1, Burst: 1})
	l.Allow(t0, 1)
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := l.Allow(t0, 1); ok {
			b.Fatal("allowed")
		}
	}
}

func BenchmarkAllowParallel(b *testing.B) {
	l := New(Config{Rate: 1e9, Burst: 1 << 30})
	for k := range uint64(1 << 16) {
		l.Allow(t0, k)
	}
	var seed atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := seed.Add(1) << 32
		for pb.Next() {
			l.Allow(t0, (i*0x9e3779b97f4a7c15)>>48)
			i++
		}
	})
}

// BenchmarkAllowNewKeys measures inserts into a full limiter (eviction).
func BenchmarkAllowNewKeys(b *testing.B) {
	l := New(Config{Rate: 1, Burst: 5, MaxKeys: 1 << 16})
	now := t0
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		l.Allow(now, i)
		i++
		now = now.Add(time.Microsecond)
	}
}

func BenchmarkClientIP(b *testing.B) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::/48")}
	peer := netip.MustParseAddr("10.0.0.1")
	for _, c := range []struct{ name, xff string }{
		{"none", ""},
		{"ipv4-chain", "1.1.1.1, 203.0.113.7, 10.0.0.2, 10.0.0.3"},
		{"ipv6", "2001:db8:1:2::5, 2001:db8:ffff::2"},
	} {
		xff := []byte(c.xff)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = ClientIP(peer, xff, trusted)
			}
		})
	}
}

func BenchmarkClientIPLines(b *testing.B) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	peer := netip.MustParseAddr("10.0.0.1")
	lines := [][]byte{[]byte("198.51.100.77, 1.1.1.1"), []byte("203.0.113.7, 10.0.0.2")}
	b.ReportAllocs()
	for b.Loop() {
		_ = ClientIPLines(peer, lines, trusted)
	}
}

func BenchmarkClientIPForwarded(b *testing.B) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	peer := netip.MustParseAddr("10.0.0.1")
	lines := [][]byte{[]byte(`for=198.51.100.77;proto=https`), []byte(`for="[2001:db8:cafe::17]:4711", for=10.0.0.2`)}
	b.ReportAllocs()
	for b.Loop() {
		_ = ClientIPForwarded(peer, lines, trusted)
	}
}

func BenchmarkIPKey(b *testing.B) {
	a := netip.MustParseAddr("2001:db8:1:2::5")
	b.ReportAllocs()
	for b.Loop() {
		_ = IPKey(a)
	}
}

// BenchmarkParseIPv6 sets the hand-written IPv6 parser of parseHop beside
// netip.ParseAddr over the same header bytes (unsafe.String, no copy), on the
// addresses a proxy writes and on the malformed ones a client can send. It is
// why parseIPv6 stays: see its doc.
func BenchmarkParseIPv6(b *testing.B) {
	for _, c := range []struct{ name, in string }{
		{"full", "2001:db8:1:2:3:4:5:6"},
		{"compressed", "2001:db8:1:2::5"},
		{"v4-tail", "::ffff:192.0.2.1"},
		{"bad-two-ellipses", "1::2::3"},
		{"bad-hex", "2001:db8:1:2::zz"},
	} {
		in := []byte(c.in)
		b.Run(c.name+"/hand", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = parseIPv6(in)
			}
		})
		b.Run(c.name+"/netip", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				a, err := netip.ParseAddr(unsafe.String(&in[0], len(in)))
				_ = err == nil && a.Zone() == ""
			}
		})
	}
}
