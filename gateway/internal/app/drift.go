package app

import (
	"context"
	"time"
)

// driftEvery is how often the gateway reads the writer's drift readings.
const driftEvery = time.Second

// mirrorDrift exports the writer's last drift reading of every sale of the
// catalog whose last payment window has not been closed for coldMargin (the
// catalog's Forget drops the gauges of the others). The gateway cannot take
// a reading itself: P, the orders, is in PostgreSQL, which only the writer
// sees. Items the sale does not have are not exported.
func (a *App) mirrorDrift(ctx context.Context, now time.Time) error {
	snap := a.Catalog.Snapshot()
	n := now.UnixNano()
	var ids []int64
	for _, s := range snap.Sales() {
		if !s.Closed(n, coldMargin) {
			ids = append(ids, s.ID)
		}
	}
	c, cancel := context.WithTimeout(ctx, driftEvery)
	defer cancel()
	rs, err := a.store.ReadDrifts(c, ids)
	for id, r := range rs {
		s := snap.Sale(id)
		if s == nil {
			continue
		}
		items := make(map[int64]int64, len(s.Items))
		for _, it := range s.Items {
			if d, ok := r.Items[it.Item.ID]; ok {
				items[it.Item.ID] = d
			}
		}
		a.Metrics.Drift(id, items, now.Sub(r.At))
	}
	return err
}
