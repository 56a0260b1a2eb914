// Package store is the writer's PostgreSQL layer: the migrations of package
// schema, the idempotent persistence of order-event batches,
// the expiry of unpaid orders and the outbox of Redis effects (the sale rows
// are written by `flashctl sale create` through package schema).
//
// PostgreSQL is the source of truth. Every status change that Redis must learn
// about (an order leaving PENDING) writes a row to the releases outbox in the
// same transaction as the change; package outbox applies those rows to Redis
// after the commit and marks them done, so a writer that dies between the
// commit and the Redis call replays them at its next start.
//
// Every status change also writes its row of the order history
// (order_history: status, cause, time; see history.go) in the statement that
// makes it, so `flashctl sale report` can account for every unit from
// PostgreSQL alone.
//
// items.sold counts the item's PENDING and PAID orders: a reservation adds one,
// an expiry or cancellation takes one away, a FAILED order never counts.
//
// User ids are uint64 on the wire and bigint in PostgreSQL; they are stored as
// their two's-complement bit pattern (ids above 2^63-1 read back negative in
// SQL but round-trip exactly through this package).
//
// A Store is safe for concurrent use; several writer processes may share one
// database (expiry and outbox replay claim rows with FOR UPDATE SKIP LOCKED).
package store

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"flashsale/writer/schema"
)

// Store runs the writer's queries over a pgx pool it does not own.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a Store over pool; the caller closes the pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Pool returns the underlying pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Open connects a pool to url and pings it.
func Open(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parsing database url: %w", err)
	}
	return OpenConfig(ctx, cfg)
}

// OpenConfig connects a pool with cfg and pings it.
func OpenConfig(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to postgresql: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to postgresql: %w", err)
	}
	return pool, nil
}

// Migrate applies every pending migration (package schema) to the database
// behind pool; see schema.Migrate.
func Migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	return schema.Migrate(ctx, pool, log)
}

// Ping checks that PostgreSQL answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("pinging postgresql: %w", err)
	}
	return nil
}
