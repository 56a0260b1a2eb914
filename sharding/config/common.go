package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Defaults of the common settings: the local stack of `make up`.
const (
	DefaultRedis       = "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003,127.0.0.1:7004,127.0.0.1:7005,127.0.0.1:7006"
	DefaultKafka       = "127.0.0.1:9092"
	DefaultDatabaseURL = "postgres://flashsale@127.0.0.1:55432/flashsale?sslmode=disable"
)

// Parts says which common settings a binary has.
type Parts uint8

// The parts of Common. Logging is always there.
const (
	UseRedis Parts = 1 << iota
	UseKafka
	UsePostgres
	UseAdmin
	UseShutdown
)

// Common is the settings every binary shares; each binary embeds it in its
// own Config and registers the parts it uses.
type Common struct {
	Redis    Redis
	Kafka    Kafka
	Postgres Postgres
	// Admin is the listen address of /healthz, /readyz, /metrics (and the
	// gateway's pprof); empty for none where the binary allows it.
	Admin         string
	Log           Log
	ShutdownGrace time.Duration // drain time after SIGINT or SIGTERM
	// StartWait bounds how long a starting process waits for its servers
	// (sharding/startup); 0 waits until it is stopped. Registered with
	// UseShutdown: the long-running binaries.
	StartWait time.Duration

	parts Parts
}

// Redis is how to reach the Redis Cluster.
type Redis struct {
	Addrs        []string // cluster seeds
	User         string   // ACL user; empty: the default user
	PasswordFile string   // file holding the password (AUTH); empty: none
	Password     Secret   // read from PasswordFile by Resolve
	TLS          TLS
}

// Kafka is how to reach the Kafka brokers.
type Kafka struct {
	Brokers      []string
	TLS          TLS
	SASL         string // "" (none), "scram-sha-512" or "scram-sha-256"
	User         string // SASL user
	PasswordFile string // file holding the SASL password
	Password     Secret // read from PasswordFile by Resolve
}

// Postgres is how to reach PostgreSQL. TLS is the URL's business
// (sslmode=verify-full&sslrootcert=...), as libpq has it.
type Postgres struct {
	URL          string // libpq URL; its password, if any, is better in PasswordFile
	PasswordFile string // file holding the role's password; empty: the URL's or none
	Password     Secret // read from PasswordFile by Resolve
}

// Log is the logger's level and format.
type Log struct {
	Level  slog.Level
	Format string // "text" or "json"
}

// TLS is one client's TLS: on or off, the CA that signs the servers (empty:
// the system roots), an optional client certificate (mutual TLS) and the
// name to check (empty: the host dialled).
type TLS struct {
	Enabled    bool
	CAFile     string
	CertFile   string
	KeyFile    string
	ServerName string

	config *tls.Config
}

// NewCommon returns the common defaults with this binary's admin address and
// shutdown grace.
func NewCommon(admin string, grace time.Duration) Common {
	return Common{
		Redis:         Redis{Addrs: SplitList(DefaultRedis)},
		Kafka:         Kafka{Brokers: SplitList(DefaultKafka)},
		Postgres:      Postgres{URL: DefaultDatabaseURL},
		Admin:         admin,
		Log:           Log{Level: slog.LevelInfo, Format: "text"},
		ShutdownGrace: grace,
	}
}

// Register adds the settings of parts (and logging) to s.
func (c *Common) Register(s *Set, parts Parts) {
	c.parts = parts
	if parts&UseRedis != 0 {
		s.Add(Setting{Name: "redis", Usage: "Redis Cluster seed addresses, comma separated", Value: List(&c.Redis.Addrs)})
		s.Add(Setting{Name: "redis-user", Usage: "Redis ACL user (empty: the default user)", Value: String(&c.Redis.User)})
		s.Add(Setting{Name: "redis-password-file", Usage: "file holding the Redis password (one trailing newline dropped)", Value: File(&c.Redis.PasswordFile)})
		c.Redis.TLS.register(s, "redis", "Redis")
	}
	if parts&UseKafka != 0 {
		s.Add(Setting{Name: "kafka-brokers", Usage: "Kafka seed brokers, comma separated", Value: List(&c.Kafka.Brokers),
			Env: []string{"KAFKA_BROKERS"}})
		c.Kafka.TLS.register(s, "kafka", "Kafka")
		s.Add(Setting{Name: "kafka-sasl", Usage: "Kafka SASL mechanism: none, scram-sha-512 or scram-sha-256", Value: OneOf(&c.Kafka.SASL, "", "none", "scram-sha-512", "scram-sha-256")})
		s.Add(Setting{Name: "kafka-user", Usage: "Kafka SASL user", Value: String(&c.Kafka.User)})
		s.Add(Setting{Name: "kafka-password-file", Usage: "file holding the Kafka SASL password", Value: File(&c.Kafka.PasswordFile)})
	}
	if parts&UsePostgres != 0 {
		s.Add(Setting{Name: "database-url", Usage: "PostgreSQL URL (TLS by its sslmode, sslrootcert)", Value: String(&c.Postgres.URL),
			Env: []string{"DATABASE_URL"}})
		s.Add(Setting{Name: "database-password-file", Usage: "file holding the PostgreSQL role's password", Value: File(&c.Postgres.PasswordFile)})
	}
	if parts&UseAdmin != 0 {
		s.Add(Setting{Name: "admin", Usage: "admin listen address: /healthz, /readyz, /metrics", Value: String(&c.Admin)})
	}
	if parts&UseShutdown != 0 {
		s.Add(Setting{Name: "shutdown-grace", Usage: "drain time after SIGINT or SIGTERM", Value: Duration(&c.ShutdownGrace)})
		s.Add(Setting{Name: "start-wait", Usage: "how long to wait at start for a server that is away or starting (/readyz red meanwhile; 0: until stopped)",
			Value: Duration(&c.StartWait)})
	}
	s.Add(Setting{Name: "log-level", Usage: "log level: debug, info, warn or error", Value: Level(&c.Log.Level)})
	s.Add(Setting{Name: "log-format", Usage: "log format: text or json", Value: OneOf(&c.Log.Format, "text", "json")})
}

func (t *TLS) register(s *Set, prefix, what string) {
	s.Add(Setting{Name: prefix + "-tls", Usage: "connect to " + what + " over TLS", Value: Bool(&t.Enabled)})
	s.Add(Setting{Name: prefix + "-tls-ca", Usage: "PEM file of the CA that signs " + what + "'s certificates (empty: system roots)", Value: File(&t.CAFile)})
	s.Add(Setting{Name: prefix + "-tls-cert", Usage: "PEM client certificate for " + what + " (mutual TLS; with -" + prefix + "-tls-key)", Value: File(&t.CertFile)})
	s.Add(Setting{Name: prefix + "-tls-key", Usage: "PEM private key of -" + prefix + "-tls-cert", Value: File(&t.KeyFile)})
	s.Add(Setting{Name: prefix + "-tls-server-name", Usage: "name " + what + "'s certificate must carry (empty: the host dialled)", Value: String(&t.ServerName)})
}

// Resolve checks the registered parts and reads the files they name
// (passwords, certificates). Every problem is reported, one per line, by
// flag name; no error quotes a secret.
func (c *Common) Resolve() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.parts&UseRedis != 0 {
		if len(c.Redis.Addrs) == 0 {
			bad("-redis names no seed")
		}
		for _, a := range c.Redis.Addrs {
			if err := checkHostPort(a); err != nil {
				bad("-redis %q: %v", a, err)
			}
		}
		var err error
		if c.Redis.Password, err = readSecret("redis-password-file", c.Redis.PasswordFile); err != nil {
			errs = append(errs, err)
		}
		if c.Redis.User != "" && c.Redis.PasswordFile == "" {
			bad("-redis-user %s has no password: set -redis-password-file", c.Redis.User)
		}
		errs = append(errs, c.Redis.TLS.resolve("redis"))
	}
	if c.parts&UseKafka != 0 {
		errs = append(errs, c.Kafka.resolve())
	}
	if c.parts&UsePostgres != 0 {
		if c.Postgres.URL == "" {
			bad("-database-url is empty")
		} else if !strings.HasPrefix(c.Postgres.URL, "postgres://") && !strings.HasPrefix(c.Postgres.URL, "postgresql://") {
			bad("-database-url: want a postgres:// URL")
		}
		var err error
		if c.Postgres.Password, err = readSecret("database-password-file", c.Postgres.PasswordFile); err != nil {
			errs = append(errs, err)
		}
	}
	if c.parts&UseShutdown != 0 && c.ShutdownGrace <= 0 {
		bad("-shutdown-grace %v: want a positive duration", c.ShutdownGrace)
	}
	if c.parts&UseShutdown != 0 && c.StartWait < 0 {
		bad("-start-wait %v: want 0 (until stopped) or a positive duration", c.StartWait)
	}
	return errors.Join(errs...)
}

func (k *Kafka) resolve() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if len(k.Brokers) == 0 {
		bad("-kafka-brokers names no broker")
	}
	for _, a := range k.Brokers {
		if err := checkHostPort(a); err != nil {
			bad("-kafka-brokers %q: %v", a, err)
		}
	}
	if k.SASL == "none" {
		k.SASL = ""
	}
	var err error
	if k.Password, err = readSecret("kafka-password-file", k.PasswordFile); err != nil {
		errs = append(errs, err)
	}
	switch {
	case k.SASL != "" && (k.User == "" || k.PasswordFile == ""):
		bad("-kafka-sasl %s needs -kafka-user and -kafka-password-file", k.SASL)
	case k.SASL == "" && (k.User != "" || k.PasswordFile != ""):
		bad("-kafka-user and -kafka-password-file need -kafka-sasl scram-sha-512 (or scram-sha-256)")
	}
	errs = append(errs, k.TLS.resolve("kafka"))
	return errors.Join(errs...)
}
