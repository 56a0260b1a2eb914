package outbox

import (
	"fmt"
	"testing"

	"flashsale/sharding/orderevent"
)

// runsOf cuts one shard's events into runs of each item's chain: a record
// naming its item's last one extends the run; a gap, a record produced
// again, or another item's record interleaved keep each item's runs apart.
func TestRunsOf(t *testing.T) {
	ev := func(item int64, prev, entry string, reserved bool) Stored {
		return Stored{ItemID: item, Reserved: reserved, At: orderevent.Position{Shard: "s", Entry: entry, Prev: prev}}
	}
	events := []Stored{
		ev(1, "0-0", "1-0", true),
		ev(2, "0-0", "1-1", true),
		ev(1, "1-0", "2-0", false), // a pay: in the chain, nothing to mark
		ev(1, "2-0", "3-0", true),
		ev(2, "5-0", "6-0", true),  // past a gap
		ev(1, "1-0", "2-0", false), // produced again after a takeover
		ev(1, "2-0", "3-0", true),
	}
	got := ""
	for _, r := range runsOf(events) {
		got += fmt.Sprintf("%d:%s..%s/%d ", r.Item, r.Prev, r.Last, len(r.of))
	}
	want := "1:0-0..3-0/2 2:0-0..1-1/1 2:5-0..6-0/1 1:1-0..3-0/1 "
	if got != want {
		t.Fatalf("runs %s, want %s", got, want)
	}
}
