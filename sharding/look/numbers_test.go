package look

import (
	"math"
	"testing"
)

func TestCommas(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", -1000: "-1,000", 1006029: "1,006,029",
		-12345: "-12,345", math.MaxInt64: "9,223,372,036,854,775,807", math.MinInt64: "-9,223,372,036,854,775,808"} {
		if got := Commas(n); got != want {
			t.Errorf("Commas(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestCount: every integer kind the two reports pass their templates, named
// ones too, and a float rounded; other values are left as they print.
func TestCount(t *testing.T) {
	type units int64
	for _, c := range []struct {
		v    any
		want string
	}{
		{1234567, "1,234,567"}, {int64(-4200), "-4,200"}, {uint64(math.MaxUint64), "18,446,744,073,709,551,615"},
		{int32(1000), "1,000"}, {units(25000), "25,000"}, {12345.6, "12,346"}, {0.4, "0"},
		{"n/a", "n/a"}, {"-", "-"}, {"", ""}, {true, "true"},
	} {
		if got := Count(c.v); got != c.want {
			t.Errorf("Count(%#v) = %q, want %q", c.v, got, c.want)
		}
	}
}
