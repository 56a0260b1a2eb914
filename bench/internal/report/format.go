package report

import (
	"strconv"

	"flashsale/sharding/look"
)

// plural writes "1 worker", "2 workers", with separators.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return look.Commas(int64(n)) + " " + many
}

// ms formats a latency in milliseconds with three significant digits and a
// unit people read at a glance: 840µs, 12.3ms, 5.52s.
func ms(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1000:
		return strconv.FormatFloat(v/1000, 'f', digits(v/1000), 64) + "s"
	case v >= 1:
		return strconv.FormatFloat(v, 'f', digits(v), 64) + "ms"
	}
	return strconv.FormatFloat(v*1000, 'f', digits(v*1000), 64) + "µs"
}

func digits(v float64) int {
	switch {
	case v >= 100:
		return 0
	case v >= 10:
		return 1
	}
	return 2
}

// pct formats a share of a total as a percentage, small shares visible.
func pct(n, total int64) string {
	if total <= 0 {
		return "0%"
	}
	p := 100 * float64(n) / float64(total)
	switch {
	case p == 0:
		return "0%"
	case p < 0.01:
		return "<0.01%"
	case p < 10:
		return strconv.FormatFloat(p, 'f', 2, 64) + "%"
	}
	return strconv.FormatFloat(p, 'f', 1, 64) + "%"
}

// secs formats seconds after the start: 0.912s.
func secs(s float64) string { return strconv.FormatFloat(s, 'f', 3, 64) + "s" }
