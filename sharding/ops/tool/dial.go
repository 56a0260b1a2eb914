package tool

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	shared "flashsale/sharding/config"
	"flashsale/sharding/stock"
)

// DialRedis opens a Redis Cluster client with r, without client-side
// caching (the tool reads what it is about to change); a client that cannot
// be made is a ConnectError.
func DialRedis(r shared.Redis) (rueidis.Client, error) {
	opt := r.ClientOption()
	opt.DisableCache = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, &ConnectError{fmt.Errorf("connecting to redis %s: %w", strings.Join(r.Addrs, ","), err)}
	}
	return c, nil
}

// Connect opens Redis with r and PostgreSQL with p, and returns a Tool over
// them; done closes both. Without needDB a PostgreSQL that cannot be reached
// is left out (the report then shows Redis only) instead of failing the
// command.
func Connect(ctx context.Context, r shared.Redis, p shared.Postgres, needDB bool) (t *Tool, done func(), err error) {
	c, err := DialRedis(r)
	if err != nil {
		return nil, nil, err
	}
	db, err := DialPostgres(ctx, p, needDB)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	// The tool's writes (a pause or end, a sale record, a repair) are
	// acknowledged by a replica, as the gateway's and the writer's are: a
	// failover right after the command must not undo what it reported done.
	b := stock.NewBatcher(c, 16, 5*time.Second)
	b.SetAcks(1, 100*time.Millisecond)
	t = NewTool(c, db)
	t.Store.SetBatcher(b)
	return t, func() {
		b.Close()
		if db != nil {
			db.Close()
		}
		c.Close()
	}, nil
}

// DialPostgres opens and pings a pool; when the database is optional, one
// that does not answer within 2 s gives a nil pool.
func DialPostgres(ctx context.Context, p shared.Postgres, needed bool) (*pgxpool.Pool, error) {
	pc, err := p.PoolConfig()
	if err != nil {
		return nil, Usagef("%v", err)
	}
	wait := 10 * time.Second
	if !needed {
		wait = 2 * time.Second
	}
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	db, err := pgxpool.NewWithConfig(pctx, pc)
	if err == nil {
		err = db.Ping(pctx)
	}
	if err == nil {
		return db, nil
	}
	if db != nil {
		db.Close()
	}
	if !needed {
		return nil, nil
	}
	return nil, &ConnectError{fmt.Errorf("connecting to postgresql: %w", err)}
}
