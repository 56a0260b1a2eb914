package limit

import (
	"math"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

var t0 = time.Unix(1_900_000_000, 0)

// TestMatchesRate replays random schedules against this Limiter and one
// rate.Limiter per key and requires the same decisions and waits.
func TestMatchesRate(t *testing.T) {
	configs := []struct {
		rate  float64
		burst int
	}{
		{1, 1}, {10, 5}, {0.5, 3}, {1000, 100}, {3.7, 2}, {0, 3}, {-1, 2}, {math.Inf(1), 0}, {5, 0},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range configs {
		l := New(Config{Rate: c.rate, Burst: c.burst, Shards: 4})
		const keys = 7
		ref := make([]*rate.Limiter, keys)
		for i := range ref {
			ref[i] = rate.NewLimiter(rate.Limit(c.rate), c.burst)
			if math.IsInf(c.rate, 1) {
				ref[i] = rate.NewLimiter(rate.Inf, c.burst)
			}
		}
		// Key 0 gets most calls, several times faster than it refills, so its
		// bucket drains; the other keys see a call slower than they refill.
		// Rare long pauses refill buckets partly or fully, and now and then
		// time runs backwards.
		short, long := 100*time.Millisecond, 3*time.Second
		if c.rate > 0 && !math.IsInf(c.rate, 1) {
			short = time.Duration(float64(time.Second) / (c.rate * 8))
			long = min(long, time.Duration(2*float64(c.burst+1)/c.rate*float64(time.Second)))
		}
		now, latest := t0, t0
		refused := 0
		for step := range 20_000 {
			switch r := rng.IntN(1000); {
			case r < 985:
				now = now.Add(time.Duration(rng.Int64N(int64(short))))
			case r < 995:
				now = now.Add(time.Duration(rng.Int64N(int64(long))))
			default:
				now = now.Add(-time.Duration(rng.Int64N(int64(time.Second))))
			}
			if now.After(latest) {
				latest = now
			}
			k := 0
			if rng.IntN(10) >= 6 {
				k = rng.IntN(keys)
			}
			wantTokens := ref[k].TokensAt(now)
			want := ref[k].AllowN(now, 1)
			got, wait := l.Allow(now, uint64(k))
			if got != want {
				t.Fatalf("rate %v burst %d step %d key %d: Allow = %v; rate.Limiter says %v", c.rate, c.burst, step, k, got, want)
			}
			if got {
				if wait != 0 {
					t.Fatalf("allowed with wait %v", wait)
				}
				continue
			}
			refused++
			var wantWait time.Duration
			switch {
			case c.burst == 0 || c.rate <= 0:
				wantWait = math.MaxInt64
			default:
				wantWait = time.Duration((1 - wantTokens) / c.rate * float64(time.Second))
			}
			if d := wait - wantWait; d < -time.Microsecond || d > time.Microsecond {
				t.Fatalf("rate %v burst %d step %d: wait %v; want %v", c.rate, c.burst, step, wait, wantWait)
			}
			// The wait is exact: one token is there after it. (After time ran
			// backwards rate.Limiter refills from its later last update, so
			// the wait it implies is shorter than the real one.)
			if wantWait < time.Hour && !now.Before(latest) {
				if tok := ref[k].TokensAt(now.Add(wait + time.Microsecond)); tok < 1-1e-6 {
					t.Fatalf("after the wait only %v tokens", tok)
				}
			}
		}
		if refused == 0 && !math.IsInf(c.rate, 1) {
			t.Fatalf("rate %v burst %d: schedule never refused", c.rate, c.burst)
		}
	}
}

func TestNewKeyStartsFull(t *testing.T) {
	l := New(Config{Rate: 1, Burst: 3})
	for i := range 3 {
		if ok, _ := l.Allow(t0, 9); !ok {
			t.Fatalf("call %d refused", i)
		}
	}
	ok, wait := l.Allow(t0, 9)
	if ok || wait != time.Second {
		t.Fatalf("Allow = %v, %v; want false, 1s", ok, wait)
	}
	if ok, _ := l.Allow(t0.Add(time.Second), 9); !ok {
		t.Fatal("refused after the wait")
	}
}

func TestBound(t *testing.T) {
	l := New(Config{Rate: 1, Burst: 5, MaxKeys: 64, Shards: 4})
	for i := range 10_000 {
		if ok, _ := l.Allow(t0, uint64(i)); !ok {
			t.Fatalf("new key %d refused", i)
		}
		if n := l.Len(); n > 64 {
			t.Fatalf("Len = %d; bound 64", n)
		}
	}
}

// TestEvictsRefilledFirst: buckets that refilled are dropped before one that
// still remembers a recent take.
func TestEvictsRefilledFirst(t *testing.T) {
	l := New(Config{Rate: 1, Burst: 1, MaxKeys: 16, Shards: 1})
	for k := range uint64(16) {
		l.Allow(t0, k)
	}
	now := t0.Add(2 * time.Second) // every bucket is full again
	if ok, _ := l.Allow(now, 0); !ok {
		t.Fatal("key 0 refused")
	}
	l.Allow(now, 100) // shard full: the refilled buckets go
	if n := l.Len(); n != 2 {
		t.Fatalf("Len = %d; want 2 (key 0 and key 100)", n)
	}
	if ok, wait := l.Allow(now, 0); ok || wait != time.Second {
		t.Fatalf("key 0 forgotten: Allow = %v, %v", ok, wait)
	}
}

// TestEvictsFullestVictim: with no refilled bucket, the fullest sampled one
// is forgiven, not the one that spent most.
func TestEvictsFullestVictim(t *testing.T) {
	l := New(Config{Rate: 1, Burst: 10, MaxKeys: 4, Shards: 1})
	for k := range uint64(4) {
		l.Allow(t0, k)
	}
	for range 5 {
		l.Allow(t0, 0) // key 0 has 4 tokens, the others 9
	}
	l.Allow(t0, 4)
	if n := l.Len(); n != 4 {
		t.Fatalf("Len = %d; want 4", n)
	}
	for i := range 4 {
		if ok, _ := l.Allow(t0, 0); !ok {
			t.Fatalf("key 0 call %d refused", i)
		}
	}
	if ok, _ := l.Allow(t0, 0); ok {
		t.Fatal("key 0 was evicted and forgiven")
	}
}

func TestConcurrentExact(t *testing.T) {
	const burst, keys, workers, calls = 100, 10, 8, 300
	l := New(Config{Rate: 1, Burst: burst, Shards: 2})
	var allowed [keys]atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls * keys {
				k := (i + w) % keys
				if ok, _ := l.Allow(t0, uint64(k)); ok {
					allowed[k].Add(1)
				}
				if i%97 == 0 {
					_ = l.Len()
				}
			}
		}()
	}
	wg.Wait()
	for k := range allowed {
		if n := allowed[k].Load(); n != burst {
			t.Fatalf("key %d: %d allowed; want exactly %d", k, n, burst)
		}
	}
}

func TestConcurrentEviction(t *testing.T) {
	l := New(Config{Rate: 10, Burst: 3, MaxKeys: 256, Shards: 8})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			now := t0
			for range 20_000 {
				now = now.Add(time.Duration(rng.IntN(1000)) * time.Microsecond)
				l.Allow(now, rng.Uint64N(5000))
			}
		}()
	}
	wg.Wait()
	if n := l.Len(); n > 256 {
		t.Fatalf("Len = %d; bound 256", n)
	}
}

// TestMemoryPerKey measures the heap held by 500,000 keys and holds it to the
// bound the docs rely on.
func TestMemoryPerKey(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates ~25 MiB")
	}
	const users = 500_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l := New(Config{Rate: 1, Burst: 5})
	for i := range uint64(users) {
		l.Allow(t0, i*0x9e3779b97f4a7c15)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if n := l.Len(); n != users {
		t.Fatalf("Len = %d", n)
	}
	total := after.HeapAlloc - before.HeapAlloc
	per := float64(total) / users
	t.Logf("500,000 keys: %.1f MiB, %.1f bytes per key", float64(total)/(1<<20), per)
	runtime.KeepAlive(l)
	// The package doc quotes 55.8 bytes; where each shard's map sits in its
	// growth moves it.
	if per > 80 {
		t.Fatalf("%.1f bytes per key, want at most 80", per)
	}
}

func TestClientIP(t *testing.T) {
	trusted := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("2001:db8:ffff::/48"),
	}
	a := netip.MustParseAddr
	proxy := a("10.0.0.1")
	cases := []struct {
		name string
		peer netip.Addr
		xff  string
		want netip.Addr
	}{
		{"direct, no xff", a("203.0.113.9"), "", a("203.0.113.9")},
		{"direct, spoofed xff", a("203.0.113.9"), "1.2.3.4", a("203.0.113.9")},
		{"proxy, no xff", proxy, "", proxy},
		{"proxy, one hop", proxy, "203.0.113.7", a("203.0.113.7")},
		{"proxy chain", proxy, "203.0.113.7, 10.0.0.2, 10.0.0.3", a("203.0.113.7")},
		{"spoofed leftmost ignored", proxy, "1.1.1.1, 8.8.8.8, 203.0.113.7, 10.0.0.2", a("203.0.113.7")},
		{"spoofed trusted leftmost ignored", proxy, "10.9.9.9, 203.0.113.7", a("203.0.113.7")},
		{"all trusted", proxy, "10.0.0.3, 10.0.0.2", a("10.0.0.3")},
		{"ipv6 client", proxy, "2001:db8:1:2::5", a("2001:db8:1:2::5")},
		{"ipv6 proxy chain", a("2001:db8:ffff::1"), "2001:db8:1:2::5, 2001:db8:ffff::2", a("2001:db8:1:2::5")},
		{"mapped hop", proxy, "::ffff:203.0.113.7", a("203.0.113.7")},
		{"mapped peer", a("::ffff:10.0.0.1"), "203.0.113.7", a("203.0.113.7")},
		{"mapped untrusted peer unmapped", a("::ffff:203.0.113.9"), "1.2.3.4", a("203.0.113.9")},
		{"hop with port", proxy, "203.0.113.7:4711", a("203.0.113.7")},
		{"ipv6 hop with port", proxy, "[2001:db8::7]:443", a("2001:db8::7")},
		{"blanks", proxy, "  203.0.113.7 ,\t10.0.0.2 ", a("203.0.113.7")},
		{"garbage", proxy, "garbage", proxy},
		{"garbage rightmost", proxy, "203.0.113.7, garbage", proxy},
		{"garbage behind trusted", proxy, "203.0.113.7, nope, 10.0.0.2", proxy},
		{"garbage left of client", proxy, "nope, 203.0.113.7", a("203.0.113.7")},
		{"empty entry", proxy, "203.0.113.7,", proxy},
		{"only commas", proxy, ",,", proxy},
		{"zone", proxy, "fe80::1%eth0", proxy},
		{"overlong", proxy, "1111:2222:3333:4444:5555:6666:7777:8888:9999:aaaa:bbbb:cccc:dddd:eeee", proxy},
		{"unknown literal", proxy, "unknown", proxy},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ClientIP(c.peer, []byte(c.xff), trusted); got != c.want {
				t.Fatalf("ClientIP(%v, %q) = %v; want %v", c.peer, c.xff, got, c.want)
			}
			// One line split into one line per hop means the same.
			var lines [][]byte
			for _, l := range strings.Split(c.xff, ",") {
				lines = append(lines, []byte(l))
			}
			if got := ClientIPLines(c.peer, lines, trusted); got != c.want {
				t.Fatalf("ClientIPLines(%v, %q) = %v; want %v", c.peer, lines, got, c.want)
			}
		})
	}
}

func TestClientIPLines(t *testing.T) {
	trusted := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("2001:db8:ffff::/48"),
	}
	a := netip.MustParseAddr
	proxy := a("10.0.0.1")
	cases := []struct {
		name  string
		peer  netip.Addr
		lines []string
		want  netip.Addr
	}{
		{"no lines", proxy, nil, proxy},
		{"one empty line", proxy, []string{""}, proxy},
		{"two empty lines", proxy, []string{"", ""}, proxy},
		// HAProxy "option forwardfor" adds its own line after the client's:
		// the client's first line must not choose the key.
		{"spoofed first line, proxy line", proxy, []string{"198.51.100.77", "203.0.113.7"}, a("203.0.113.7")},
		{"spoofed first line with trusted hops", proxy, []string{"10.9.9.9, 198.51.100.77", "203.0.113.7"}, a("203.0.113.7")},
		{"spoofed garbage first line", proxy, []string{"not an address", "203.0.113.7"}, a("203.0.113.7")},
		{"two proxies, one line each", proxy, []string{"198.51.100.77", "203.0.113.7", "10.0.0.2"}, a("203.0.113.7")},
		{"client line, proxy chain line", proxy, []string{"198.51.100.77, 1.2.3.4", "203.0.113.7, 10.0.0.2"}, a("203.0.113.7")},
		{"all trusted across lines", proxy, []string{"10.0.0.3", "10.0.0.2"}, a("10.0.0.3")},
		{"empty line right of the client", proxy, []string{"203.0.113.7", ""}, proxy},
		{"empty line left of the client", proxy, []string{"", "203.0.113.7"}, a("203.0.113.7")},
		{"empty line behind trusted", proxy, []string{"203.0.113.7", "", "10.0.0.2"}, proxy},
		{"trailing comma before the next line", proxy, []string{"203.0.113.7,", "10.0.0.2"}, proxy},
		{"ipv6 across lines", a("2001:db8:ffff::1"), []string{"2001:db8:1:2::5", "[2001:db8:ffff::2]:443"}, a("2001:db8:1:2::5")},
		{"untrusted peer ignores every line", a("203.0.113.9"), []string{"1.2.3.4", "5.6.7.8"}, a("203.0.113.9")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var lines [][]byte
			for _, l := range c.lines {
				lines = append(lines, []byte(l))
			}
			if got := ClientIPLines(c.peer, lines, trusted); got != c.want {
				t.Fatalf("ClientIPLines(%v, %q) = %v; want %v", c.peer, c.lines, got, c.want)
			}
			if c.lines == nil {
				return
			}
			joined := strings.Join(c.lines, ",")
			if got := ClientIP(c.peer, []byte(joined), trusted); got != c.want {
				t.Fatalf("ClientIP(%v, %q) = %v; want %v", c.peer, joined, got, c.want)
			}
		})
	}
}

func TestClientIPForwarded(t *testing.T) {
	trusted := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("2001:db8:ffff::/48"),
	}
	a := netip.MustParseAddr
	proxy := a("10.0.0.1")
	cases := []struct {
		name  string
		peer  netip.Addr
		lines []string
		want  netip.Addr
	}{
		{"no header", proxy, nil, proxy},
		{"empty", proxy, []string{""}, proxy},
		{"direct, spoofed", a("203.0.113.9"), []string{"for=1.2.3.4"}, a("203.0.113.9")},
		{"one hop", proxy, []string{"for=203.0.113.7"}, a("203.0.113.7")},
		{"RFC 7239 example", proxy, []string{`for=192.0.2.43, for="[2001:db8:cafe::17]"`}, a("2001:db8:cafe::17")},
		{"with port", proxy, []string{`for="203.0.113.7:4711"`}, a("203.0.113.7")},
		{"ipv6 with port", proxy, []string{`for="[2001:db8:cafe::17]:4711"`}, a("2001:db8:cafe::17")},
		{"other parameters", proxy, []string{`proto=https;for=203.0.113.7;by=10.0.0.1;host="a.example"`}, a("203.0.113.7")},
		{"name case", proxy, []string{`For=203.0.113.7`}, a("203.0.113.7")},
		{"blanks and empty pairs", proxy, []string{` for = 203.0.113.7 ;; proto=http , for=10.0.0.2 `}, a("203.0.113.7")},
		{"spoofed left ignored", proxy, []string{`for=1.1.1.1, for=203.0.113.7, for=10.0.0.2`}, a("203.0.113.7")},
		{"spoofed line, proxy line", proxy, []string{`for=198.51.100.77`, `for=203.0.113.7`}, a("203.0.113.7")},
		{"quoted comma is not a hop", proxy, []string{`for=203.0.113.7;x="a, for=198.51.100.77"`}, a("203.0.113.7")},
		{"quoted comma in the client's part", proxy, []string{`for="198.51.100.77, for=1.1.1.1"`, `for=203.0.113.7`}, a("203.0.113.7")},
		{"escaped quote", proxy, []string{`x="a\", for=198.51.100.77";for=203.0.113.7`}, a("203.0.113.7")},
		{"quoted-pair in the value", proxy, []string{`for="203.0.113.\7"`}, a("203.0.113.7")},
		{"all trusted", proxy, []string{`for=10.0.0.3, for=10.0.0.2`}, a("10.0.0.3")},
		{"obfuscated port", proxy, []string{`for="203.0.113.7:_p1"`}, a("203.0.113.7")},
		{"obfuscated ipv6 port", proxy, []string{`for="[2001:db8::7]:_p1"`}, a("2001:db8::7")},
		{"unknown", proxy, []string{`for=unknown`}, proxy},
		{"obfuscated node", proxy, []string{`for=_hidden, for=10.0.0.2`}, proxy},
		{"unknown left of the client", proxy, []string{`for=unknown, for=203.0.113.7`}, a("203.0.113.7")},
		{"no for", proxy, []string{`proto=https`}, proxy},
		{"for twice", proxy, []string{`for=198.51.100.77;for=203.0.113.7`}, proxy},
		{"pair without =", proxy, []string{`for=203.0.113.7;secure`}, proxy},
		{"empty element", proxy, []string{`for=203.0.113.7,`}, proxy},
		{"unterminated quote", proxy, []string{`for="203.0.113.7`}, proxy},
		{"quote ends early", proxy, []string{`for="203.0.113.7"x`}, proxy},
		{"quote does not continue onto the next line", proxy, []string{`for="198.51.100.77`, `for=203.0.113.7`}, a("203.0.113.7")},
		{"zone", proxy, []string{`for="[fe80::1%eth0]"`}, proxy},
		{"mapped", proxy, []string{`for="[::ffff:203.0.113.7]"`}, a("203.0.113.7")},
		{"ipv6 proxy chain", a("2001:db8:ffff::1"), []string{`for="[2001:db8:1:2::5]", for="[2001:db8:ffff::2]"`}, a("2001:db8:1:2::5")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var lines [][]byte
			for _, l := range c.lines {
				lines = append(lines, []byte(l))
			}
			if got := ClientIPForwarded(c.peer, lines, trusted); got != c.want {
				t.Fatalf("ClientIPForwarded(%v, %q) = %v; want %v", c.peer, c.lines, got, c.want)
			}
		})
	}
}

func TestIPKey(t *testing.T) {
	a := netip.MustParseAddr
	if IPKey(a("192.0.2.1")) != IPKey(a("::ffff:192.0.2.1")) {
		t.Error("IPv4-mapped address keyed apart from its IPv4 form")
	}
	if IPKey(a("192.0.2.1")) == IPKey(a("192.0.2.2")) {
		t.Error("IPv4 addresses share a key")
	}
	if IPKey(a("2001:db8:1:2::1")) != IPKey(a("2001:db8:1:2:ffff:ffff:ffff:ffff")) {
		t.Error("one /64 keyed apart")
	}
	if IPKey(a("2001:db8:1:2::1")) == IPKey(a("2001:db8:1:3::1")) {
		t.Error("neighbouring /64s share a key")
	}
	if got, want := IPKey(a("2001:db8:1:2::1")), uint64(0x20010db800010002); got != want {
		t.Errorf("IPKey = %#x; want %#x", got, want)
	}
	// IPv4 keys sit in ffff:ffff::/32 (multicast); no unicast /64 reaches them.
	for _, s := range []string{"0.0.0.0", "0.0.0.1", "192.0.2.1", "255.255.255.255"} {
		k := IPKey(a(s))
		if k>>32 != 0xffff_ffff {
			t.Errorf("IPKey(%s) = %#x outside the IPv4 range", s, k)
		}
	}
	for _, s := range []string{"::", "::1", "::1.2.3.4", "2001:db8::1", "fe80::1", "fc00::1", "feff:ffff:ffff:ffff::1"} {
		if k := IPKey(a(s)); k>>32 == 0xffff_ffff {
			t.Errorf("IPv6 %s collides with the IPv4 range: %#x", s, k)
		}
	}
	if IPKey(a("fe80::1%eth0")) != IPKey(a("fe80::1")) {
		t.Error("zone changed the key")
	}
	if IPKey(netip.Addr{}) != 0 {
		t.Error("zero Addr key not 0")
	}
}

// TestBoundHoldsMemoryUnderChurn: a full limiter that keeps evicting does
// not grow (Go maps reuse deleted slots).
func TestBoundHoldsMemoryUnderChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("inserts 1M keys")
	}
	l := New(Config{Rate: 1, Burst: 5, MaxKeys: 1 << 14})
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	now := t0
	var first uint64
	for round := range 4 {
		for i := range 1 << 18 {
			l.Allow(now, uint64(round)<<32|uint64(i))
			now = now.Add(time.Microsecond)
		}
		h := heap()
		if round == 0 {
			first = h
		} else if h > first+first/2+1<<20 {
			t.Fatalf("heap grew from %d to %d bytes under churn", first, h)
		}
		if n := l.Len(); n > 1<<14 {
			t.Fatalf("Len = %d", n)
		}
	}
}
