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
// sees. Items the sale does not have are not exported. A sale with no
// reading in Redis (no writer read it, or the last reading expired) has no
// drift series and an age that grows from when a reading was first due: ten
// minutes before its start (when the writer starts reading it) or this
// gateway's start, whichever is later; so that FlashsaleDriftUnread fires.
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
	for _, id := range ids {
		s := snap.Sale(id)
		r, ok := rs[id]
		if !ok {
			if err == nil { // none, not unread
				due := s.StartsAt.Add(-driftLead)
				if due.Before(a.born) {
					due = a.born
				}
				a.Metrics.NoDrift(id, now.Sub(due))
			}
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

// driftLead is how long before a sale's start the writer begins reading its
// drift (writer/internal/drift: a sale is live from ten minutes before).
const driftLead = 10 * time.Minute
