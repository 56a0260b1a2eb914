package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/schema"
)

// Tool runs the subcommands over a Redis Cluster client and, where one is
// needed, a PostgreSQL pool. The caller owns both and closes them. A Tool is
// safe for concurrent use; Watch is the only method that loops.
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

func (t *Tool) needDB() error {
	if t.DB == nil {
		return ErrNoDatabase
	}
	return nil
}

// loadSale reads the sale's description from Redis, with a message an operator
// can act on when it is missing.
func (t *Tool) loadSale(ctx context.Context, id int64) (*sale.Sale, error) {
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

// Report is what every subcommand returns: it renders as text for people.
type Report interface {
	Text(w io.Writer) error
}

// Write renders r as indented JSON when asJSON is set, else as text.
func Write(w io.Writer, r Report, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return r.Text(w)
}

// table writes aligned columns; cells are joined by tabs.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	fmt.Fprintln(t.tw, strings.Join(cells, "\t")+"\t")
}

func (t *table) flush() error { return t.tw.Flush() }

func itoa(n int64) string { return fmt.Sprintf("%d", n) }

func sum(v []int64) int64 {
	var s int64
	for _, x := range v {
		s += x
	}
	return s
}

// saleState is the sale's status as the public sale description names it
// (SCHEDULED, ACTIVE, PAUSED, ENDED) at now, from its window and the
// operator's state; SOLD_OUT needs the stock, which Status reads.
func saleState(s *sale.Sale, now time.Time) string {
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
