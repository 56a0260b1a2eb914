// Package schema is the PostgreSQL schema of the flash sale and the one place
// outside the writer's own store where SQL against its tables is written.
// The writer owns PostgreSQL and applies the schema at start (`writer
// migrate`): goose migrations embedded in every binary that needs them, so
// the ops tool and the bench's tests apply the same migrations rather than
// copies of them.
//
// The other binaries read and write the writer's tables only through this
// package's functions, so that a schema change touches writer/ alone:
// flashctl writes a sale's rows (sales.go, brand.go, frontdoor.go) and the
// operator's acts (events.go), and reads what its commands show (read.go,
// ledger.go); the bench's audit reads what it checks (audit.go); the
// writer keeps each sale's draw log, which anyone may read (drawlog.go). A test
// (TestNoSQLOutsideTheWriter) fails on SQL text against these tables in a
// .go file outside writer/.
package schema

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationLockID is the advisory lock goose holds while migrating, so that
// writers starting together apply each migration once.
const migrationLockID = 0x666c617368 // "flash"

// Migrate applies every pending migration to the database behind pool. It is
// idempotent and safe to run from several processes at once (a session
// advisory lock serialises them). log may be nil.
func Migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	return migrateDB(ctx, db, sub, log)
}

func migrateDB(ctx context.Context, db *sql.DB, fsys fs.FS, log *slog.Logger) error {
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID), lock.WithLockTimeout(1, 120))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	res, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("applying migrations: %w", err)
	}
	for _, r := range res {
		if log != nil {
			log.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "took", r.Duration)
		}
	}
	return nil
}
