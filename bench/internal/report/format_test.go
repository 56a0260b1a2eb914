package report

import "testing"

func TestPluralAndMs(t *testing.T) {
	if got := plural(1, "worker", "workers"); got != "1 worker" {
		t.Errorf("plural(1) = %q", got)
	}
	if got := plural(2000, "worker", "workers"); got != "2,000 workers" {
		t.Errorf("plural(2000) = %q", got)
	}
	for v, want := range map[float64]string{0.84: "840µs", 12.34: "12.3ms", 5523: "5.52s", 250: "250ms"} {
		if got := ms(v); got != want {
			t.Errorf("ms(%v) = %q, want %q", v, got, want)
		}
	}
	if got := pct(1, 100000); got != "<0.01%" {
		t.Errorf("pct = %q", got)
	}
}
