package limit

import (
	"bytes"
	"net/netip"
)

// ClientIP returns the address a per-IP limit should key on, given one
// X-Forwarded-For header line; it is ClientIPLines with that one line. A
// request may carry several lines (HAProxy's "option forwardfor" and others
// add a line of their own rather than extend the client's), and reading only
// the first one lets a client name any address it likes: give every line to
// ClientIPLines instead.
func ClientIP(peer netip.Addr, xff []byte, trusted []netip.Prefix) netip.Addr {
	return ClientIPLines(peer, [][]byte{xff}, trusted)
}

// ClientIPLines returns the address a per-IP limit should key on. When peer
// (the TCP peer) is not inside any of the trusted prefixes (the configured
// reverse proxies), the answer is peer: a client can write anything into
// X-Forwarded-For, so the header only counts when a trusted proxy sent it.
//
// lines are the request's X-Forwarded-For header lines in the order received,
// read exactly as if they were joined with commas into one value (RFC 9110
// section 5.3): no lines, or one empty line, is no header. The hops of that
// value (appended on the right) are read from right to left, skipping hops
// that are themselves trusted; the first untrusted hop is the client, because
// it was written by a trusted proxy that saw it as its TCP peer. Entries
// further left were supplied by the client and are ignored however they
// look, and so are whole lines further up: a proxy that adds its own line
// after the client's puts the client's real address on the right. When every
// hop is trusted the leftmost one is returned. A hop may carry a port
// ("192.0.2.1:443", "[2001:db8::1]:443"); zones are refused.
//
// If the walk meets an empty or unparseable entry before it finds the client,
// ClientIPLines returns peer: such an entry was not written by a proxy we
// trust to write addresses, so nothing left of it identifies the client, and
// falling back to the last address we know for certain is the only choice
// that a client cannot steer. The cost is that such requests share the
// proxy's bucket, which only hurts clients sending (or proxies forwarding)
// broken headers.
//
// Results are unmapped (an IPv4-mapped IPv6 address becomes IPv4).
// ClientIPLines does not allocate and keeps no reference to lines.
func ClientIPLines(peer netip.Addr, lines [][]byte, trusted []netip.Prefix) netip.Addr {
	peer = peer.Unmap()
	if len(lines) == 0 || (len(lines) == 1 && len(lines[0]) == 0) || !isTrusted(peer, trusted) {
		return peer
	}
	var last netip.Addr
	for l := len(lines) - 1; l >= 0; l-- {
		rest, more := lines[l], true
		for more {
			var hop []byte
			if i := bytes.LastIndexByte(rest, ','); i >= 0 {
				hop, rest = rest[i+1:], rest[:i]
			} else {
				hop, more = rest, false
			}
			a, ok := parseHop(hop)
			if !ok {
				return peer
			}
			if !isTrusted(a, trusted) {
				return a
			}
			last = a
		}
	}
	return last
}

// ClientIPForwarded is ClientIPLines for the RFC 7239 Forwarded header: the
// hops are the header's comma-separated forwarded-elements over every line in
// order, each naming its hop in its for parameter (for=192.0.2.60,
// for="[2001:db8:cafe::17]:4711", the name case-insensitive, the value a
// token or a quoted string), walked with the same rules: from the right,
// skipping trusted hops, peer when the walk meets an element it cannot read
// first. An element without for, with for twice, or naming an obfuscated or
// "unknown" node cannot be read; an obfuscated port (for="192.0.2.1:_abc")
// is dropped. A quoted string does not continue onto the next line. Configure
// the proxy to send one of Forwarded and X-Forwarded-For and key on that one
// only: a client can send the other. ClientIPForwarded does not allocate.
func ClientIPForwarded(peer netip.Addr, lines [][]byte, trusted []netip.Prefix) netip.Addr {
	peer = peer.Unmap()
	if !isTrusted(peer, trusted) {
		return peer
	}
	// The right-to-left walk of ClientIPLines, folded left to right so that
	// quoted strings are read in their own direction: got is the answer for
	// the elements seen so far.
	got, seen := peer, false
	for _, line := range lines {
		for i := 0; i <= len(line); i++ {
			end := unquoted(line, i, ',')
			a, ok := forwardedFor(line[i:end])
			switch {
			case !ok:
				got = peer
			case !isTrusted(a, trusted):
				got = a
			case !seen:
				got = a
			}
			seen = true
			i = end
		}
	}
	return got
}

// unquoted returns the index of the first delim at or after b[i] outside a
// quoted string (RFC 9110 section 5.6.4), or len(b).
func unquoted(b []byte, i int, delim byte) int {
	for quoted := false; i < len(b); i++ {
		switch c := b[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == delim:
			return i
		}
	}
	return len(b)
}

// forwardedFor returns the address in the for parameter of one
// forwarded-element.
func forwardedFor(elem []byte) (netip.Addr, bool) {
	var (
		val   []byte
		found bool
	)
	for i := 0; i <= len(elem); i++ {
		end := unquoted(elem, i, ';')
		pair := bytes.TrimSpace(elem[i:end])
		i = end
		if len(pair) == 0 {
			continue
		}
		eq := bytes.IndexByte(pair, '=')
		if eq < 0 {
			return netip.Addr{}, false
		}
		if !bytes.EqualFold(bytes.TrimSpace(pair[:eq]), []byte("for")) {
			continue
		}
		if found {
			return netip.Addr{}, false
		}
		val, found = bytes.TrimSpace(pair[eq+1:]), true
	}
	if !found {
		return netip.Addr{}, false
	}
	var buf [64]byte
	if len(val) > 0 && val[0] == '"' {
		var ok bool
		if val, ok = unquote(buf[:0], val); !ok {
			return netip.Addr{}, false
		}
	}
	// An obfuscated port ("_" and token characters after the colon) names
	// nothing we key on.
	if i := bytes.LastIndexByte(val, ':'); i >= 0 && i+1 < len(val) && val[i+1] == '_' &&
		(val[0] == '[' || bytes.IndexByte(val[:i], ':') < 0) {
		val = val[:i]
	}
	return parseHop(val)
}

// unquote returns the contents of the quoted string q, unescaped into dst when
// it holds a quoted-pair; ok is false if q is not exactly one quoted string
// or does not fit in dst's capacity.
func unquote(dst, q []byte) (_ []byte, ok bool) {
	if len(q) < 2 || q[len(q)-1] != '"' {
		return nil, false
	}
	q = q[1 : len(q)-1]
	if bytes.IndexByte(q, '\\') < 0 {
		return q, bytes.IndexByte(q, '"') < 0
	}
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch c {
		case '"':
			return nil, false
		case '\\':
			if i++; i == len(q) {
				return nil, false
			}
			c = q[i]
		}
		if len(dst) == cap(dst) {
			return nil, false
		}
		dst = append(dst, c)
	}
	return dst, true
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseHop parses one X-Forwarded-For entry: an IPv4 or IPv6 address,
// optionally with a port ("192.0.2.1:80", "[2001:db8::1]:443") or in
// brackets ("[2001:db8::1]"). It accepts
// exactly the addresses netip.ParseAddr accepts, zones excepted, but without
// allocating an error for the ones it refuses.
func parseHop(b []byte) (netip.Addr, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || len(b) > 64 {
		return netip.Addr{}, false
	}
	if b[0] == '[' {
		end := bytes.IndexByte(b, ']')
		if end < 0 || !validPort(b[end+1:], true) {
			return netip.Addr{}, false
		}
		ip, ok := parseIPv6(b[1:end])
		return netip.AddrFrom16(ip).Unmap(), ok
	}
	colons := bytes.Count(b, []byte{':'})
	if colons == 1 {
		i := bytes.IndexByte(b, ':')
		if !validPort(b[i:], false) {
			return netip.Addr{}, false
		}
		b = b[:i]
		colons = 0
	}
	if colons == 0 {
		ip, ok := parseIPv4(b)
		return netip.AddrFrom4(ip), ok
	}
	ip, ok := parseIPv6(b)
	return netip.AddrFrom16(ip).Unmap(), ok
}

// validPort reports whether b is ":" followed by a decimal port, or empty
// when optional.
func validPort(b []byte, optional bool) bool {
	if len(b) == 0 {
		return optional
	}
	if b[0] != ':' || len(b) < 2 || len(b) > 6 {
		return false
	}
	p := 0
	for _, c := range b[1:] {
		if c < '0' || c > '9' {
			return false
		}
		p = p*10 + int(c-'0')
	}
	return p <= 65535
}

// parseIPv4 parses a dotted quad the way netip does: four decimal fields of
// 0..255 without leading zeros.
func parseIPv4(b []byte) (ip [4]byte, ok bool) {
	n, val, digits := 0, 0, 0
	for i := 0; i <= len(b); i++ {
		if i == len(b) || b[i] == '.' {
			if digits == 0 || n == 4 {
				return ip, false
			}
			ip[n] = byte(val)
			n++
			val, digits = 0, 0
			continue
		}
		c := b[i]
		if c < '0' || c > '9' || (digits > 0 && val == 0) {
			return ip, false
		}
		val = val*10 + int(c-'0')
		digits++
		if val > 255 {
			return ip, false
		}
	}
	return ip, n == 4
}

// parseIPv6 parses an IPv6 address without zone the way netip does: up to
// eight groups of one to four hex digits, one "::" standing for at least one
// zero group, and an optional dotted-quad tail in the last 32 bits.
//
// Why not netip.ParseAddr over the bytes (unsafe.String)? On the addresses
// proxies write both cost about the same and allocate nothing, but netip
// allocates its error (48 B) for every malformed hop, and a client writes the
// hops: BenchmarkParseIPv6 sets them side by side, FuzzParseHop holds this
// parser to netip's answers.
func parseIPv6(b []byte) (ip [16]byte, ok bool) {
	ellipsis := -1
	if len(b) >= 2 && b[0] == ':' && b[1] == ':' {
		ellipsis = 0
		b = b[2:]
		if len(b) == 0 {
			return ip, true
		}
	}
	i := 0
	for i < 16 {
		acc, off := hexGroup(b)
		if off == 0 {
			return ip, false
		}
		if off < len(b) && b[off] == '.' {
			if (ellipsis < 0 && i != 12) || i+4 > 16 {
				return ip, false
			}
			v4, ok := parseIPv4(b)
			if !ok {
				return ip, false
			}
			copy(ip[i:], v4[:])
			i += 4
			b = nil
			break
		}
		ip[i], ip[i+1] = byte(acc>>8), byte(acc)
		i += 2
		b = b[off:]
		if len(b) == 0 {
			break
		}
		if b[0] != ':' || len(b) == 1 {
			return ip, false
		}
		b = b[1:]
		if b[0] == ':' {
			if ellipsis >= 0 {
				return ip, false
			}
			ellipsis = i
			if b = b[1:]; len(b) == 0 {
				break
			}
		}
	}
	if len(b) != 0 {
		return ip, false
	}
	return ip, expandEllipsis(&ip, i, ellipsis)
}

// hexGroup reads the hex digits at the start of b: their value and count,
// and a count of 0 when there are none or more than four (not a group).
func hexGroup(b []byte) (acc, n int) {
	for n < len(b) {
		v := hexDigits[b[n]]
		if v > 15 {
			break
		}
		acc = acc<<4 | int(v)
		if n++; n > 4 {
			return 0, 0
		}
	}
	return acc, n
}

// hexDigits maps a byte to its value as a hex digit, 0xff when it is none.
var hexDigits = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := byte(0); c < 10; c++ {
		t['0'+c] = c
	}
	for c := byte(0); c < 6; c++ {
		t['a'+c], t['A'+c] = 10+c, 10+c
	}
	return t
}()

// expandEllipsis moves the groups after the "::" at ellipsis (-1: none) to
// the end of ip, whose first i bytes are parsed, and zeroes the gap; it
// reports whether the address is whole: 16 bytes without an ellipsis, or
// fewer with one.
func expandEllipsis(ip *[16]byte, i, ellipsis int) bool {
	if i == 16 {
		return ellipsis < 0
	}
	if ellipsis < 0 {
		return false
	}
	n := 16 - i
	copy(ip[ellipsis+n:], ip[ellipsis:i])
	clear(ip[ellipsis : ellipsis+n])
	return true
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
