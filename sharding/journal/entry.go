// Package journal moves the hand-off journal to Kafka: every shard of a sale
// keeps a Redis stream of the order events its scripts journaled (reserve.lua,
// act.lua), and a Relay produces them to the orders topic with franz-go
// (idempotent producer, acks from all in-sync replicas, key = item id) and
// deletes an entry only after Kafka acknowledged it.
//
// One relay owns a shard at a time, under a lease in Redis renewed by every
// round of relay.lua; any number of processes run a Relay, and a shard whose
// owner died is taken by another within the lease's lifetime. Entries are
// produced in journal order, so an order's pay or cancel follows its
// reservation; a takeover may produce an entry twice, which the writer's
// idempotence absorbs.
//
// An entry is taken only after a hold (by the Redis server's clock): a
// gateway whose reserve reply was lost voids the attempt within that time
// (void.lua), and an entry is either voided or taken, never both.
package journal

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"flashsale/sharding/orderevent"
)

// Entry is one journal entry as the stream holds it.
type Entry struct {
	ID     string            // stream entry id, "<ms>-<seq>"
	Fields map[string]string // as written by the script
}

// Decode turns an entry into the order event it journals (see
// orderevent.FromFields: every field's range is checked, the entry comes from
// another process), naming the entry in any error.
func (e *Entry) Decode() (orderevent.Event, error) {
	ev, err := orderevent.FromFields(e.Fields)
	if err != nil {
		return ev, fmt.Errorf("journal entry %s: %w", e.ID, err)
	}
	return ev, nil
}

// IDTime returns the server time encoded in a stream entry id.
func IDTime(id string) (time.Time, bool) {
	for i := 0; i < len(id); i++ {
		if id[i] == '-' {
			ms, err := strconv.ParseInt(id[:i], 10, 64)
			if err != nil {
				return time.Time{}, false
			}
			return time.UnixMilli(ms), true
		}
	}
	return time.Time{}, false
}

// Round is one relay round: relay.lua's reply, and the entries read after it.
type Round struct {
	Owner   bool   // false: another relay holds the lease
	Backlog int64  // entries in the journal (before this round's take)
	Oldest  string // id of the oldest entry, "" when empty
	Upto    string // the entries to take are those up to this id ("" for none)
	Lost    bool   // the lease was just taken over from one lost, not released: nothing closed
	Entries []Entry
	Chain   Chain // the shard's item chains before Entries (read with them)
}

// parseRound reads relay.lua's reply into a Round without its entries.
func parseRound(arr []rueidis.RedisMessage) (Round, error) {
	var r Round
	if len(arr) == 0 {
		return r, errors.New("relay round: empty reply")
	}
	code, err := arr[0].AsInt64()
	if err != nil {
		return r, fmt.Errorf("relay round: %w", err)
	}
	switch code {
	case 0, 2:
		return r, nil
	case 1:
	default:
		return r, fmt.Errorf("relay round: unknown code %d", code)
	}
	if len(arr) != 5 {
		return r, fmt.Errorf("relay round: reply of %d elements", len(arr))
	}
	lost, err := arr[4].AsInt64()
	if err != nil || lost < 0 || lost > 1 {
		return r, fmt.Errorf("relay round: lost flag %d: %v", lost, err)
	}
	r.Lost = lost == 1
	r.Owner = true
	if r.Backlog, err = arr[1].AsInt64(); err != nil || r.Backlog < 0 {
		return r, fmt.Errorf("relay round: backlog: %v", err)
	}
	if r.Oldest, err = arr[2].ToString(); err != nil {
		return r, fmt.Errorf("relay round: oldest: %w", err)
	}
	if r.Upto, err = arr[3].ToString(); err != nil {
		return r, fmt.Errorf("relay round: upto: %w", err)
	}
	if _, ok := IDTime(r.Upto); r.Upto != "" && !ok {
		return r, fmt.Errorf("relay round: upto %q is not an entry id", r.Upto)
	}
	return r, nil
}

// parseEntries reads an XRANGE reply.
func parseEntries(arr []rueidis.RedisMessage) ([]Entry, error) {
	es := make([]Entry, 0, len(arr))
	for _, m := range arr {
		e, err := m.ToArray()
		if err != nil || len(e) != 2 {
			return nil, errors.New("journal read: malformed entry")
		}
		id, err1 := e[0].ToString()
		kv, err2 := e[1].ToArray()
		if errors.Join(err1, err2) != nil || len(kv)%2 != 0 {
			return nil, fmt.Errorf("journal read: malformed entry %q", id)
		}
		f := make(map[string]string, len(kv)/2)
		for i := 0; i < len(kv); i += 2 {
			k, _ := kv[i].ToString()
			v, _ := kv[i+1].ToString()
			f[k] = v
		}
		es = append(es, Entry{ID: id, Fields: f})
	}
	return es, nil
}
