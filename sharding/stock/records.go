package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"flashsale/sharding"
)

// OrderRecord is the order as Redis keeps it for the gateway's GET.
type OrderRecord struct {
	UserID  uint64
	ItemID  int64
	Status  string
	Created time.Time
	Expires time.Time
	// Journal is the id of the reservation's entry in the shard's hand-off
	// journal, "" for a record the reserve script did not write.
	Journal string
	// Persisted is true once the writer marked the order after PostgreSQL
	// committed it (MarkPersisted, or a watermark of MarkPersistedUpTo at
	// or past the order's journal entry), or the writer recorded a status
	// other than PENDING (only the writer records those, after its commit).
	Persisted bool
	// Request is the record's request mark (act.lua, expire_claim.lua):
	// "pay" or "cancel" once the owner's request was accepted, "exp" once
	// the writer claimed the order for expiry, "" when none.
	Request string
}

// Shown is the status GET shows at now: the record's, except that a PENDING
// order the writer claimed for expiry, or past its deadline by shownGrace
// with no pay or cancel accepted before it, shows EXPIRED (it can no longer
// be paid: act.lua refuses), not only once the writer's expiry pass has
// returned its unit. The grace covers the clocks: act.lua reads the deadline
// from Redis's, now is the gateway's, and a pay accepted in time must never
// have been shown EXPIRED.
func (r *OrderRecord) Shown(now time.Time) string {
	if r.Status != StatusPending || r.Request == "pay" || r.Request == "cancel" {
		return r.Status
	}
	if r.Request == "exp" || !now.Before(r.Expires.Add(shownGrace)) {
		return StatusExpired
	}
	return r.Status
}

// shownGrace is how long past its deadline an unpaid order still shows
// PENDING (see Shown).
const shownGrace = 2 * time.Second

// MarkPersisted marks order id of userID on tag's shard as held by
// PostgreSQL (persisted.lua): in its record, or in the buyer record of an
// order held there lazily; marked is false when there is nothing (or a VOID
// record) to mark. A frozen shard answers ErrFrozen. Marking twice is
// harmless.
func (s *Store) MarkPersisted(ctx context.Context, tag string, userID uint64, id sharding.OrderID) (marked bool, err error) {
	m, err := s.MarkPersistedMany(ctx, tag, []uint64{userID}, []sharding.OrderID{id})
	if err != nil {
		return false, err
	}
	return m[0], nil
}

// MarkPersistedMany is MarkPersisted of several orders of tag's shard in one
// script call, ids[i] being users[i]'s: marked[i] tells of ids[i]. A frozen
// shard marks none of them and answers ErrFrozen.
func (s *Store) MarkPersistedMany(ctx context.Context, tag string, users []uint64, ids []sharding.OrderID) (marked []bool, err error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if len(users) != len(ids) {
		return nil, fmt.Errorf("marking orders persisted: %d users for %d orders", len(users), len(ids))
	}
	keys := make([]string, 0, 2+len(ids))
	keys = append(keys, string(sharding.AppendFenceKey(nil, tag)), string(sharding.AppendBuyersKey(nil, tag)))
	args := make([]string, 0, len(ids))
	for i, id := range ids {
		keys = append(keys, string(sharding.AppendOrderKey(nil, tag, id)))
		args = append(args, strconv.FormatUint(users[i], 10))
	}
	res, _ := s.evalAck(ctx, persistedScript, keys, args, false)
	if n, err := res.AsInt64(); err == nil && n < 0 {
		return nil, fmt.Errorf("marking orders persisted: %w", ErrFrozen)
	}
	arr, err := res.AsIntSlice()
	if err != nil {
		return nil, fmt.Errorf("marking orders persisted: %w", err)
	}
	if len(arr) != len(ids) {
		return nil, fmt.Errorf("marking orders persisted: %d replies for %d orders", len(arr), len(ids))
	}
	marked = make([]bool, len(ids))
	for i, n := range arr {
		if n != 0 && n != 1 {
			return nil, fmt.Errorf("marking orders persisted: reply %d for an order, want 0 or 1", n)
		}
		marked[i] = n == 1
	}
	return marked, nil
}

// PersistedSince is the field of a shard's persisted watermarks that a
// reshard sets on the shards it makes: the first entry of their journal.
// An order naming an earlier entry (one of a replaced shard's journal,
// trimmed there before the reshard) is persisted only by its own mark.
const PersistedSince = "since"

// Run is a run of one item's records from one shard's journal, each naming
// the one before it (orderevent.Position.Prev): PostgreSQL holds every entry
// of the item after Prev up to Last.
type Run struct {
	Item int64
	Prev string // the entry before the run's first; orderevent.NoPrev at the chain's start
	Last string
}

// MarkPersistedRuns raises the persisted watermarks of tag's shard over the
// runs that link to them, in order (see lua/persisted_upto.lua), and returns
// the indices of the runs that did not: their orders are to be marked one
// by one (MarkPersistedMany). A frozen shard answers ErrFrozen.
func (s *Store) MarkPersistedRuns(ctx context.Context, tag string, runs []Run) (unlinked []int, err error) {
	if len(runs) == 0 {
		return nil, nil
	}
	args := make([]string, 0, 3*len(runs))
	for _, r := range runs {
		args = append(args, strconv.FormatInt(r.Item, 10), r.Prev, r.Last)
	}
	keys := []string{string(sharding.AppendFenceKey(nil, tag)), string(sharding.AppendPersistedKey(nil, tag))}
	res, _ := s.evalAck(ctx, upToScript, keys, args, false)
	if n, err := res.AsInt64(); err == nil {
		if n < 0 {
			return nil, fmt.Errorf("raising persisted watermarks: %w", ErrFrozen)
		}
		return nil, fmt.Errorf("raising persisted watermarks: reply %d", n)
	}
	arr, err := res.AsIntSlice()
	if err != nil {
		return nil, fmt.Errorf("raising persisted watermarks: %w", err)
	}
	for _, n := range arr {
		if n < 1 || n > int64(len(runs)) {
			return nil, fmt.Errorf("raising persisted watermarks: run %d of %d", n, len(runs))
		}
		unlinked = append(unlinked, int(n-1))
	}
	return unlinked, nil
}

// SetStatus records status for order id on tag's shard, opening the record of
// an order held lazily by rec.UserID's buyer record (lua/order.lua). When
// there is neither it is recreated from rec, so GET keeps working after a
// failover lost it. A final status is never replaced by PENDING.
func (s *Store) SetStatus(ctx context.Context, tag string, id sharding.OrderID, rec OrderRecord, ttl time.Duration) error {
	args := []string{rec.Status, strconv.Itoa(ttlSeconds(ttl)),
		strconv.FormatUint(rec.UserID, 10), strconv.FormatInt(rec.ItemID, 10),
		strconv.FormatInt(rec.Created.UnixMilli(), 10), strconv.FormatInt(rec.Expires.UnixMilli(), 10)}
	keys := []string{string(sharding.AppendOrderKey(nil, tag, id)), string(sharding.AppendFenceKey(nil, tag)),
		string(sharding.AppendBuyersKey(nil, tag))}
	rr, _ := s.evalAck(ctx, statusScript, keys, args, false)
	n, err := rr.AsInt64()
	if err != nil {
		return fmt.Errorf("recording order status: %w", err)
	}
	if n < 0 {
		return fmt.Errorf("recording order status: %w", ErrFrozen)
	}
	return nil
}

// Order reads order id of userID from tag's shard (the user's home shard):
// its record, or, for an order not changed since its reservation, the buyer
// record that carries it (lua/order.lua). found is false when there is
// neither, or the record would have expired.
func (s *Store) Order(ctx context.Context, tag string, userID uint64, id sharding.OrderID) (rec OrderRecord, found bool, err error) {
	res := s.c.DoMulti(ctx,
		s.c.B().Hgetall().Key(string(sharding.AppendOrderKey(nil, tag, id))).Build(),
		s.c.B().Hget().Key(string(sharding.AppendBuyersKey(nil, tag))).Field(strconv.FormatUint(userID, 10)).Build(),
		s.c.B().Hgetall().Key(string(sharding.AppendPersistedKey(nil, tag))).Build())
	m, err := res[0].AsStrMap()
	if err != nil {
		return rec, false, fmt.Errorf("reading order: %w", err)
	}
	marks, err := res[2].AsStrMap()
	if err != nil {
		return rec, false, fmt.Errorf("reading persisted watermarks: %w", err)
	}
	if len(m) > 0 {
		if rec, err = parseRecord(m); err != nil {
			return rec, false, err
		}
	} else {
		v, err := res[1].ToString()
		if rueidis.IsRedisNil(err) {
			return rec, false, nil
		}
		if err != nil {
			return rec, false, fmt.Errorf("reading buyer record: %w", err)
		}
		b, err := ParseBuyer(v)
		if err != nil || !b.Lazy || b.OrderID != id || !time.Now().Before(b.Deadline) {
			return rec, false, err
		}
		rec = b.Record(userID)
	}
	// The writer's watermark of the item (persisted_upto.lua) covers the
	// reservation's entry, an entry of this shard's journal: not one of a
	// journal a reshard replaced ('since', the new journal's first entry).
	if wm := marks[strconv.FormatInt(rec.ItemID, 10)]; !rec.Persisted && rec.Journal != "" && wm != "" {
		since := marks[PersistedSince]
		rec.Persisted = sharding.EntryAtOrBefore(rec.Journal, wm) && (since == "" || sharding.EntryAtOrBefore(since, rec.Journal))
	}
	return rec, true, nil
}

// Buyer is a buyer record: the order its user holds on the shard, and, while
// the order has no record of its own (Lazy), the order itself (see
// lua/order.lua for the layout).
type Buyer struct {
	OrderID sharding.OrderID
	// Lazy is true when the record carries the order's fields below; a bare
	// order id (a record the ops tool restored) carries none.
	Lazy      bool
	ItemID    int64
	Created   time.Time
	Expires   time.Time
	Journal   string    // the reservation's journal entry id
	Attempt   string    // the attempt that holds the order
	Deadline  time.Time // when the order's record would expire
	Persisted bool      // PostgreSQL holds the order (persisted.lua)
}

// ParseBuyer decodes a buyer record (data from Redis: every field is checked).
func ParseBuyer(v string) (Buyer, error) {
	var b Buyer
	head, rest, lazy := strings.Cut(v, "|")
	id, ok := sharding.ParseOrderID([]byte(head))
	if !ok {
		return b, fmt.Errorf("buyer record %q: malformed order id", v)
	}
	b.OrderID, b.Lazy = id, lazy
	if !lazy {
		return b, nil
	}
	f := strings.Split(rest, "|")
	if len(f) != 8 {
		return b, fmt.Errorf("buyer record %q: %d fields, want 9", v, len(f)+1)
	}
	item, err1 := strconv.ParseInt(f[0], 10, 64)
	c, err2 := strconv.ParseInt(f[1], 10, 64)
	e, err3 := strconv.ParseInt(f[2], 10, 64)
	_, err4 := strconv.ParseInt(f[5], 10, 64) // the attempt's created ms (only the scripts read it)
	d, err5 := strconv.ParseInt(f[6], 10, 64)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil || item <= 0 || c <= 0 || e < c || d <= 0 ||
		!sharding.ValidEntryID(f[3]) || f[4] == "" || (f[7] != "" && f[7] != "1") {
		return b, fmt.Errorf("buyer record %q: malformed order fields", v)
	}
	b.ItemID = item
	b.Created, b.Expires, b.Deadline = time.UnixMilli(c).UTC(), time.UnixMilli(e).UTC(), time.UnixMilli(d).UTC()
	b.Journal, b.Attempt, b.Persisted = f[3], f[4], f[7] == "1"
	return b, nil
}

// Record returns the order a lazy buyer record of userID carries, as its
// record would read (status PENDING).
func (b *Buyer) Record(userID uint64) OrderRecord {
	return OrderRecord{UserID: userID, ItemID: b.ItemID, Status: StatusPending, Created: b.Created, Expires: b.Expires,
		Journal: b.Journal, Persisted: b.Persisted}
}

func parseRecord(m map[string]string) (OrderRecord, error) {
	var rec OrderRecord
	var err error
	if rec.UserID, err = strconv.ParseUint(m["user"], 10, 64); err != nil {
		return rec, fmt.Errorf("order record: user: %w", err)
	}
	if rec.ItemID, err = strconv.ParseInt(m["item"], 10, 64); err != nil {
		return rec, fmt.Errorf("order record: item: %w", err)
	}
	c, err1 := strconv.ParseInt(m["created"], 10, 64)
	e, err2 := strconv.ParseInt(m["expires"], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return rec, fmt.Errorf("order record: times: %w", err)
	}
	rec.Created, rec.Expires, rec.Status, rec.Journal = time.UnixMilli(c).UTC(), time.UnixMilli(e).UTC(), m["status"], m["j"]
	rec.Persisted = m["p"] == "1" || (rec.Status != StatusPending && rec.Status != StatusVoid)
	switch rec.Request = m["q"]; rec.Request {
	case "", "pay", "cancel", "exp":
	default:
		return rec, fmt.Errorf("order record: request mark %q is none of pay, cancel, exp", rec.Request)
	}
	return rec, nil
}

func ttlSeconds(d time.Duration) int {
	if d < time.Second {
		return 1
	}
	return int(d / time.Second)
}
