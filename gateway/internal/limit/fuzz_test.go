package limit

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
)

// FuzzClientIP checks that ClientIP never panics and answers the peer or one
// of the X-Forwarded-For hops, that ClientIPLines over the same value split
// into lines (at the commas cuts picks) answers the same, and so does
// ClientIPForwarded over the hops written as for="<hop>".
func FuzzClientIP(f *testing.F) {
	trusted := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("2001:db8:ffff::/48"),
	}
	f.Add([]byte{10, 0, 0, 1}, "203.0.113.7, 10.0.0.2", uint64(1))
	f.Add([]byte{10, 0, 0, 1}, "1.1.1.1,garbage, [2001:db8::1]:80", uint64(3))
	f.Add([]byte{0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "::ffff:1.2.3.4, 2001:db8:ffff::9", uint64(0))
	f.Add([]byte{203, 0, 113, 9}, "10.0.0.7", uint64(0))
	f.Add([]byte{10, 1, 2, 3}, "1:2:3:4:5:6:7:8, ::, 1::, ::1.2.3.4, 1.2.3.4:65535", uint64(0b1010))
	f.Add([]byte{10, 0, 0, 1}, "198.51.100.77,203.0.113.7", uint64(1))
	f.Add([]byte{10, 0, 0, 1}, "203.0.113.7,,10.0.0.2", uint64(2))
	f.Fuzz(func(t *testing.T, peerBytes []byte, xff string, cuts uint64) {
		peer, ok := netip.AddrFromSlice(peerBytes)
		if !ok {
			return
		}
		got := ClientIP(peer, []byte(xff), trusted)
		hops := strings.Split(xff, ",")

		var lines [][]byte
		for i, hop := range hops {
			if i == 0 || cuts&(1<<(i%64)) != 0 {
				lines = append(lines, nil)
			} else {
				lines[len(lines)-1] = append(lines[len(lines)-1], ',')
			}
			lines[len(lines)-1] = append(lines[len(lines)-1], hop...)
		}
		if byLines := ClientIPLines(peer, lines, trusted); byLines != got {
			t.Fatalf("ClientIPLines(%v, %q) = %v; ClientIP over the joined lines %v", peer, lines, byLines, got)
		}

		quotable := true
		fwd := make([][]byte, 0, len(lines))
		for i, hop := range hops {
			if strings.ContainsAny(hop, "\"\\_") {
				quotable = false
				break
			}
			if i == 0 || cuts&(1<<(i%64)) != 0 {
				fwd = append(fwd, nil)
			} else {
				fwd[len(fwd)-1] = append(fwd[len(fwd)-1], ',')
			}
			fwd[len(fwd)-1] = append(fwd[len(fwd)-1], `for="`+hop+`"`...)
		}
		if quotable {
			if byFwd := ClientIPForwarded(peer, fwd, trusted); byFwd != got {
				t.Fatalf("ClientIPForwarded(%v, %q) = %v; ClientIP(%q) %v", peer, fwd, byFwd, xff, got)
			}
		}

		if got == peer.Unmap() {
			return
		}
		for _, hop := range hops {
			if a, ok := parseHop([]byte(hop)); ok && a == got {
				return
			}
		}
		t.Fatalf("ClientIP(%v, %q) = %v: neither the peer nor a hop", peer, xff, got)
	})
}

// FuzzClientIPForwarded checks that ClientIPForwarded never panics on any
// lines and answers a valid, unmapped address.
func FuzzClientIPForwarded(f *testing.F) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	peer := netip.MustParseAddr("10.0.0.1")
	f.Add(`for=192.0.2.43, for="[2001:db8:cafe::17]:4711"`, "for=10.0.0.2;proto=https")
	f.Add(`for="a\", for=1.1.1.1";for=203.0.113.7`, `for="`)
	f.Add(`For=_hidden;by=unknown`, `for="192.0.2.1:_p", for="[::ffff:10.1.1.1]"`)
	f.Fuzz(func(t *testing.T, l1, l2 string) {
		lines := [][]byte{[]byte(l1), []byte(l2)}
		if got := ClientIPForwarded(peer, lines, trusted); !got.IsValid() || got.Is4In6() {
			t.Fatalf("ClientIPForwarded(%q) = %v", lines, got)
		}
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
