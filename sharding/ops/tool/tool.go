package tool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/schema"
)

// Tool runs the commands over a Redis Cluster client and, where one is
// needed, a PostgreSQL pool. The caller owns both and closes them. A Tool is
// safe for concurrent use; status.Watch is the only command that loops.
type Tool struct {
	Redis rueidis.Client
	Store *stock.Store
	// DB is nil when no DATABASE_URL is set: status then shows Redis only, and
	// preload and reconcile refuse to run.
	DB *pgxpool.Pool
}

// NewTool returns a Tool over c and db (db may be nil).
func NewTool(c rueidis.Client, db *pgxpool.Pool) *Tool {
	return &Tool{Redis: c, Store: stock.New(c), DB: db}
}

// ErrNoDatabase is returned by subcommands that need PostgreSQL when Tool.DB is nil.
var ErrNoDatabase = errors.New("this subcommand needs PostgreSQL: set --database-url or DATABASE_URL")

// NeedDB returns ErrNoDatabase when t has no PostgreSQL.
func (t *Tool) NeedDB() error {
	if t.DB == nil {
		return ErrNoDatabase
	}
	return nil
}

// LoadSale reads the sale's description from Redis, with a message an operator
// can act on when it is missing.
func (t *Tool) LoadSale(ctx context.Context, id int64) (*sale.Sale, error) {
	sale, err := t.Store.LoadSale(ctx, id)
	if errors.Is(err, stock.ErrNoSale) {
		msg := fmt.Errorf("sale %d is not in Redis (unknown sale, or not preloaded yet: run `flashctl preload --sale %d`): %w", id, id, stock.ErrNoSale)
		if t.DB != nil {
			if _, _, found, perr := schema.ReadSale(ctx, t.DB, id); perr == nil && !found {
				return nil, fmt.Errorf("unknown sale %d: neither Redis nor PostgreSQL has it: %w", id, stock.ErrNoSale)
			}
		}
		return nil, msg
	}
	return sale, err
}

// SaleState is the sale's status as the public sale description names it
// (SCHEDULED, ACTIVE, PAUSED, ENDED) at now, from its window and the
// operator's state; SOLD_OUT needs the stock, which Status reads.
func SaleState(s *sale.Sale, now time.Time) string {
	switch {
	case s.State == sale.StateEnded || !now.Before(s.EndsAt):
		return "ENDED"
	case s.State == sale.StatePaused:
		return "PAUSED"
	case now.Before(s.StartsAt):
		return "SCHEDULED"
	}
	return "ACTIVE"
}

// RecordAct writes an act on sale id in sale_events and returns "" or why it
// could not: the act is in force in Redis already, so a PostgreSQL away must
// not fail the command; the report says what the ledger will lack.
func (t *Tool) RecordAct(ctx context.Context, id int64, kind string, detail any) string {
	if t.DB == nil {
		return "no PostgreSQL (set --database-url or DATABASE_URL)"
	}
	if err := schema.RecordSaleEvent(ctx, t.DB, id, kind, detail); err != nil {
		return err.Error()
	}
	return ""
}

// AccessExpiry is when the keys of s's fair access expire: a day after its
// last payment window closed.
func AccessExpiry(s *sale.Sale) time.Time {
	return s.EndsAt.Add(s.Window() + 24*time.Hour)
}

// Stdin is where `--file -` and `--users -` read (a variable for the tests).
var Stdin io.Reader = os.Stdin
