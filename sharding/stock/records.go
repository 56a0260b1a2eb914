package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

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
	// Persisted is true once the writer marked the record after PostgreSQL
	// committed the order (MarkPersisted), or the writer recorded a status
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

// MarkPersisted marks order id's record on tag's shard as held by PostgreSQL
// (persisted.lua); marked is false when there is no record (or a VOID one) to
// mark. A frozen shard answers ErrFrozen. Marking twice is harmless.
func (s *Store) MarkPersisted(ctx context.Context, tag string, id sharding.OrderID) (marked bool, err error) {
	m, err := s.MarkPersistedMany(ctx, tag, []sharding.OrderID{id})
	if err != nil {
		return false, err
	}
	return m[0], nil
}

// MarkPersistedMany is MarkPersisted of several orders of tag's shard in one
// script call: marked[i] tells of ids[i]. A frozen shard marks none of them
// and answers ErrFrozen.
func (s *Store) MarkPersistedMany(ctx context.Context, tag string, ids []sharding.OrderID) (marked []bool, err error) {
	if len(ids) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, 1+len(ids))
	keys = append(keys, string(sharding.AppendFenceKey(nil, tag)))
	for _, id := range ids {
		keys = append(keys, string(sharding.AppendOrderKey(nil, tag, id)))
	}
	res, _ := s.evalAck(ctx, persistedScript, keys, nil, false)
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

// SetStatus records status for order id on tag's shard. When the record is
// missing it is recreated from rec, so GET keeps working after a failover lost
// it. A final status is never replaced by PENDING.
func (s *Store) SetStatus(ctx context.Context, tag string, id sharding.OrderID, rec OrderRecord, ttl time.Duration) error {
	args := []string{rec.Status, strconv.Itoa(ttlSeconds(ttl)),
		strconv.FormatUint(rec.UserID, 10), strconv.FormatInt(rec.ItemID, 10),
		strconv.FormatInt(rec.Created.UnixMilli(), 10), strconv.FormatInt(rec.Expires.UnixMilli(), 10)}
	rr, _ := s.evalAck(ctx, statusScript, []string{string(sharding.AppendOrderKey(nil, tag, id)), string(sharding.AppendFenceKey(nil, tag))}, args, false)
	n, err := rr.AsInt64()
	if err != nil {
		return fmt.Errorf("recording order status: %w", err)
	}
	if n < 0 {
		return fmt.Errorf("recording order status: %w", ErrFrozen)
	}
	return nil
}

// Order reads the order record of id from tag's shard; found is false when
// there is none.
func (s *Store) Order(ctx context.Context, tag string, id sharding.OrderID) (rec OrderRecord, found bool, err error) {
	m, err := s.c.Do(ctx, s.c.B().Hgetall().Key(string(sharding.AppendOrderKey(nil, tag, id))).Build()).AsStrMap()
	if err != nil {
		return rec, false, fmt.Errorf("reading order: %w", err)
	}
	if len(m) == 0 {
		return rec, false, nil
	}
	rec, err = parseRecord(m)
	return rec, err == nil, err
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
