package journal

import (
	"strconv"

	"flashsale/sharding"
	"flashsale/sharding/orderevent"
)

// The item chains. Every record the relay produces names, beside its own
// journal entry, the entry of the same shard and item produced just before
// it (orderevent.Position.Prev): the item's chain. The writer raises an
// item's persisted watermark only over a run of records whose chain links
// to it (lua/persisted_upto.lua), so an entry that left the journal without
// reaching PostgreSQL (a dead letter, a record a partition failover lost
// before the relay's fix of issue 55, records split over partitions by a
// change of the topic's partition count) breaks the chain, and the orders
// after it are marked one by one instead of being covered by a watermark
// that would call the missing one persisted.
//
// The chain's last link per item is kept in Redis ({tag}:chain), written by
// relay.lua with the trim of the entries Kafka acknowledged: any relay that
// takes the shard over names the same predecessors, so a record produced
// twice carries the same chain both times.

// Chain is a shard's item chains as a round read them: item id -> the last
// entry of the item Kafka acknowledged; "" for an item whose stored link is
// malformed (its next record names no predecessor, so the writer marks it
// by itself).
type Chain map[int64]string

// parseChain reads the chain hash (data from Redis: a field that is no item
// id is skipped, a value that is no entry id is kept as "").
func parseChain(m map[string]string) Chain {
	c := make(Chain, len(m))
	for k, v := range m {
		item, err := strconv.ParseInt(k, 10, 64)
		if err != nil || item <= 0 {
			continue
		}
		if !sharding.ValidEntryID(v) {
			v = ""
		}
		c[item] = v
	}
	return c
}

// links names the predecessors of a round's entries.
type links struct {
	stored Chain            // the chain the round read
	last   map[int64]string // the last entry of each item met so far in the round
}

// prev returns the predecessor of entry id of item and makes id the item's
// last link: NoPrev for the item's first entry, "" when the stored link is
// malformed or not before id.
func (l *links) prev(item int64, id string) string {
	if l.last == nil {
		l.last = map[int64]string{}
	}
	p, ok := l.last[item]
	if !ok {
		p, ok = l.stored[item]
		if !ok {
			p = orderevent.NoPrev
		}
	}
	l.last[item] = id
	if p != "" && !sharding.EntryBefore(p, id) {
		return ""
	}
	return p
}

// entryItem returns the item an entry names, 0 when it names none a chain
// can use: an entry that does not decode is dead-lettered, and still counts
// in its item's chain when its item field reads, so the record after it
// names it and the writer, which never gets it, marks that record by
// itself.
func entryItem(e *Entry) int64 {
	item, err := strconv.ParseInt(e.Fields[orderevent.FieldItem], 10, 64)
	if err != nil || item <= 0 {
		return 0
	}
	return item
}

// ack is what Kafka acknowledged of a shard's journal, which the next round
// deletes and records: the last entry of the acknowledged prefix and each
// item's last entry in it.
type ack struct {
	upto  string
	items map[int64]string
}

// args appends relay.lua's acknowledgement arguments: the last id, then
// item, entry id pairs.
func (a ack) args(dst []string) []string {
	if a.upto == "" {
		return dst
	}
	dst = append(dst, a.upto)
	for item, id := range a.items {
		dst = append(dst, strconv.FormatInt(item, 10), id)
	}
	return dst
}
