package sharding

import (
	"bytes"
	"strings"
	"testing"
)

func TestSlotKnownValues(t *testing.T) {
	// Values printed by CLUSTER KEYSLOT on Redis 7; the integration test in
	// package stock checks many more against the live cluster.
	cases := map[string]uint16{
		"foo":                  12182,
		"bar":                  5061,
		"123456789":            12739,
		"{user1000}.following": 3443,
		"{user1000}.followers": 3443,
		"foo{}{bar}":           8363,
		"foo{{bar}}zap":        4015,
		"foo{bar}{zap}":        5061,
		"{}":                   15257,
		"{":                    4092, // no closing brace: the whole key (CLUSTER KEYSLOT agrees)
		"{s1:0:0}:stock:1":     Slot([]byte("s1:0:0")),
		"{s1:0:0}:buyers":      Slot([]byte("s1:0:0")),
	}
	for k, want := range cases {
		if got := Slot([]byte(k)); got != want {
			t.Errorf("Slot(%q) = %d, want %d", k, got, want)
		}
	}
}

func TestShardKeysShareOneSlot(t *testing.T) {
	id := NewOrderID(7, 0x0123456789abcdef, 42)
	for _, tag := range UniformTags(7, 16) {
		want := Slot(AppendBuyersKey(nil, tag))
		for _, k := range [][]byte{AppendStockKey(nil, tag, 99), AppendOrderKey(nil, tag, id), AppendJournalKey(nil, tag)} {
			if Slot(k) != want {
				t.Fatalf("key %s in slot %d, buyers in %d", k, Slot(k), want)
			}
		}
	}
}

func TestKeyShapes(t *testing.T) {
	id := NewOrderID(7, 1, 2)
	if got := string(AppendStockKey(nil, "s7:0:3", 12)); got != "{s7:0:3}:stock:12" {
		t.Fatal(got)
	}
	if got := string(AppendOrderKey(nil, "s7:0:3", id)); got != "{s7:0:3}:o:"+id.String() {
		t.Fatal(got)
	}
	if SaleKey(7) != "fs:sale:7" {
		t.Fatal(SaleKey(7))
	}
}

// HomeShard must never change: live sales keep each buyer record on the
// shard it names. These values were computed when it was written.
func TestHomeShardStable(t *testing.T) {
	for _, c := range []struct {
		user    uint64
		s8, s16 int
	}{{1, 7, 7}, {2, 5, 13}, {1000, 0, 8}, {123456789, 3, 11}} {
		if a, b := HomeShard(c.user, 42, 8), HomeShard(c.user, 42, 16); a != c.s8 || b != c.s16 {
			t.Errorf("HomeShard(%d, 42, 8/16) = %d/%d, want %d/%d", c.user, a, b, c.s8, c.s16)
		}
	}
}

func TestHomeShardSpread(t *testing.T) {
	for _, n := range []int{1, 2, 4, 8, 16, 64} {
		counts := make([]int, n)
		for u := uint64(1); u <= 100000; u++ {
			h := HomeShard(u, 42, n)
			if h < 0 || h >= n {
				t.Fatalf("HomeShard(%d, 42, %d) = %d", u, n, h)
			}
			counts[h]++
		}
		for i, c := range counts {
			if exp := 100000 / n; c < exp*9/10 || c > exp*11/10 {
				t.Errorf("S=%d shard %d got %d users, want about %d", n, i, c, exp)
			}
		}
	}
}

func TestOrderIDRoundTrip(t *testing.T) {
	id := NewOrderID(MaxSaleID, ^uint64(0), 0xdeadbeef)
	s := id.String()
	if len(s) != 36 || s[14] != '8' {
		t.Fatalf("%s: want a version 8 UUID", s)
	}
	back, ok := ParseOrderID([]byte(s))
	if !ok || back != id || back.SaleID() != MaxSaleID {
		t.Fatalf("round trip %s -> %v %v", s, back, ok)
	}
	up, ok := ParseOrderID([]byte(strings.ToUpper(s)))
	if !ok || up != id {
		t.Fatal("upper case form refused")
	}
}

func TestParseOrderIDRejects(t *testing.T) {
	for _, s := range []string{
		"", "x", "123e4567-e89b-12d3-a456-426614174000", // version 1
		"00000007-0000-8000-8000-00000000000",   // short
		"00000007-0000-8000-8000-0000000000000", // long
		"00000007-0000-8000-c000-000000000000",  // wrong variant
		"00000007x0000-8000-8000-000000000000",
		"0000000g-0000-8000-8000-000000000000",
	} {
		if _, ok := ParseOrderID([]byte(s)); ok {
			t.Errorf("ParseOrderID(%q) accepted", s)
		}
	}
}

func FuzzParseOrderID(f *testing.F) {
	f.Add([]byte(NewOrderID(1, 2, 3).String()))
	f.Add([]byte("00000007-0000-8000-8000-000000000000"))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, ok := ParseOrderID(b)
		if ok && !bytes.EqualFold(id.AppendText(nil), b) {
			t.Fatalf("%q parsed to %s", b, id)
		}
	})
}

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		q int64
		n int
	}{{10000, 8}, {100, 16}, {7, 3}, {1, 4}, {0, 2}} {
		parts := Split(c.q, c.n)
		var sum, lo, hi int64 = 0, parts[0], parts[0]
		for _, p := range parts {
			sum += p
			lo, hi = min(lo, p), max(hi, p)
		}
		if sum != c.q || hi-lo > 1 {
			t.Errorf("Split(%d,%d) = %v", c.q, c.n, parts)
		}
	}
}

func TestPlaceTagsSpreadsOverMasters(t *testing.T) {
	top, err := NewTopology([]Master{
		{Addr: "127.0.0.1:7001", Slots: []SlotRange{{0, 5460}}},
		{Addr: "127.0.0.1:7002", Slots: []SlotRange{{5461, 10922}}},
		{Addr: "127.0.0.1:7003", Slots: []SlotRange{{10923, 16383}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tags, err := PlaceTags(9, 16, top)
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for i, tag := range tags {
		m := top.MasterOfTag(tag)
		if m != top.Masters[i%3].Addr {
			t.Fatalf("shard %d tag %s on %s", i, tag, m)
		}
		per[m]++
	}
	if per["127.0.0.1:7001"] != 6 || per["127.0.0.1:7002"] != 5 || per["127.0.0.1:7003"] != 5 {
		t.Fatal(per)
	}
	if _, err := PlaceTags(9, 0, top); err == nil {
		t.Fatal("0 shards accepted")
	}
	if _, err := NewTopology(nil); err == nil {
		t.Fatal("empty topology accepted")
	}
}
