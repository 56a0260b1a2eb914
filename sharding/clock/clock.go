// Package clock is the wall clock of every stamp a flash-sale process hands
// to another one: an order's created and expires times, a ticket's expiry,
// a relay's heartbeat. Those are compared by other processes against their
// own clocks or Redis's, so a host whose clock disagrees shifts them; the
// design's rules say which clock each reads and the bound it needs
// (sharding/journal/DESIGN.md, "Clocks").
//
// Offset is a test knob: the lab (deploy/lab) gives each process a clock of
// its own by setting it, at start from FLASHSALE_CLOCK_OFFSET (a Go
// duration, "-2s") and during a run through the admin listener's
// /debug/clock. Production leaves it at zero. Durations a process measures
// for itself (budgets, leases, the fence's freshness) read the monotonic
// clock, which no offset moves.
package clock

import (
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// EnvOffset is the environment variable read at start.
const EnvOffset = "FLASHSALE_CLOCK_OFFSET"

// MaxOffset bounds the knob: a larger offset is refused.
const MaxOffset = 24 * time.Hour

var offset atomic.Int64

func init() {
	if v := os.Getenv(EnvOffset); v != "" {
		d, err := Parse(v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v; the clock stays unshifted\n", EnvOffset, err)
			return
		}
		offset.Store(int64(d))
	}
}

// Parse reads an offset: a Go duration within MaxOffset either way.
func Parse(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("clock offset %q: want a duration such as 300ms or -2s", v)
	}
	if d > MaxOffset || d < -MaxOffset {
		return 0, fmt.Errorf("clock offset %v: want at most %v either way", d, MaxOffset)
	}
	return d, nil
}

// Now returns this process's wall clock: time.Now moved by the offset.
func Now() time.Time { return Wall(time.Now()) }

// Wall moves t, a reading of time.Now, by the offset. The result keeps no
// monotonic reading: it is a stamp for another process, never a start of a
// duration this process measures.
func Wall(t time.Time) time.Time {
	if o := offset.Load(); o != 0 {
		return t.Round(0).Add(time.Duration(o))
	}
	return t
}

// Offset returns the offset.
func Offset() time.Duration { return time.Duration(offset.Load()) }

// Set sets the offset (a jump of the clock, as a VM migration or a bad NTP
// source makes one); it is refused beyond MaxOffset.
func Set(d time.Duration) error {
	if d > MaxOffset || d < -MaxOffset {
		return fmt.Errorf("clock offset %v: want at most %v either way", d, MaxOffset)
	}
	offset.Store(int64(d))
	return nil
}

// knob is whether the process started with EnvOffset set: only then does
// the admin listener serve /debug/clock.
var knob = os.Getenv(EnvOffset) != ""

// Knob reports whether this process takes offsets through its admin
// listener (it started with FLASHSALE_CLOCK_OFFSET set, as the lab starts
// every process; "0s" will do).
func Knob() bool { return knob }

// Handler serves the knob: GET answers the offset, PUT or POST with
// ?offset=<duration> sets it (400 for a bad one). Serve it at /debug/clock
// when Knob.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
		case http.MethodPut, http.MethodPost:
			d, err := Parse(r.URL.Query().Get("offset"))
			if err == nil {
				err = Set(d)
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		default:
			w.Header().Set("Allow", "GET, PUT, POST")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"offset\":%q,\"now\":%q}\n", Offset().String(), Now().UTC().Format(time.RFC3339Nano))
	})
}
