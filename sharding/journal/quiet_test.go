package journal

import (
	"testing"
	"time"
)

// A relay takes nothing after a failed round until the shard has answered
// for the span; each failing round moves the end on.
func TestQuietAfterAnOutage(t *testing.T) {
	q := quiet{span: 3 * time.Second}
	t0 := time.Unix(1_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	steps := []struct {
		at     float64
		broken bool
		want   bool
	}{
		{0, false, false},   // a lease held, rounds answering
		{10, true, true},    // the round at 9 s failed
		{12.9, false, true}, // the one at 10 s answered: quiet until 13 s
		{13, false, false},  // over
		{20, true, true},    // the round at 19 s failed
		{30, true, true},    // and so did every one up to this
		{32.9, false, true}, // the one at 30 s answered: quiet until 33 s
		{33, false, false},
		{40, false, false}, // rounds that answer start no quiet
	}
	for _, s := range steps {
		q.broken = s.broken
		if got := q.holds(at(s.at)); got != s.want {
			t.Fatalf("at %v s (last round failed %v): holds %v, want %v", s.at, s.broken, got, s.want)
		}
	}
}
