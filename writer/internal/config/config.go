// Package config is the writer's configuration: one struct, its defaults in
// one table, loaded once from the environment and then flags (a flag wins over
// its variable, which wins over the default).
package config

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"flashsale/writer/orderevent"
)

// Config is everything the writer binary can be told.
type Config struct {
	DatabaseURL    string
	RedisAddrs     []string
	KafkaBrokers   []string
	Topic          string
	DeadLetter     string
	Group          string
	InstanceID     string
	BatchSize      int
	FetchMaxWait   time.Duration
	SessionTimeout time.Duration
	RetryMin       time.Duration
	RetryMax       time.Duration
	ExpiryInterval time.Duration
	ExpiryBatch    int
	Sales          []int64
	OutboxInterval time.Duration
	OutboxGrace    time.Duration
	GhostInterval  time.Duration
	GhostGrace     time.Duration
	StatusTTL      time.Duration
	RedisParallel  int
	AdminAddr      string
	ShutdownWait   time.Duration
	LogLevel       slog.Level
	Migrate        bool
}

// Option documents one setting: its flag, its environment variable and its
// default. Options is the single table both Load and the README follow.
type Option struct {
	Flag, Env, Default, Usage string
	set                       func(c *Config, v string) error
	get                       func(c *Config) string
}

// Options lists every setting, in README order.
var Options = []Option{
	str("database-url", "DATABASE_URL", "postgres://flashsale@127.0.0.1:55432/flashsale?sslmode=disable",
		"PostgreSQL connection URL", func(c *Config) *string { return &c.DatabaseURL }),
	list("redis", "FLASHSALE_REDIS", "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003,127.0.0.1:7004,127.0.0.1:7005,127.0.0.1:7006",
		"Redis Cluster seed addresses, comma separated", func(c *Config) *[]string { return &c.RedisAddrs }),
	list("kafka-brokers", "KAFKA_BROKERS", "127.0.0.1:9092",
		"Kafka seed brokers, comma separated", func(c *Config) *[]string { return &c.KafkaBrokers }),
	str("topic", "FLASHSALE_TOPIC", orderevent.DefaultTopic,
		"topic of order events", func(c *Config) *string { return &c.Topic }),
	str("dlq-topic", "FLASHSALE_DLQ_TOPIC", orderevent.DefaultDeadLetterTopic,
		"dead-letter topic for undecodable events", func(c *Config) *string { return &c.DeadLetter }),
	str("group", "FLASHSALE_GROUP", "flashsale-writer",
		"Kafka consumer group", func(c *Config) *string { return &c.Group }),
	str("instance-id", "FLASHSALE_INSTANCE_ID", "",
		"static group member id (stable per replica): a restarted writer takes its partitions back at once", func(c *Config) *string { return &c.InstanceID }),
	integer("batch-size", "FLASHSALE_BATCH_SIZE", 5000,
		"most events per poll and per PostgreSQL transaction", func(c *Config) *int { return &c.BatchSize }),
	dur("fetch-max-wait", "FLASHSALE_FETCH_MAX_WAIT", 50*time.Millisecond,
		"how long the broker may hold a fetch waiting for data", func(c *Config) *time.Duration { return &c.FetchMaxWait }),
	dur("session-timeout", "FLASHSALE_SESSION_TIMEOUT", 10*time.Second,
		"consumer group session timeout: how soon a dead writer's partitions move", func(c *Config) *time.Duration { return &c.SessionTimeout }),
	dur("retry-min", "FLASHSALE_RETRY_MIN", 50*time.Millisecond,
		"first backoff after a failed batch (doubles per attempt)", func(c *Config) *time.Duration { return &c.RetryMin }),
	dur("retry-max", "FLASHSALE_RETRY_MAX", 5*time.Second,
		"longest backoff between attempts of a batch", func(c *Config) *time.Duration { return &c.RetryMax }),
	dur("expiry-interval", "FLASHSALE_EXPIRY_INTERVAL", 30*time.Second,
		"period of the expiry job", func(c *Config) *time.Duration { return &c.ExpiryInterval }),
	integer("expiry-batch", "FLASHSALE_EXPIRY_BATCH", 1000,
		"most orders expired per transaction", func(c *Config) *int { return &c.ExpiryBatch }),
	{Flag: "sales", Env: "FLASHSALE_WRITER_SALES", Default: "", Usage: "sale ids whose orders this writer expires and whose outbox it replays, comma separated (empty: all)",
		set: func(c *Config, v string) error {
			c.Sales = nil
			for _, f := range splitList(v) {
				id, err := strconv.ParseInt(f, 10, 64)
				if err != nil || id <= 0 {
					return fmt.Errorf("sale id %q: want a positive integer", f)
				}
				c.Sales = append(c.Sales, id)
			}
			return nil
		},
		get: func(c *Config) string {
			parts := make([]string, len(c.Sales))
			for i, id := range c.Sales {
				parts[i] = strconv.FormatInt(id, 10)
			}
			return strings.Join(parts, ",")
		}},
	dur("outbox-interval", "FLASHSALE_OUTBOX_INTERVAL", 5*time.Second,
		"period of the replay of Redis effects not yet applied", func(c *Config) *time.Duration { return &c.OutboxInterval }),
	dur("outbox-grace", "FLASHSALE_OUTBOX_GRACE", 2*time.Second,
		"age before an unapplied outbox row is replayed by any writer", func(c *Config) *time.Duration { return &c.OutboxGrace }),
	dur("ghost-interval", "FLASHSALE_GHOST_INTERVAL", 30*time.Second,
		"period of the ghost sweep (reservations with no journal entry and no order; 0 turns it off)", func(c *Config) *time.Duration { return &c.GhostInterval }),
	dur("ghost-grace", "FLASHSALE_GHOST_GRACE", 2*time.Minute,
		"how long a reservation must stay without journal entry and order before the sweep releases it", func(c *Config) *time.Duration { return &c.GhostGrace }),
	dur("status-ttl", "FLASHSALE_STATUS_TTL", 24*time.Hour,
		"how long Redis keeps an order record after its final status", func(c *Config) *time.Duration { return &c.StatusTTL }),
	integer("redis-parallel", "FLASHSALE_REDIS_PARALLEL", 64,
		"Redis calls in flight when applying releases and statuses", func(c *Config) *int { return &c.RedisParallel }),
	str("admin-addr", "FLASHSALE_WRITER_ADMIN", "127.0.0.1:9103",
		"listen address of /healthz, /readyz, /metrics (empty: none)", func(c *Config) *string { return &c.AdminAddr }),
	dur("shutdown-timeout", "FLASHSALE_SHUTDOWN_TIMEOUT", 15*time.Second,
		"how long the in-flight batch may take after SIGTERM", func(c *Config) *time.Duration { return &c.ShutdownWait }),
	{Flag: "log-level", Env: "FLASHSALE_LOG_LEVEL", Default: "info", Usage: "debug, info, warn or error",
		set: func(c *Config, v string) error { return c.LogLevel.UnmarshalText([]byte(v)) },
		get: func(c *Config) string { return strings.ToLower(c.LogLevel.String()) }},
	{Flag: "migrate", Env: "FLASHSALE_MIGRATE", Default: "true", Usage: "apply pending migrations when `run` starts",
		set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			c.Migrate = b
			return err
		},
		get: func(c *Config) string { return strconv.FormatBool(c.Migrate) }},
}

// Default returns the configuration with every default applied.
func Default() Config {
	var c Config
	for _, o := range Options {
		if err := o.set(&c, o.Default); err != nil {
			panic("config: bad default for " + o.Flag + ": " + err.Error())
		}
	}
	return c
}

// Load builds the configuration: defaults, then the environment read through
// getenv, then the flags in args, which it registers on fs (a caller may
// register its own flags on fs first). It returns the first bad value or the
// first inconsistency, in words that name the flag and variable.
func Load(fs *flag.FlagSet, args []string, getenv func(string) string) (Config, error) {
	c := Default()
	for _, o := range Options {
		if v := getenv(o.Env); v != "" {
			if err := o.set(&c, v); err != nil {
				return c, fmt.Errorf("%s=%q: %w", o.Env, v, err)
			}
		}
	}
	for _, o := range Options {
		fs.Func(o.Flag, fmt.Sprintf("%s (env %s, default %s)", o.Usage, o.Env, o.get(&c)), func(v string) error {
			return o.set(&c, v)
		})
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate reports the first setting that cannot work.
func (c *Config) Validate() error {
	switch {
	case c.DatabaseURL == "":
		return errors.New("database url is empty (DATABASE_URL, -database-url)")
	case len(c.RedisAddrs) == 0:
		return errors.New("no redis address (FLASHSALE_REDIS, -redis)")
	case len(c.KafkaBrokers) == 0:
		return errors.New("no kafka broker (KAFKA_BROKERS, -kafka-brokers)")
	case c.Topic == "" || c.DeadLetter == "" || c.Group == "":
		return errors.New("topic, dead-letter topic and group must be set")
	case c.Topic == c.DeadLetter:
		return fmt.Errorf("dead-letter topic %q is the order topic", c.DeadLetter)
	case c.BatchSize < 1 || c.BatchSize > 100000:
		return fmt.Errorf("batch size %d: want 1..100000", c.BatchSize)
	case c.ExpiryBatch < 1 || c.ExpiryBatch > 100000:
		return fmt.Errorf("expiry batch %d: want 1..100000", c.ExpiryBatch)
	case c.RedisParallel < 1:
		return fmt.Errorf("redis parallelism %d: want >= 1", c.RedisParallel)
	case c.ExpiryInterval <= 0 || c.OutboxInterval <= 0 || c.FetchMaxWait <= 0:
		return errors.New("expiry interval, outbox interval and fetch max wait must be positive")
	case c.RetryMin <= 0 || c.RetryMax < c.RetryMin:
		return fmt.Errorf("retry backoff %s..%s: want 0 < min <= max", c.RetryMin, c.RetryMax)
	case c.StatusTTL < time.Second:
		return fmt.Errorf("status ttl %s: want at least 1s", c.StatusTTL)
	case c.OutboxGrace < 0 || c.ShutdownWait <= 0 || c.SessionTimeout < 0:
		return errors.New("outbox grace, shutdown timeout and session timeout must not be negative")
	case c.GhostInterval < 0 || (c.GhostInterval > 0 && c.GhostGrace < 10*time.Second):
		return fmt.Errorf("ghost sweep every %s with grace %s: want interval >= 0 and grace >= 10s", c.GhostInterval, c.GhostGrace)
	}
	return nil
}

func str(flag, env, def, usage string, p func(*Config) *string) Option {
	return Option{Flag: flag, Env: env, Default: def, Usage: usage,
		set: func(c *Config, v string) error { *p(c) = v; return nil },
		get: func(c *Config) string { return *p(c) }}
}

func list(flag, env, def, usage string, p func(*Config) *[]string) Option {
	return Option{Flag: flag, Env: env, Default: def, Usage: usage,
		set: func(c *Config, v string) error { *p(c) = splitList(v); return nil },
		get: func(c *Config) string { return strings.Join(*p(c), ",") }}
}

func integer(flag, env string, def int, usage string, p func(*Config) *int) Option {
	return Option{Flag: flag, Env: env, Default: strconv.Itoa(def), Usage: usage,
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("not an integer: %q", v)
			}
			*p(c) = n
			return nil
		},
		get: func(c *Config) string { return strconv.Itoa(*p(c)) }}
}

func dur(flag, env string, def time.Duration, usage string, p func(*Config) *time.Duration) Option {
	return Option{Flag: flag, Env: env, Default: def.String(), Usage: usage,
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("not a duration like 30s: %q", v)
			}
			*p(c) = d
			return nil
		},
		get: func(c *Config) string { return p(c).String() }}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
