package stock

import (
	"context"
	"fmt"
	"strconv"

	"flashsale/sharding"
)

// CompareAndSetStock sets item's stock on the shard with tag to next only if it
// still is expected (-1 for a missing key). It reports false when the value had
// changed: the caller re-reads and decides again. Repairs use it so they never
// overwrite a purchase that happened after they looked.
func (s *Store) CompareAndSetStock(ctx context.Context, tag string, itemID, expected, next int64) (bool, error) {
	exp := ""
	if expected >= 0 {
		exp = strconv.FormatInt(expected, 10)
	}
	rr, _ := s.evalAck(ctx, casScript,
		[]string{string(sharding.AppendStockKey(nil, tag, itemID)), string(sharding.AppendFenceKey(nil, tag))},
		[]string{exp, strconv.FormatInt(next, 10)}, false)
	n, err := rr.AsInt64()
	if err != nil {
		return false, fmt.Errorf("compare-and-set of stock: %w", err)
	}
	if n < 0 {
		return false, fmt.Errorf("compare-and-set of stock: %w", ErrFrozen)
	}
	return n == 1, nil
}

// Buyers returns the orders the buyer records of the shard with tag name
// (user id -> order id; see ParseBuyer).
func (s *Store) Buyers(ctx context.Context, tag string) (map[uint64]sharding.OrderID, error) {
	m, err := s.c.Do(ctx, s.c.B().Hgetall().Key(string(sharding.AppendBuyersKey(nil, tag))).Build()).AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("reading buyers of %s: %w", tag, err)
	}
	out := make(map[uint64]sharding.OrderID, len(m))
	for u, o := range m {
		user, err := strconv.ParseUint(u, 10, 64)
		b, err2 := ParseBuyer(o)
		if err != nil || err2 != nil {
			return nil, fmt.Errorf("buyers of %s hold a malformed entry %q=%q", tag, u, o)
		}
		out[user] = b.OrderID
	}
	return out, nil
}

// RestoreBuyer records user -> order id on the shard with tag unless the user
// already holds an entry; it reports whether it wrote. Reconcile uses it for an
// active order in PostgreSQL whose buyer record a failover lost, so the user
// cannot buy a second unit.
func (s *Store) RestoreBuyer(ctx context.Context, tag string, userID uint64, id sharding.OrderID) (bool, error) {
	n, err := s.doAck(ctx, s.c.B().Hsetnx().Key(string(sharding.AppendBuyersKey(nil, tag))).Field(strconv.FormatUint(userID, 10)).Value(id.String()).Build()).AsInt64()
	if err != nil {
		return false, fmt.Errorf("restoring buyer %d: %w", userID, err)
	}
	return n == 1, nil
}

// DropBuyer removes the buyer record of userID on the shard with tag only while
// it still names order id; it reports whether it removed it. Reconcile uses it
// for a reservation that neither PostgreSQL nor an order record knows. It
// returns ErrFrozen while a reshard fences the shard.
func (s *Store) DropBuyer(ctx context.Context, tag string, userID uint64, id sharding.OrderID) (bool, error) {
	rr, _ := s.evalAck(ctx, dropBuyerScript,
		[]string{string(sharding.AppendBuyersKey(nil, tag)), string(sharding.AppendFenceKey(nil, tag))},
		[]string{strconv.FormatUint(userID, 10), id.String()}, false)
	n, err := rr.AsInt64()
	if err != nil {
		return false, fmt.Errorf("dropping buyer %d: %w", userID, err)
	}
	if n < 0 {
		return false, fmt.Errorf("dropping buyer %d: %w", userID, ErrFrozen)
	}
	return n == 1, nil
}
