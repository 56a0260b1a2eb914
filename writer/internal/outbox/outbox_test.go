package outbox

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

// layouts is a fake layout reader: it answers err when set, else the next
// layout, and counts the readings.
type layouts struct {
	reads int
	err   error
	sale  *sale.Sale
	slack time.Duration // the longest a reading was given
}

func (l *layouts) load(ctx context.Context, id int64) (*sale.Sale, error) {
	l.reads++
	d, ok := ctx.Deadline()
	if !ok {
		l.slack = time.Duration(1<<63 - 1)
	} else if left := time.Until(d); left > l.slack {
		l.slack = left
	}
	if l.err != nil {
		return nil, l.err
	}
	if l.sale == nil {
		return nil, fmt.Errorf("sale %d: %w", id, stock.ErrNoSale)
	}
	return l.sale, nil
}

// TestSaleFallsBackOnTheLastLayout: while the sale key's master is away, the
// layout read last (up to staleLayout old) serves, read again at most once per
// SaleCacheTTL; without one, or with one older than staleLayout, the reading's
// error is returned. A sale Redis does not have is nil, not an error.
func TestSaleFallsBackOnTheLastLayout(t *testing.T) {
	const ttl = 10 * time.Minute // no reading expires by itself within the test
	ctx := context.Background()
	a := New(Config{SaleCacheTTL: ttl}, nil, nil, nil, nil)
	l := &layouts{sale: &sale.Sale{ID: 7, Shards: []string{"{s7:0}", "{s7:1}"}}}
	a.load = l.load

	got, err := a.sale(ctx, 7)
	if err != nil || got != l.sale || l.reads != 1 {
		t.Fatalf("first reading: %v, %v after %d reads; want the layout after 1", got, err, l.reads)
	}
	if got, err = a.sale(ctx, 7); err != nil || got != l.sale || l.reads != 1 {
		t.Fatalf("within the TTL: %v, %v after %d reads; want the cached layout, no new read", got, err, l.reads)
	}

	// The reading is due again (its TTL passed) and the master is away.
	age := func(d time.Duration) {
		c := a.sales[7]
		c.at = c.at.Add(-d)
		a.sales[7] = c
	}
	age(ttl + time.Second)
	l.err = context.DeadlineExceeded
	if got, err = a.sale(ctx, 7); err != nil || got != l.sale || l.reads != 2 {
		t.Fatalf("master away: %v, %v after %d reads; want the last layout after a failed read", got, err, l.reads)
	}
	if got, err = a.sale(ctx, 7); err != nil || got != l.sale || l.reads != 2 {
		t.Fatalf("master away, just tried: %v, %v after %d reads; want the last layout with no new read", got, err, l.reads)
	}

	// Back: the next due reading replaces the layout.
	c := a.sales[7]
	c.tried = c.tried.Add(-ttl - time.Second)
	a.sales[7] = c
	l.err = nil
	l.sale = &sale.Sale{ID: 7, Shards: []string{"{s7:2}"}, Version: 2}
	if got, err = a.sale(ctx, 7); err != nil || got != l.sale || l.reads != 3 {
		t.Fatalf("master back: %v, %v after %d reads; want the new layout", got, err, l.reads)
	}

	// Too old to fall back on: the error, not a layout up to an hour stale.
	age(staleLayout)
	l.err = errors.New("master away")
	if got, err = a.sale(ctx, 7); !errors.Is(err, l.err) || got != nil {
		t.Fatalf("layout older than %v: %v, %v; want the reading's error", staleLayout, got, err)
	}

	// No layout read before: nothing to fall back on.
	if got, err = a.sale(ctx, 8); !errors.Is(err, l.err) || got != nil {
		t.Fatalf("never read: %v, %v; want the reading's error", got, err)
	}

	// A sale Redis has no layout of: nil, no error; and no fallback on nil.
	l.err, l.sale = nil, nil
	if got, err = a.sale(ctx, 9); err != nil || got != nil {
		t.Fatalf("no such sale: %v, %v; want nil, nil", got, err)
	}
	c = a.sales[9]
	c.at = c.at.Add(-ttl - time.Second)
	a.sales[9] = c
	l.err = errors.New("master away")
	if got, err = a.sale(ctx, 9); !errors.Is(err, l.err) {
		t.Fatalf("no such sale, then master away: %v, %v; want the error", got, err)
	}
	// A master away does not fail a reading at once (it waits for the
	// failover): each reading is bounded, so that the fallback applies.
	if l.slack > saleLoadTimeout {
		t.Fatalf("a reading was given %v; want at most %v", l.slack, saleLoadTimeout)
	}
}
