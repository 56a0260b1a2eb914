// Package soldout keeps the gateway's local sold-out flags: one per item and
// one per item shard, read lock-free on every purchase so that a sold-out item
// is refused without a Redis call.
//
// Shard flags are set from SOLD_OUT replies of the reserve script
// (Item.MarkShard) and from stock readings (Item.Observe); they are cleared by
// readings and by this gateway's borrows (Item.Refilled). The item flag is set
// only by a reading of zero on every shard (or a reply, with one shard). The
// poller reads every flagged item every poll interval (default 200ms), one
// pipelined round trip of 2*S commands (stock.Store.Available). Stock returned by an expiry, a
// cancellation, a failed hand-off or a reshard is therefore sellable on every
// gateway within one poll interval plus one round trip, well inside the one
// second the specification allows. The cost is 2*S commands per flagged item
// per interval per gateway (S shards): for 10 items of 16 shards, 1,600
// commands per second per gateway, nothing next to the purchase traffic. Polling was chosen
// over pub/sub (a lost message would hide stock until the next message) and
// over client-side caching (invalidations of hot stock keys would flood every
// gateway during the sale): a poll is self-healing and its cost is bounded.
//
// The poller also refreshes every item's remaining stock about once a second
// for the public sale description.
package soldout

import (
	"sync/atomic"
)

// Item holds the flags of one item of one sale. It is safe for concurrent
// use: readers see each flag atomically; the poller is the only writer that
// clears.
type Item struct {
	all       atomic.Bool   // every shard flagged
	shard     []atomic.Bool // shard i answered SOLD_OUT or was read at 0
	flagged   atomic.Int32  // number of flagged shards
	remaining atomic.Int64  // sum of the last reading, -1 before the first
}

// NewItem returns the flags of an item with shards shards, all clear.
func NewItem(shards int) *Item {
	if shards < 1 {
		shards = 1
	}
	it := &Item{shard: make([]atomic.Bool, shards)}
	it.remaining.Store(-1)
	return it
}

// Shards returns the shard count the flags were made for.
func (it *Item) Shards() int { return len(it.shard) }

// SoldOut reports whether every shard of the item is flagged.
func (it *Item) SoldOut() bool { return it.all.Load() }

// ShardSoldOut reports whether shard i is flagged.
func (it *Item) ShardSoldOut(i int) bool { return it.shard[i].Load() }

// Any reports whether any shard is flagged.
func (it *Item) Any() bool { return it.flagged.Load() > 0 }

// Remaining returns the remaining units of the last reading, or -1 before the
// first one.
func (it *Item) Remaining() int64 { return it.remaining.Load() }

// MarkShard flags shard i after a SOLD_OUT reply and reports whether the
// whole item is now sold out.
//
// With one shard the reply settles the item. With more, a reply never sets
// the item flag by itself: units move between shards (borrowing), so the other
// shards' flags may be stale, and only a full reading (Observe) may declare
// the item sold out.
func (it *Item) MarkShard(i int) (itemSoldOut bool) {
	if it.shard[i].CompareAndSwap(false, true) {
		if int(it.flagged.Add(1)) == len(it.shard) && len(it.shard) == 1 {
			it.all.Store(true)
		}
	}
	return it.all.Load()
}

// Refilled records that n units were moved to shard i (a borrow this gateway
// made): the shard is no longer flagged, so its buyers go straight to Redis.
func (it *Item) Refilled(i int, n int64) {
	if n > 0 && it.shard[i].CompareAndSwap(true, false) {
		it.flagged.Add(-1)
	}
}

// Observe applies one reading of the item's stock per shard (from
// stock.Store.Available or ReadStock): a shard with stock is cleared, a shard
// at zero is flagged, a shard read stock.Unknown (it did not answer) keeps
// its flag, and the item flag follows: clear when a shard has stock, set when
// every shard read zero, kept otherwise. It returns how many shards were
// cleared. The poller and the borrow path call it; a concurrent MarkShard is
// harmless because both agree on what a zero means.
func (it *Item) Observe(perShard []int64) (cleared int) {
	if len(perShard) != len(it.shard) {
		return 0
	}
	var sum int64
	withStock, unknown := 0, 0
	for _, n := range perShard {
		switch {
		case n > 0:
			sum += n
			withStock++
		case n < 0:
			unknown++
		}
	}
	for i, n := range perShard {
		switch {
		case n > 0 && it.shard[i].CompareAndSwap(true, false):
			it.flagged.Add(-1)
			cleared++
		case n == 0 && it.shard[i].CompareAndSwap(false, true):
			it.flagged.Add(1)
		}
	}
	switch {
	case withStock > 0:
		it.all.Store(false)
	case unknown == 0:
		it.all.Store(true)
	}
	it.remaining.Store(sum)
	return cleared
}
