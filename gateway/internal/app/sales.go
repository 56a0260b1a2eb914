package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"flashsale/sharding"
	"flashsale/sharding/stock"
)

// salesSource feeds the catalog from the sales index. It does not fail the
// whole refresh for one sale: a sale that cannot be loaded keeps its last good
// description (a transient Redis error must not hide it), and one that never
// loaded (invalid JSON, failed validation) is skipped and logged once.
type salesSource struct {
	*stock.Store
	log *slog.Logger

	mu     sync.Mutex
	warned map[string]bool          // by the index entry
	last   map[int64]*sharding.Sale // last good description by sale id
}

func newSalesSource(st *stock.Store, log *slog.Logger) *salesSource {
	return &salesSource{Store: st, log: log, warned: map[string]bool{}, last: map[int64]*sharding.Sale{}}
}

// Sales lists the sales index and loads each sale.
func (s *salesSource) Sales(ctx context.Context) ([]*sharding.Sale, error) {
	c := s.Client()
	ids, err := c.Do(ctx, c.B().Smembers().Key(sharding.SalesKey).Build()).AsStrSlice()
	if err != nil {
		return nil, fmt.Errorf("listing sales: %w", err)
	}
	out := make([]*sharding.Sale, 0, len(ids))
	for _, v := range ids {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			s.warnOnce("sales index holds a malformed id", v, err)
			continue
		}
		sale, err := s.LoadSale(ctx, id)
		switch {
		case err == nil:
			s.mu.Lock()
			s.last[id] = sale
			s.mu.Unlock()
			out = append(out, sale)
		case errors.Is(err, stock.ErrNoSale):
		case ctx.Err() != nil:
			return nil, err
		default:
			s.mu.Lock()
			prev := s.last[id]
			s.mu.Unlock()
			if prev != nil {
				out = append(out, prev)
			}
			s.warnOnce("a sale could not be loaded; keeping its last good description if any", v, err)
		}
	}
	return out, nil
}

func (s *salesSource) warnOnce(msg, raw string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.warned[raw] {
		return
	}
	s.warned[raw] = true
	s.log.Warn(msg, "sale", raw, "err", err)
}
