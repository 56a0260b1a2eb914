package journal

import (
	"testing"
	"time"
)

// A relay takes nothing while the lease is being taken and after a failed
// round, until the shard has answered for the span; each failing round moves
// the end on.
func TestQuietAfterAnOutage(t *testing.T) {
	var q quiet
	t0 := time.Unix(1_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	const span = 3 * time.Second
	steps := []struct {
		at             float64
		taking, broken bool
		want           bool
	}{
		{0, true, false, true},     // taking the lease
		{2.9, false, false, true},  // within the span
		{3, false, false, false},   // over
		{10, false, true, true},    // the round at 9 s failed
		{20, false, true, true},    // and so did every one up to this
		{22.9, false, false, true}, // the one at 20 s answered: quiet until 23 s
		{23, false, false, false},
		{40, false, false, false}, // rounds that answer start no quiet
	}
	for _, s := range steps {
		q.broken = s.broken
		if got := q.holds(at(s.at), s.taking, span); got != s.want {
			t.Fatalf("at %v s (taking %v, last round failed %v): holds %v, want %v", s.at, s.taking, s.broken, got, s.want)
		}
	}
}
