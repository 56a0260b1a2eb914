// Package app wires the writer: it turns a config.Config into connected parts
// (PostgreSQL pool, Redis client, Kafka consumer, outbox applier, expiry job,
// admin server) and runs them, and it implements the command line (Main).
//
// Tests drive an App in-process: New, then Run with a context they cancel; the
// parts are exported fields so a test can step the expiry job or read metrics.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	shared "flashsale/sharding/config"
	"flashsale/sharding/startup"
	"flashsale/sharding/stock"
	"flashsale/writer/internal/config"
	"flashsale/writer/internal/consume"
	"flashsale/writer/internal/drawlog"
	"flashsale/writer/internal/drift"
	"flashsale/writer/internal/expiry"
	"flashsale/writer/internal/ghost"
	"flashsale/writer/internal/obs"
	"flashsale/writer/internal/outbox"
	"flashsale/writer/internal/store"
)

// App is one writer. Its fields are set by New and owned by the App; Close
// releases them.
type App struct {
	Cfg      config.Config
	Log      *slog.Logger
	Pool     *pgxpool.Pool
	Store    *store.Store
	Redis    rueidis.Client
	Stock    *stock.Store
	Metrics  *obs.Metrics
	Applier  *outbox.Applier
	Expiry   *expiry.Job
	Consumer *consume.Consumer
	Ghost    *ghost.Sweeper  // nil when -ghost-interval is 0
	Drift    *drift.Watcher  // nil when -drift-interval is 0
	DrawLog  *drawlog.Copier // nil when -draw-log-interval is 0
	batcher  *stock.Batcher
	admin    *obs.Server   // nil without -admin
	start    startup.State // why /readyz is red while New waits
}

// New serves the admin endpoints (when an address is configured: /readyz
// stays red until New is done), connects everything cfg names and, when
// cfg.Migrate is set, applies pending migrations. While PostgreSQL or Redis
// is away or starting, New waits for it (sharding/startup) for at most
// -start-wait (0: until ctx ends). Nothing is consumed before Run.
func New(ctx context.Context, cfg config.Config, log *slog.Logger) (_ *App, err error) {
	a := &App{Cfg: cfg, Log: log, Metrics: obs.NewMetrics()}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	if cfg.Admin != "" {
		if a.admin, err = obs.Listen(cfg.Admin, a.Metrics, a.checks(), log); err != nil {
			return nil, fmt.Errorf("admin server on %s: %w", cfg.Admin, err)
		}
		log.Info("admin server listening", "addr", a.admin.Addr())
	}
	if err = a.connect(ctx); err != nil {
		return nil, err
	}
	if err = a.build(); err != nil {
		return nil, err
	}
	a.start.Done()
	return a, nil
}

// connect opens the PostgreSQL pool (migrating when -migrate is set) and
// the Redis client, each waited for while its server is away or starting.
func (a *App) connect(ctx context.Context) (err error) {
	cfg, log := a.Cfg, a.Log
	err = startup.Wait{What: "postgresql", Max: cfg.StartWait, Log: log, State: &a.start}.Until(ctx, func(ctx context.Context) (err error) {
		a.Pool, err = openPool(ctx, cfg)
		return err
	})
	if err != nil {
		return err
	}
	a.Store = store.New(a.Pool)
	if cfg.Migrate {
		if err = store.Migrate(ctx, a.Pool, log); err != nil {
			return err
		}
	}
	err = startup.Wait{What: "redis", Max: cfg.StartWait, Log: log, State: &a.start}.Until(ctx, func(context.Context) (err error) {
		a.Redis, err = NewRedis(cfg.Redis)
		return err
	})
	if err != nil {
		return err
	}
	return nil
}

// build makes the parts that use the connections: the stock store and its
// acknowledged batcher, the outbox, the expiry job, the consumer, the
// drift and ghost watchers and the draw log's copier.
func (a *App) build() (err error) {
	cfg, log := a.Cfg, a.Log
	a.Stock = stock.New(a.Redis)
	// Every Redis write of the writer is acknowledged by the replicas: a
	// release, status or expiry claim that a failover lost after the master
	// answered would otherwise be marked done (a unit never returned, a pay
	// accepted after its order's claim). One whose WAIT fails is an error,
	// and the outbox replay or the next pass does it again (each is
	// idempotent).
	a.batcher = stock.NewBatcher(a.Redis, redisLanes, config.RedisCallTimeout)
	a.batcher.SetAcks(cfg.ReplicaAcks, cfg.ReplicaTimeout)
	a.Stock.SetBatcher(a.batcher)
	a.Metrics.ReplicaAcks(a.batcher.Shortfalls, a.batcher.Unconfirmed)
	a.Applier = outbox.New(outbox.Config{
		StatusTTL:      cfg.StatusTTL,
		SaleCacheTTL:   outboxSaleCacheTTL,
		Concurrency:    cfg.RedisParallel,
		ReplayInterval: cfg.OutboxInterval,
		ReplayGrace:    cfg.OutboxGrace,
		ReplayBatch:    outboxReplayBatch,
		QueueLen:       outboxQueueLen,
		Sales:          cfg.Sales,
	}, a.Store, a.Stock, a.Metrics, log)
	a.Expiry = expiry.New(expiry.Config{Interval: cfg.ExpiryInterval, Batch: cfg.ExpiryBatch, Sales: cfg.Sales}, a.Store, a.Stock, a.Applier, a.Metrics, log)
	a.Consumer, err = consume.New(consume.Config{
		Kafka:           cfg.Kafka.Opts(),
		Topic:           cfg.Topic,
		DeadLetterTopic: cfg.DeadLetter,
		Group:           cfg.Group,
		InstanceID:      cfg.InstanceID,
		BatchSize:       cfg.BatchSize,
		FetchMaxWait:    cfg.FetchMaxWait,
		SessionTimeout:  cfg.SessionTimeout,
		RetryMin:        cfg.RetryMin,
		RetryMax:        cfg.RetryMax,
		DrainTimeout:    cfg.ShutdownGrace,
	}, a.Store, a.Applier, a.Metrics, log)
	if err != nil {
		return err
	}
	if cfg.DriftInterval > 0 {
		a.Drift = drift.New(drift.Config{Interval: cfg.DriftInterval, Sales: cfg.Sales}, a.Store.Pool(), a.Stock, a.Metrics.Registry, log)
	}
	if cfg.DrawLogInterval > 0 {
		a.DrawLog = drawlog.New(drawlog.Config{Interval: cfg.DrawLogInterval, Sales: cfg.Sales}, a.Store.Pool(), a.Stock, a.Metrics, log)
	}
	if cfg.GhostInterval > 0 {
		a.Ghost = ghost.New(ghost.Config{Interval: cfg.GhostInterval, Grace: cfg.GhostGrace, Sales: cfg.Sales},
			a.Store, a.Stock, a.Consumer.GroupLag, a.Metrics, log)
	}
	return nil
}

// checks are the admin server's readiness checks: the start over, then
// PostgreSQL and Kafka answering. While New still waits, only "start" is red
// (with what it waits for): the others have nothing to check yet.
func (a *App) checks() map[string]obs.Check {
	started := func(c func() obs.Check) obs.Check {
		return func(ctx context.Context) error {
			if a.start.Err() != nil {
				return nil // "start" says why
			}
			return c()(ctx)
		}
	}
	return map[string]obs.Check{
		"start":      func(context.Context) error { return a.start.Err() },
		"postgresql": started(func() obs.Check { return a.Store.Ping }),
		"kafka":      started(func() obs.Check { return a.Consumer.Ping }),
		"redis":      started(func() obs.Check { return a.pingRedis }),
	}
}

// pingRedis reads the cluster's masters and pings each: the writer marks
// orders persisted, returns stock and sweeps ghosts there (a replica that
// is down is not the writer's concern: its WAITs come back short).
func (a *App) pingRedis(ctx context.Context) error {
	nodes := a.Redis.Nodes()
	top, err := stock.Topology(ctx, a.Redis) // from a node that answers
	if err != nil {
		return err
	}
	var failed []string
	for _, m := range top.Masters {
		c, ok := nodes[m.Addr]
		if !ok {
			failed = append(failed, m.Addr+": not connected")
			continue
		}
		if err := c.Do(ctx, c.B().Ping().Build()).Error(); err != nil {
			failed = append(failed, m.Addr+": "+err.Error())
		}
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

// Fixed tunables of the outbox, not worth a flag each.
const (
	outboxSaleCacheTTL = time.Second // a reshard is seen within a second
	outboxReplayBatch  = 1000
	outboxQueueLen     = 256
	redisLanes         = 16 // batching lanes of the Redis writes: one per master
)

// NewRedis returns a rueidis client for r (seeds, ACL user, TLS).
func NewRedis(r shared.Redis) (rueidis.Client, error) {
	c, err := rueidis.NewClient(r.ClientOption())
	if err != nil {
		return nil, fmt.Errorf("connecting to redis: %w", err)
	}
	return c, nil
}

// openPool connects the PostgreSQL pool cfg names (URL and password file).
func openPool(ctx context.Context, cfg config.Config) (*pgxpool.Pool, error) {
	pc, err := cfg.Postgres.PoolConfig()
	if err != nil {
		return nil, err
	}
	return store.OpenConfig(ctx, pc)
}

// Run replays the outbox, runs the expiry job and consumes until ctx ends,
// then finishes the batch in flight and stops. It returns the first error
// that stopped it.
func (a *App) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { a.Applier.Run(ctx) })
	wg.Go(func() { a.Expiry.Run(ctx) })
	if a.Ghost != nil {
		wg.Go(func() { a.Ghost.Run(ctx) })
	}
	if a.Drift != nil {
		wg.Go(func() { a.Drift.Run(ctx) })
	}
	if a.DrawLog != nil {
		wg.Go(func() { a.DrawLog.Run(ctx) })
	}
	a.Log.Info("writer consuming", "topic", a.Cfg.Topic, "group", a.Cfg.Group)
	err := a.Consumer.Run(ctx)
	wg.Wait()
	a.Log.Info("writer stopped")
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// Close releases every connection New made. It is safe on a partly built App.
func (a *App) Close() {
	if a.admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = a.admin.Close(ctx)
		cancel()
		a.admin = nil
	}
	if a.Consumer != nil {
		a.Consumer.Close()
	}
	if a.batcher != nil {
		a.batcher.Close()
	}
	if a.Redis != nil {
		a.Redis.Close()
	}
	if a.Pool != nil {
		a.Pool.Close()
	}
}
