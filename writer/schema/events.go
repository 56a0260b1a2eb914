package schema

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The operator's acts on a sale (table sale_events, migration 00002):
// flashctl writes one row after Redis took the act, and the closing ledger
// reads them back for its timing (pause, resume, end) and its flows (units
// a reshard moved).

// Kinds of sale events.
const (
	EventPause   = "pause"
	EventResume  = "resume"
	EventEnd     = "end"
	EventReshard = "reshard"
)

// SaleEvent is one act on a sale. Detail is the act's JSON object: {} for
// pause, resume and end; ReshardDetail for a reshard.
type SaleEvent struct {
	Kind   string          `json:"kind"`
	At     time.Time       `json:"at"`
	Detail json.RawMessage `json:"detail"`
}

// ReshardDetail is the detail of a reshard event: the shard counts and the
// units it moved to the new layout, by item id.
type ReshardDetail struct {
	From  int             `json:"from"`
	To    int             `json:"to"`
	Units map[int64]int64 `json:"units"`
}

// RecordSaleEvent writes one act of kind on sale id with detail (any value
// that marshals to a JSON object; nil is {}).
func RecordSaleEvent(ctx context.Context, pool *pgxpool.Pool, id int64, kind string, detail any) error {
	b := []byte("{}")
	if detail != nil {
		var err error
		if b, err = json.Marshal(detail); err != nil {
			return fmt.Errorf("recording %s of sale %d: %w", kind, id, err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO sale_events (sale_id, kind, detail) VALUES ($1, $2, $3::jsonb)`, id, kind, string(b)); err != nil {
		return fmt.Errorf("recording %s of sale %d: %w", kind, id, err)
	}
	return nil
}

// SaleEvents returns the acts on sale id in the order they were recorded.
func SaleEvents(ctx context.Context, pool *pgxpool.Pool, id int64) ([]SaleEvent, error) {
	rows, err := pool.Query(ctx, `SELECT kind, at, detail::text FROM sale_events WHERE sale_id = $1 ORDER BY at, id`, id)
	if err != nil {
		return nil, fmt.Errorf("reading the acts on sale %d: %w", id, err)
	}
	var out []SaleEvent
	var e SaleEvent
	var detail string
	_, err = pgx.ForEachRow(rows, []any{&e.Kind, &e.At, &detail}, func() error {
		e.At, e.Detail = e.At.UTC(), json.RawMessage(detail)
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the acts on sale %d: %w", id, err)
	}
	return out, nil
}
