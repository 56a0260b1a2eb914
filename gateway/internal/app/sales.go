package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"flashsale/sharding"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

// salesSource feeds the catalog from the sales index. It does not fail the
// whole refresh for one sale: a sale that cannot be loaded keeps its last good
// description (a transient Redis error must not hide it), and one that never
// loaded (invalid JSON, failed validation) is skipped and logged once.
//
// A refresh reads every sale in the index, once a second: the descriptions
// are read in one pipelined round trip, and one that did not change since the
// last refresh is not decoded again. (Read one GET after another, 250 sales
// took over a second under a crowd's load, so every refresh timed out and the
// catalog stopped seeing changes.)
type salesSource struct {
	*stock.Store
	log *slog.Logger

	mu     sync.Mutex
	warned map[string]bool     // by the index entry
	last   map[int64]knownSale // last good description by sale id
}

// knownSale is a sale's last good description and the stored text it was
// decoded from.
type knownSale struct {
	raw  string
	sale *sale.Sale
}

func newSalesSource(st *stock.Store, log *slog.Logger) *salesSource {
	return &salesSource{Store: st, log: log, warned: map[string]bool{}, last: map[int64]knownSale{}}
}

// Sales lists the sales index and loads each sale.
func (s *salesSource) Sales(ctx context.Context) ([]*sale.Sale, error) {
	c := s.Client()
	members, err := c.Do(ctx, c.B().Smembers().Key(sharding.SalesKey).Build()).AsStrSlice()
	if err != nil {
		return nil, fmt.Errorf("listing sales: %w", err)
	}
	ids := make([]int64, 0, len(members))
	for _, v := range members {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id <= 0 {
			s.warnOnce("sales index holds a malformed id", v, cmp.Or(err, errors.New("not a positive id")))
			continue
		}
		ids = append(ids, id)
	}
	stored := s.ReadSales(ctx, ids)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("loading sales: %w", ctx.Err())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*sale.Sale, 0, len(stored))
	for i := range stored {
		if sl := s.resolveLocked(&stored[i]); sl != nil {
			out = append(out, sl)
		}
	}
	return out, nil
}

// resolveLocked returns the description to serve for one stored sale: the
// last one decoded when its text did not change or could not be read or
// decoded now, nil for a sale gone from Redis or never loaded.
func (s *salesSource) resolveLocked(st *stock.StoredSale) *sale.Sale {
	prev, known := s.last[st.ID]
	if errors.Is(st.Err, stock.ErrNoSale) {
		delete(s.last, st.ID)
		return nil
	}
	if st.Err == nil && known && prev.raw == st.Raw {
		return prev.sale
	}
	sale, err := st.Decode()
	if err == nil {
		s.last[st.ID] = knownSale{raw: st.Raw, sale: sale}
		return sale
	}
	s.warnLocked("a sale could not be loaded; keeping its last good description if any", strconv.FormatInt(st.ID, 10), err)
	return prev.sale // nil when never loaded
}

func (s *salesSource) warnOnce(msg, raw string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.warnLocked(msg, raw, err)
}

func (s *salesSource) warnLocked(msg, raw string, err error) {
	if s.warned[raw] {
		return
	}
	s.warned[raw] = true
	s.log.Warn(msg, "sale", raw, "err", err)
}
