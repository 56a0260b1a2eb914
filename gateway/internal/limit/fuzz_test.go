package limit

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
)

// FuzzClientIP checks that ClientIP never panics and answers the peer or one
// of the X-Forwarded-For hops, and that the hop parser agrees with netip.
func FuzzClientIP(f *testing.F) {
	trusted := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("2001:db8:ffff::/48"),
	}
	f.Add([]byte{10, 0, 0, 1}, "203.0.113.7, 10.0.0.2")
	f.Add([]byte{10, 0, 0, 1}, "1.1.1.1,garbage, [2001:db8::1]:80")
	f.Add([]byte{0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "::ffff:1.2.3.4, 2001:db8:ffff::9")
	f.Add([]byte{203, 0, 113, 9}, "10.0.0.7")
	f.Add([]byte{10, 1, 2, 3}, "1:2:3:4:5:6:7:8, ::, 1::, ::1.2.3.4, 1.2.3.4:65535")
	f.Fuzz(func(t *testing.T, peerBytes []byte, xff string) {
		peer, ok := netip.AddrFromSlice(peerBytes)
		if !ok {
			return
		}
		got := ClientIP(peer, []byte(xff), trusted)
		if got == peer.Unmap() {
			return
		}
		for _, hop := range strings.Split(xff, ",") {
			if a, ok := parseHop([]byte(hop)); ok && a == got {
				return
			}
		}
		t.Fatalf("ClientIP(%v, %q) = %v: neither the peer nor a hop", peer, xff, got)
	})
}

// FuzzParseHop compares the allocation-free hop parser with netip.
func FuzzParseHop(f *testing.F) {
	for _, s := range []string{"1.2.3.4", "01.2.3.4", "1.2.3.4:80", "[::1]:443", "::ffff:1.2.3.4", "1::2::3", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7::", "::1.2.3.4", "fe80::1%eth0", "1:2:3:4:5:6:1.2.3.4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseHop([]byte(s))
		trimmed := string(bytes.TrimSpace([]byte(s)))
		want, err := netip.ParseAddr(trimmed)
		if err != nil || want.Zone() != "" {
			ap, err2 := netip.ParseAddrPort(trimmed)
			want, err = ap.Addr(), err2
			if err == nil && (ap.Addr().Zone() != "" || (ap.Addr().Is4() && strings.HasPrefix(trimmed, "["))) {
				err = errZone
			}
		}
		if inner, found := strings.CutPrefix(trimmed, "["); found && strings.HasSuffix(inner, "]") {
			// Bracketed without a port, as RFC 7239 writes IPv6 nodes.
			want, err = netip.ParseAddr(strings.TrimSuffix(inner, "]"))
			if err == nil && !want.Is6() {
				err = errZone
			}
		}
		if len(trimmed) > 64 || strings.Contains(trimmed, "%") {
			err = errZone
		}
		if (err == nil) != ok {
			t.Fatalf("parseHop(%q) ok=%v; netip err=%v", s, ok, err)
		}
		if ok && got != want.Unmap() {
			t.Fatalf("parseHop(%q) = %v; netip %v", s, got, want.Unmap())
		}
	})
}

var errZone = netipError("zone or too long")

type netipError string

func (e netipError) Error() string { return string(e) }
