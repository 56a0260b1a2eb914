// Package config is the writer's configuration: one struct, its defaults in
// Default, loaded once from flags and the environment (a flag wins over its
// variable, which wins over the default). The settings every binary shares
// (PostgreSQL, Redis, Kafka, admin, logging, shutdown, their TLS and
// passwords) are flashsale/sharding/config's Common, embedded here; its
// naming rule (-some-name is FLASHSALE_SOME_NAME) holds for the writer's own
// settings too.
package config

import (
	"errors"
	"fmt"
	"time"

	shared "flashsale/sharding/config"
	"flashsale/sharding/orderevent"
)

// Config is everything the writer binary can be told.
type Config struct {
	// Common is PostgreSQL, Redis, Kafka, the admin listener (empty: none),
	// logging and the shutdown grace (how long the batch in flight may take
	// after SIGTERM).
	shared.Common

	Topic           string
	DeadLetter      string
	Group           string
	InstanceID      string
	BatchSize       int
	FetchMaxWait    time.Duration
	SessionTimeout  time.Duration
	RetryMin        time.Duration
	RetryMax        time.Duration
	ExpiryInterval  time.Duration
	ExpiryBatch     int
	Sales           []int64
	OutboxInterval  time.Duration
	OutboxGrace     time.Duration
	GhostInterval   time.Duration
	DriftInterval   time.Duration
	DrawLogInterval time.Duration
	GhostGrace      time.Duration
	StatusTTL       time.Duration
	RedisParallel   int
	ReplicaAcks     int
	ReplicaTimeout  time.Duration
	Migrate         bool
}

// Default returns the configuration with every default applied: the one
// place they are written (the common ones in package shared).
func Default() Config {
	return Config{
		Common:          shared.NewCommon("127.0.0.1:9103", 15*time.Second),
		Topic:           orderevent.DefaultTopic,
		DeadLetter:      orderevent.DefaultDeadLetterTopic,
		Group:           orderevent.DefaultGroup,
		BatchSize:       5000,
		FetchMaxWait:    50 * time.Millisecond,
		SessionTimeout:  10 * time.Second,
		RetryMin:        50 * time.Millisecond,
		RetryMax:        5 * time.Second,
		ExpiryInterval:  5 * time.Second,
		ExpiryBatch:     1000,
		OutboxInterval:  5 * time.Second,
		OutboxGrace:     2 * time.Second,
		GhostInterval:   30 * time.Second,
		DriftInterval:   time.Second,
		DrawLogInterval: time.Second,
		GhostGrace:      2 * time.Minute,
		StatusTTL:       24 * time.Hour,
		RedisParallel:   64,
		ReplicaAcks:     1,
		ReplicaTimeout:  50 * time.Millisecond,
		Migrate:         true,
	}
}

// RedisCallTimeout bounds one batch of the writer's Redis writes (see
// stock.NewBatcher); -replica-timeout must leave room in it.
const RedisCallTimeout = 5 * time.Second

// Register adds the common settings and the writer's own to set, in README
// order.
func (c *Config) Register(set *shared.Set) {
	c.Common.Register(set, shared.UsePostgres|shared.UseRedis|shared.UseKafka|shared.UseAdmin|shared.UseShutdown)
	for _, s := range []shared.Setting{
		{Name: "topic", Usage: "topic of order events", Value: shared.String(&c.Topic)},
		{Name: "dlq-topic", Usage: "dead-letter topic for undecodable events", Value: shared.String(&c.DeadLetter)},
		{Name: "group", Usage: "Kafka consumer group", Value: shared.String(&c.Group)},
		{Name: "instance-id", Usage: "static group member id (stable per replica): a restarted writer takes its partitions back at once", Value: shared.String(&c.InstanceID)},
		{Name: "batch-size", Usage: "most events per poll and per PostgreSQL transaction", Value: shared.Int(&c.BatchSize)},
		{Name: "fetch-max-wait", Usage: "how long the broker may hold a fetch waiting for data", Value: shared.Duration(&c.FetchMaxWait)},
		{Name: "session-timeout", Usage: "consumer group session timeout: how soon a dead writer's partitions move", Value: shared.Duration(&c.SessionTimeout)},
		{Name: "retry-min", Usage: "first backoff after a failed batch (doubles per attempt)", Value: shared.Duration(&c.RetryMin)},
		{Name: "retry-max", Usage: "longest backoff between attempts of a batch", Value: shared.Duration(&c.RetryMax)},
		{Name: "expiry-interval", Usage: "longest time between expiry passes; a pass also runs at each payment deadline (at most 4 a second), so an unpaid order's unit is back on sale about 250 ms after it (an idle pass is one indexed query)", Value: shared.Duration(&c.ExpiryInterval)},
		{Name: "expiry-batch", Usage: "most orders expired per transaction", Value: shared.Int(&c.ExpiryBatch)},
		{Name: "sales", Usage: "sale ids whose orders this writer expires and whose outbox it replays, comma separated (empty: all)", Value: shared.IDs(&c.Sales)},
		{Name: "outbox-interval", Usage: "period of the replay of Redis effects not yet applied", Value: shared.Duration(&c.OutboxInterval)},
		{Name: "outbox-grace", Usage: "age before an unapplied outbox row is replayed by any writer", Value: shared.Duration(&c.OutboxGrace)},
		{Name: "drift-interval", Usage: "period of the online invariant Q - (S + M + P + J) per item of live sales (flashsale_writer_stock_drift_units; 0 turns it off)", Value: shared.Duration(&c.DriftInterval)},
		{Name: "draw-log-interval", Usage: "period of the copy of drawn sales' draw logs from Redis to PostgreSQL (table draw_log; 0 turns it off)", Value: shared.Duration(&c.DrawLogInterval)},
		{Name: "ghost-interval", Usage: "period of the ghost sweep (reservations with no journal entry and no order; 0 turns it off)", Value: shared.Duration(&c.GhostInterval)},
		{Name: "ghost-grace", Usage: "how long a reservation must stay without journal entry and order before the sweep releases it", Value: shared.Duration(&c.GhostGrace)},
		{Name: "status-ttl", Usage: "how long Redis keeps an order record after its final status", Value: shared.Duration(&c.StatusTTL)},
		{Name: "redis-parallel", Usage: "Redis calls in flight when applying releases and statuses", Value: shared.Int(&c.RedisParallel)},
		{Name: "replica-acks", Usage: "replicas each Redis write (release, status, expiry claim, persisted mark) waits for (WAIT); one whose WAIT fails is retried; 0 for a Redis without replicas", Value: shared.Int(&c.ReplicaAcks)},
		{Name: "replica-timeout", Usage: "longest wait for the replicas; a shortfall is counted and the write stands", Value: shared.Duration(&c.ReplicaTimeout)},
		{Name: "migrate", Usage: "apply pending migrations when `run` starts (-migrate=false to skip)", Value: shared.Bool(&c.Migrate)},
	} {
		set.Add(s)
	}
}

// Load builds the configuration: defaults, then the environment read through
// getenv, then the flags in args. set may carry a command's own flag-only
// settings, registered before; its Args are the positional arguments left.
// It returns every bad value and inconsistency, in words that name the flag.
func Load(set *shared.Set, args []string, getenv func(string) string) (Config, error) {
	c := Default()
	c.Register(set)
	if err := set.Parse(args, getenv, set.Output()); err != nil {
		return c, err
	}
	return c, errors.Join(c.Common.Resolve(), c.Validate())
}

// Validate reports the first of the writer's own settings that cannot work.
func (c *Config) Validate() error {
	switch {
	case c.Topic == "" || c.DeadLetter == "" || c.Group == "":
		return errors.New("-topic, -dlq-topic and -group must be set")
	case c.Topic == c.DeadLetter:
		return fmt.Errorf("-dlq-topic %q is the order topic", c.DeadLetter)
	case c.BatchSize < 1 || c.BatchSize > 100000:
		return fmt.Errorf("-batch-size %d: want 1..100000", c.BatchSize)
	case c.ExpiryBatch < 1 || c.ExpiryBatch > 100000:
		return fmt.Errorf("-expiry-batch %d: want 1..100000", c.ExpiryBatch)
	case c.RedisParallel < 1:
		return fmt.Errorf("-redis-parallel %d: want >= 1", c.RedisParallel)
	case c.ReplicaAcks < 0 || c.ReplicaAcks > 16:
		return fmt.Errorf("-replica-acks %d: want 0..16", c.ReplicaAcks)
	case c.ReplicaAcks > 0 && (c.ReplicaTimeout < time.Millisecond || c.ReplicaTimeout > RedisCallTimeout/2):
		return fmt.Errorf("-replica-timeout %s: want 1ms..%s", c.ReplicaTimeout, RedisCallTimeout/2)
	case c.ExpiryInterval <= 0 || c.OutboxInterval <= 0 || c.FetchMaxWait <= 0:
		return errors.New("-expiry-interval, -outbox-interval and -fetch-max-wait must be positive")
	case c.RetryMin <= 0 || c.RetryMax < c.RetryMin:
		return fmt.Errorf("retry backoff -retry-min %s -retry-max %s: want 0 < min <= max", c.RetryMin, c.RetryMax)
	case c.StatusTTL < time.Second:
		return fmt.Errorf("-status-ttl %s: want at least 1s", c.StatusTTL)
	case c.OutboxGrace < 0 || c.SessionTimeout < 0:
		return errors.New("-outbox-grace and -session-timeout must not be negative")
	case c.DriftInterval < 0:
		return fmt.Errorf("-drift-interval %s: want >= 0", c.DriftInterval)
	case c.DrawLogInterval < 0:
		return fmt.Errorf("-draw-log-interval %s: want >= 0", c.DrawLogInterval)
	case c.GhostInterval < 0 || (c.GhostInterval > 0 && c.GhostGrace < 10*time.Second):
		return fmt.Errorf("ghost sweep -ghost-interval %s -ghost-grace %s: want interval >= 0 and grace >= 10s", c.GhostInterval, c.GhostGrace)
	}
	return nil
}
