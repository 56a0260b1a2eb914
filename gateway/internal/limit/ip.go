package limit

import (
	"bytes"
	"net/netip"
	"unsafe"
)

// ClientIP returns the address a per-IP limit should key on. When peer (the
// TCP peer) is not inside any of the trusted prefixes (the configured reverse
// proxies), the answer is peer: a client can write anything into
// X-Forwarded-For, so the header only counts when a trusted proxy sent it.
//
// Behind trusted proxies, xff (one X-Forwarded-For value, comma-separated,
// hops appended on the right) is read from right to left, skipping hops that
// are themselves trusted; the first untrusted hop is the client, because it
// was written by a trusted proxy that saw it as its TCP peer. Entries further
// left were supplied by the client and are ignored however they look. When
// every hop is trusted the leftmost one is returned. A hop may carry a port
// ("192.0.2.1:443", "[2001:db8::1]:443"); zones are refused.
//
// If the walk meets an empty or unparseable entry before it finds the client,
// ClientIP returns peer: such an entry was not written by a proxy we trust to
// write addresses, so nothing left of it identifies the client, and falling
// back to the last address we know for certain is the only choice that a
// client cannot steer. The cost is that such requests share the proxy's
// bucket, which only hurts clients sending (or proxies forwarding) broken
// headers. Callers with several X-Forwarded-For header lines must join them
// with commas first.
//
// Results are unmapped (an IPv4-mapped IPv6 address becomes IPv4). ClientIP
// does not allocate.
func ClientIP(peer netip.Addr, xff []byte, trusted []netip.Prefix) netip.Addr {
	peer = peer.Unmap()
	if len(xff) == 0 || !isTrusted(peer, trusted) {
		return peer
	}
	var last netip.Addr
	for rest := xff; ; {
		var hop []byte
		if i := bytes.LastIndexByte(rest, ','); i >= 0 {
			hop, rest = rest[i+1:], rest[:i]
		} else {
			hop, rest = rest, nil
		}
		a, ok := parseHop(hop)
		if !ok {
			return peer
		}
		if !isTrusted(a, trusted) {
			return a
		}
		last = a
		if rest == nil {
			return last
		}
	}
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseHop parses one X-Forwarded-For entry without allocating.
func parseHop(b []byte) (netip.Addr, bool) {
	b = bytes.TrimSpace(b)
	// Bound the input: the longest address with a port,
	// "[ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255]:65535", is 53 bytes.
	if len(b) == 0 || len(b) > 64 || bytes.IndexByte(b, '%') >= 0 {
		return netip.Addr{}, false
	}
	// The string is only read during the call: netip keeps no reference to it
	// once zones are excluded above.
	s := unsafe.String(&b[0], len(b))
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// v4Tag places IPv4 keys at ffff:ffff::/32, a range of IPv6 multicast
// prefixes; multicast is never a source address, so no IPv6 client shares a
// key with an IPv4 client.
const v4Tag = 0xffff_ffff << 32

// IPKey maps an address to a limiter key. IPv4 addresses (and IPv4-mapped
// IPv6 ones) keep their full 32 bits, tagged into a range that no unicast
// IPv6 /64 uses; an IPv6 address is keyed by its /64, because one subscriber
// usually holds a whole /64 and could otherwise rotate through 2^64 keys. The
// only keys two families share are those of IPv6 multicast prefixes in
// ffff:ffff::/32, which can never be a TCP peer. The zero Addr maps to 0, the
// key of ::/64. IPKey does not allocate.
func IPKey(a netip.Addr) uint64 {
	a = a.Unmap()
	if a.Is4() {
		b := a.As4()
		return v4Tag | uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
	}
	if !a.Is6() {
		return 0
	}
	b := a.As16()
	var k uint64
	for _, c := range b[:8] {
		k = k<<8 | uint64(c)
	}
	return k
}
