// Package config is the gateway's one configuration struct: its defaults live
// in Default, and Load fills it from command-line flags and FLASHSALE_*
// environment variables (a flag wins over the environment), then validates it.
// The settings every binary shares (Redis, Kafka, admin, logging, shutdown,
// their TLS and passwords) are flashsale/sharding/config's Common, embedded
// here; its naming rule (-some-name is FLASHSALE_SOME_NAME) holds for the
// gateway's own settings too.
// Other packages receive small per-package structs derived from it by package
// app; nothing here is a package-level global.
//
// The HS256 secret is best given as a file (-jwt-secret-file, say a mounted
// Kubernetes secret) or in FLASHSALE_JWT_SECRET: a command-line flag can be
// read by every local user in ps and /proc/<pid>/cmdline. Config's String,
// GoString and LogValue redact it, and no error Load or Validate returns
// quotes it.
package config

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"time"

	"flashsale/gateway/internal/auth"
	shared "flashsale/sharding/config"
	"flashsale/sharding/draw/beacon"
	"flashsale/sharding/journal"
	"flashsale/sharding/sale"
)

// DevJWTSecret is the HS256 secret used when -dev is set and no secret is
// configured. It is refused without -dev.
const DevJWTSecret = "dev-secret-change-me"

// Config is everything the gateway binary can be told. Durations are Go
// duration strings on the command line ("250ms", "1s").
type Config struct {
	// Common is Redis, Kafka, the admin listener (healthz, readyz, metrics,
	// pprof), logging and the shutdown grace.
	shared.Common

	Listen string // public fasthttp listener
	Topic  string // order-event topic
	Linger time.Duration

	// JWTSecret is the HS256 shared secret, from -jwt-secret,
	// FLASHSALE_JWT_SECRET or the file JWTSecretFile names. Formatting or
	// logging a Config redacts it, and it is never marshalled.
	JWTSecret     string `json:"-"`
	JWTSecretFile string // file Load read JWTSecret from, if any

	// TicketSecret signs purchase tickets, TicketSecretPrevious (during a
	// rotation) still verifies them; from -ticket-secret-file (first line,
	// second line), FLASHSALE_TICKET_SECRET[_PREVIOUS] or the flags. Empty:
	// derived from the HS256 secret (package app). Redacted like JWTSecret.
	TicketSecret         string `json:"-"`
	TicketSecretPrevious string `json:"-"`
	TicketSecretFile     string
	TicketTTL            time.Duration // lifetime of a purchase ticket

	// PowDifficulty is the operator's floor of proof of work on every
	// sale's ticket endpoint (leading zero bits, 0: only sales that ask);
	// PowAutoRate raises it by a bit per doubling of the challenge requests
	// per second at this gateway above that rate (0: never; package pow);
	// PowTTL is a challenge's lifetime.
	PowDifficulty int
	PowAutoRate   float64
	PowTTL        time.Duration

	// Beacon is "dev" where this gateway signs the dev beacon chain's
	// rounds itself (the local stack, which reaches no relay), else
	// "quicknet"; BeaconRelays are drand's HTTP relays the rounds are taken
	// from (package sharding/draw/beacon), each verified before use.
	Beacon       string
	BeaconRelays []string

	// PageMaxAge is the Cache-Control max-age of the sale page's HTML (its
	// assets are content-hashed and immutable).
	PageMaxAge time.Duration
	// PageToken tells the sale page where the shop keeps the buyer's bearer
	// token: "localStorage:<key>" or "cookie:<name>".
	PageToken string
	// PageMedia is a directory of images (a shop's logo and item
	// pictures) served at /sale/media/<name>, read once at start; "" (the
	// default) serves none.
	PageMedia string

	JWKS        string        // JWKS file path or http(s) URL (RS256, ES256, EdDSA)
	JWKSRefresh time.Duration // minimum refresh interval of a URL JWKS
	Issuer      string        // required iss when set
	Audience    string        // required aud when set
	Skew        time.Duration // accepted clock skew for exp/nbf/iat, at most 30s
	TokenCache  int           // verified tokens kept (repeat clicks cost no signature check)
	MaxTokenLen int           // longer tokens are refused without parsing

	IPRate    float64 // per-IP tokens per second
	IPBurst   int
	UserRate  float64 // per-user tokens per second
	UserBurst int
	LimitKeys int // buckets kept per limiter before eviction

	TrustedProxies []netip.Prefix // peers whose X-Forwarded-For is believed

	// RedisFlushDelay lets rueidis wait up to this long before a pipeline
	// write so that more concurrent commands share one write; RedisMultiplex
	// is the connections per Redis node (rueidis PipelineMultiplex: 2^n). The
	// default delay is 0: the purchase path batches in its own lanes
	// (RedisBatchLanes); gateway/README.md, "Batching", says why.
	RedisFlushDelay time.Duration
	RedisMultiplex  int
	// RedisBatchLanes bounds the batching lanes of the purchase path's Redis
	// calls (stock.Batcher): one per master, each with one batch in flight;
	// 0 leaves batching to rueidis (and its flush delay).
	RedisBatchLanes int
	// RepeatRead answers a known buyer's repeat click by reading the buyer
	// record (one HGET) instead of running the reserve script.
	RepeatRead bool

	Budget        time.Duration // per-request budget for Redis
	ReleaseBudget time.Duration // budget of the void of an attempt whose answer could not be given

	// ReplicaAcks is the replicas a journaled write waits for (WAIT, after its
	// batch) before its 202, at most ReplicaTimeout; 0 turns it off (a single
	// Redis without replicas).
	ReplicaAcks    int
	ReplicaTimeout time.Duration
	// JournalBound is the most entries a shard's hand-off journal holds
	// before purchases on it answer 503.
	JournalBound int
	// Relay runs this process's journal relay; RelayHold is the age an entry
	// must reach before a relay takes it, RelaySettle how much longer it
	// waits after it could not see a shard (journal.Config.Settle),
	// RelayLease the lifetime of a shard's relay lease.
	Relay       bool
	RelayHold   time.Duration
	RelaySettle time.Duration
	RelayLease  time.Duration
	// RelayFence is how long a gateway's fence mark on a shard holds the
	// shard's relays back after its last beat (journal.Config.Fence); the
	// whole fleet uses one value.
	RelayFence time.Duration
	// RelaySales limits the relay to these sales' journals; empty means
	// every sale (production). Tests that share one Redis set it.
	RelaySales []int64

	OrderTTL     time.Duration // lifetime of order records written by reserve
	PollInterval time.Duration // sold-out flag poll of flagged items
	RefreshEvery time.Duration // catalog and remaining-stock refresh

	MaxConnsPerIP int
	Concurrency   int
	ReadTimeout   time.Duration
	WriteTimeout  time.Duration
	IdleTimeout   time.Duration

	Dev bool // allows DevJWTSecret and the sale page's development sign-in
}

// Default returns the defaults of every setting: this is the one place they
// are written down.
func Default() Config {
	return Config{
		Common:          shared.NewCommon("127.0.0.1:9102", 10*time.Second),
		Listen:          "127.0.0.1:8080",
		Topic:           "flash-sale-orders",
		Linger:          time.Millisecond,
		JWKSRefresh:     auth.DefaultJWKSRefresh,
		TicketTTL:       60 * time.Second,
		PowTTL:          2 * time.Minute,
		Beacon:          "quicknet",
		BeaconRelays:    beacon.DefaultRelays,
		PageMaxAge:      60 * time.Second,
		PageToken:       "localStorage:flashsale.token",
		Skew:            30 * time.Second,
		TokenCache:      1 << 20,
		MaxTokenLen:     4096,
		IPRate:          50,
		IPBurst:         100,
		UserRate:        5,
		UserBurst:       10,
		LimitKeys:       1 << 20,
		Budget:          250 * time.Millisecond,
		ReleaseBudget:   500 * time.Millisecond,
		ReplicaAcks:     1,
		ReplicaTimeout:  50 * time.Millisecond,
		JournalBound:    50000,
		Relay:           true,
		RelayHold:       time.Second,
		RelaySettle:     2 * time.Second,
		RelayLease:      3 * time.Second,
		RelayFence:      journal.DefaultFence,
		RedisFlushDelay: 0,
		RedisBatchLanes: 16,
		RepeatRead:      true,
		OrderTTL:        24 * time.Hour,
		PollInterval:    200 * time.Millisecond,
		RefreshEvery:    time.Second,
		MaxConnsPerIP:   1000,
		Concurrency:     256 * 1024,
		ReadTimeout:     5 * time.Second,
		WriteTimeout:    5 * time.Second,
		IdleTimeout:     60 * time.Second,
	}
}

// settings registers the common settings and the gateway's own on set.
func (c *Config) settings(set *shared.Set) {
	c.Common.Register(set, shared.UseRedis|shared.UseKafka|shared.UseAdmin|shared.UseShutdown)
	for _, s := range []shared.Setting{
		{Name: "listen", Usage: "public HTTP listen address", Value: shared.String(&c.Listen)},
		{Name: "topic", Usage: "order-event topic", Value: shared.String(&c.Topic)},
		{Name: "linger", Usage: "relay producer linger", Value: shared.Duration(&c.Linger)},
		{Name: "redis-flush-delay", Usage: "longest wait before a Redis pipeline write, to batch more commands", Value: shared.Duration(&c.RedisFlushDelay)},
		{Name: "redis-multiplex", Usage: "connections per Redis node as a power of two (0: rueidis default)", Value: shared.Int(&c.RedisMultiplex)},
		{Name: "repeat-read", Usage: "answer a repeat click of a buyer this gateway answered before from the buyer record (HGET), not the reserve script", Value: shared.Bool(&c.RepeatRead)},
		{Name: "redis-batch-lanes", Usage: "most batching lanes for the purchase path's Redis calls: one per master, one batch in flight each (0: rueidis batches alone)", Value: shared.Int(&c.RedisBatchLanes)},
		{Name: "jwt-secret", Usage: "HS256 secret (the dev secret only with -dev); as a flag any local user can read it in ps, so prefer -jwt-secret-file or the environment", Value: shared.SecretString(&c.JWTSecret), Secret: true},
		{Name: "jwt-secret-file", Usage: "file holding the HS256 secret, one trailing newline dropped (preferred; not with -jwt-secret)", Value: shared.File(&c.JWTSecretFile)},
		{Name: "ticket-secret", Usage: "HMAC secret of purchase tickets, shared by every gateway (empty: derived from the HS256 secret); prefer -ticket-secret-file or the environment", Value: shared.SecretString(&c.TicketSecret), Secret: true},
		{Name: "ticket-secret-previous", Usage: "the ticket secret before a rotation, still accepted (keep it for one -ticket-ttl after the switch)", Value: shared.SecretString(&c.TicketSecretPrevious), Secret: true},
		{Name: "ticket-secret-file", Usage: "file holding the ticket secret on its first line and, during a rotation, the previous one on its second (not with -ticket-secret)", Value: shared.File(&c.TicketSecretFile)},
		{Name: "ticket-ttl", Usage: "lifetime of a purchase ticket", Value: shared.Duration(&c.TicketTTL)},
		{Name: "pow-difficulty", Usage: "proof of work asked by every sale's ticket endpoint, leading zero bits (0: only sales with powDifficulty)", Value: shared.Int(&c.PowDifficulty)},
		{Name: "pow-auto-rate", Usage: "challenge requests per second at this gateway above which the difficulty rises a bit per doubling, at most 8 (0: never)", Value: shared.Float(&c.PowAutoRate)},
		{Name: "pow-ttl", Usage: "lifetime of a proof-of-work challenge", Value: shared.Duration(&c.PowTTL)},
		{Name: "beacon", Usage: "quicknet: take the rounds that seal the draws from -beacon-relays; dev: also sign the dev test chain's rounds here (the local stack only)", Value: shared.String(&c.Beacon)},
		{Name: "beacon-relays", Usage: "drand HTTP relays the draws' beacon rounds are fetched from, comma-separated (each round is verified against the pinned key)", Value: shared.List(&c.BeaconRelays)},
		{Name: "page-max-age", Usage: "Cache-Control max-age of the sale page's HTML", Value: shared.Duration(&c.PageMaxAge)},
		{Name: "page-token", Usage: "where the sale page finds the buyer's bearer token: localStorage:<key> or cookie:<name>", Value: shared.String(&c.PageToken)},
		{Name: "page-media", Usage: "directory of images (.svg .png .jpg .webp .gif .avif) served at /sale/media/<name> for sale files that name them; read at start", Value: shared.String(&c.PageMedia)},
		{Name: "jwks", Usage: "JWKS file path or URL for RS256/ES256/EdDSA", Value: shared.String(&c.JWKS)},
		{Name: "jwks-refresh", Usage: "minimum refresh interval of a JWKS URL", Value: shared.Duration(&c.JWKSRefresh)},
		{Name: "jwt-issuer", Usage: "required token issuer (iss), empty to skip", Value: shared.String(&c.Issuer)},
		{Name: "jwt-audience", Usage: "required token audience (aud), empty to skip", Value: shared.String(&c.Audience)},
		{Name: "jwt-skew", Usage: "accepted clock skew, at most 30s", Value: shared.Duration(&c.Skew)},
		{Name: "token-cache", Usage: "verified tokens cached", Value: shared.Int(&c.TokenCache)},
		{Name: "max-token-len", Usage: "longest token accepted, bytes", Value: shared.Int(&c.MaxTokenLen)},
		{Name: "ip-rate", Usage: "per-IP requests per second", Value: shared.Float(&c.IPRate)},
		{Name: "ip-burst", Usage: "per-IP burst", Value: shared.Int(&c.IPBurst)},
		{Name: "user-rate", Usage: "per-user requests per second", Value: shared.Float(&c.UserRate)},
		{Name: "user-burst", Usage: "per-user burst", Value: shared.Int(&c.UserBurst)},
		{Name: "limit-keys", Usage: "buckets kept per limiter before eviction", Value: shared.Int(&c.LimitKeys)},
		{Name: "trusted-proxies", Usage: "CIDRs whose X-Forwarded-For is trusted, comma separated", Value: shared.Prefixes(&c.TrustedProxies)},
		{Name: "budget", Usage: "per-request budget for Redis", Value: shared.Duration(&c.Budget)},
		{Name: "release-budget", Usage: "budget of the void of a purchase whose answer could not be given in time (the 503 waits for it)", Value: shared.Duration(&c.ReleaseBudget)},
		{Name: "replica-acks", Usage: "replicas a journaled write waits for before its 202 (WAIT); 0 for a Redis without replicas", Value: shared.Int(&c.ReplicaAcks)},
		{Name: "replica-timeout", Usage: "longest wait for the replicas; a shortfall is counted and the order stands", Value: shared.Duration(&c.ReplicaTimeout)},
		{Name: "journal-bound", Usage: "most entries in a shard's hand-off journal before purchases on it answer 503", Value: shared.Int(&c.JournalBound)},
		{Name: "relay", Usage: "run the journal relay (Redis to Kafka) in this process", Value: shared.Bool(&c.Relay)},
		{Name: "relay-hold", Usage: "age a journal entry must reach before a relay takes it; must exceed -budget plus -release-budget", Value: shared.Duration(&c.RelayHold)},
		{Name: "relay-sales", Usage: "sale ids whose journals the relay moves, comma separated (empty: every sale)", Value: shared.IDs(&c.RelaySales)},
		{Name: "relay-settle", Usage: "after a relay could not see a shard (an outage, a lease taken over from a dead relay) it takes nothing until the shard answered for -relay-hold plus this: the time a gateway has to void the attempts it lost replies of", Value: shared.Duration(&c.RelaySettle)},
		{Name: "relay-lease", Usage: "lifetime of a shard's relay lease: a dead gateway's shards are taken over within it", Value: shared.Duration(&c.RelayLease)},
		{Name: "relay-fence", Usage: "how long a gateway's fence mark on a shard holds the shard's relays back after its last beat: a gateway cut off from a master that long is taken for gone and its entries are relayed (one value for the whole fleet)", Value: shared.Duration(&c.RelayFence)},
		{Name: "order-ttl", Usage: "lifetime of order records in Redis", Value: shared.Duration(&c.OrderTTL)},
		{Name: "poll-interval", Usage: "poll of sold-out items for returned stock", Value: shared.Duration(&c.PollInterval)},
		{Name: "refresh", Usage: "catalog and remaining-stock refresh", Value: shared.Duration(&c.RefreshEvery)},
		{Name: "max-conns-per-ip", Usage: "open connections per client IP (0: unlimited)", Value: shared.Int(&c.MaxConnsPerIP)},
		{Name: "concurrency", Usage: "requests served at once", Value: shared.Int(&c.Concurrency)},
		{Name: "read-timeout", Usage: "time to read one request", Value: shared.Duration(&c.ReadTimeout)},
		{Name: "write-timeout", Usage: "time to write one response", Value: shared.Duration(&c.WriteTimeout)},
		{Name: "idle-timeout", Usage: "keep-alive idle time", Value: shared.Duration(&c.IdleTimeout)},
		{Name: "dev", Usage: "development mode: allows the dev JWT secret and the sale page's development sign-in (POST /api/flash-sales/dev/token)", Value: shared.Bool(&c.Dev)},
	} {
		set.Add(s)
	}
}

// usage is the synopsis -h prints before the flags.
const usage = `usage: gateway [flags]

The flash sale's public HTTP front: see gateway/README.md.
`

// newSet returns the gateway's settings registered on c.
func (c *Config) newSet() *shared.Set {
	set := shared.NewSet("gateway", usage)
	c.settings(set)
	return set
}

// Load reads args (without the program name) and the environment through
// getenv (os.Getenv when nil) over Default, and validates the result. A flag
// wins over its environment variable. -h prints the usage to out and returns
// shared.ErrHelp; -version prints the version and returns shared.ErrVersion.
func Load(args []string, getenv func(string) string, out io.Writer) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	c := Default()
	set := c.newSet()
	if err := set.Parse(args, getenv, out); err != nil {
		return c, err
	}
	if len(set.Args()) > 0 {
		return c, fmt.Errorf("unexpected argument %q", set.Args()[0])
	}
	if err := c.readSecretFile(); err != nil {
		return c, err
	}
	if err := c.readTicketFile(); err != nil {
		return c, err
	}
	if c.JWTSecret == "" && c.JWKS == "" && c.Dev {
		c.JWTSecret = DevJWTSecret
	}
	return c, errors.Join(c.Common.Resolve(), c.Validate())
}

// readSecretFile sets JWTSecret from JWTSecretFile, if one is named: its
// contents without one trailing newline ("\n" or "\r\n"), so that a file
// written by echo works. Naming a file and giving the secret too is an error:
// which one wins would be a guess.
func (c *Config) readSecretFile() error {
	if c.JWTSecretFile == "" {
		return nil
	}
	if c.JWTSecret != "" {
		return errors.New("both -jwt-secret (FLASHSALE_JWT_SECRET) and -jwt-secret-file (FLASHSALE_JWT_SECRET_FILE) are set: give the secret one way")
	}
	b, err := os.ReadFile(c.JWTSecretFile)
	if err != nil {
		return fmt.Errorf("-jwt-secret-file: %w", err)
	}
	secret := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if secret == "" {
		return fmt.Errorf("-jwt-secret-file %s is empty", c.JWTSecretFile)
	}
	c.JWTSecret = secret
	return nil
}

// readTicketFile sets the ticket secrets from TicketSecretFile, if one is
// named: the first line is the current secret, an optional second line the
// previous one (a rotation: write the new secret above the old, and drop the
// old line one ticket lifetime after every gateway reloaded).
func (c *Config) readTicketFile() error {
	if c.TicketSecretFile == "" {
		return nil
	}
	if c.TicketSecret != "" || c.TicketSecretPrevious != "" {
		return errors.New("both -ticket-secret[-previous] (FLASHSALE_TICKET_SECRET[_PREVIOUS]) and -ticket-secret-file are set: give the secrets one way")
	}
	b, err := os.ReadFile(c.TicketSecretFile)
	if err != nil {
		return fmt.Errorf("-ticket-secret-file: %w", err)
	}
	lines := strings.Split(strings.TrimSuffix(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n"), "\n")
	if len(lines) > 2 || lines[0] == "" || (len(lines) == 2 && lines[1] == "") {
		return fmt.Errorf("-ticket-secret-file %s: want the current secret on the first line and at most the previous one on a second, no blank lines", c.TicketSecretFile)
	}
	c.TicketSecret = lines[0]
	if len(lines) == 2 {
		c.TicketSecretPrevious = lines[1]
	}
	return nil
}

// Validate reports every setting that cannot work, one per line.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.Listen == "" {
		bad("-listen is empty")
	}
	if c.Admin == "" {
		bad("-admin is empty")
	}
	if c.Topic == "" {
		bad("-topic is empty")
	}
	c.validateAuth(bad)
	c.validateFrontDoor(bad)
	c.validateLimits(bad)
	c.validateRedis(bad)
	c.validateTimes(bad)
	c.validateHandoff(bad)
	return errors.Join(errs...)
}

// validateAuth checks the token and ticket secrets and the accepted clock skew.
func (c *Config) validateAuth(bad func(string, ...any)) {
	if c.JWTSecret == "" && c.JWKS == "" {
		bad("no token verification configured: set -jwt-secret-file, FLASHSALE_JWT_SECRET or -jwks (or -dev for the dev secret)")
	}
	if c.JWTSecret == DevJWTSecret && !c.Dev {
		bad("the dev JWT secret is refused without -dev")
	}
	if c.JWTSecret != "" && len(c.JWTSecret) < 16 {
		bad("the HS256 secret (-jwt-secret or -jwt-secret-file) is %d bytes: want at least 16", len(c.JWTSecret))
	}
	if c.TicketSecretPrevious != "" && c.TicketSecret == "" {
		bad("-ticket-secret-previous without -ticket-secret: the previous secret only verifies, a current one must sign")
	}
	for _, s := range []string{c.TicketSecret, c.TicketSecretPrevious} {
		if s != "" && len(s) < 16 {
			bad("a ticket secret is %d bytes: want at least 16", len(s))
		}
	}
	if c.TicketTTL < time.Second || c.TicketTTL > 10*time.Minute {
		bad("-ticket-ttl %v: want 1s..10m", c.TicketTTL)
	}
	if c.Skew < 0 || c.Skew > 30*time.Second {
		bad("-jwt-skew %v: want 0..30s", c.Skew)
	}
}

// validateFrontDoor checks the proof of work and the sale page.
func (c *Config) validateFrontDoor(bad func(string, ...any)) {
	if c.PowDifficulty < 0 || c.PowDifficulty > sale.MaxPowDifficulty {
		bad("-pow-difficulty %d: want 0 (off) to %d leading zero bits", c.PowDifficulty, sale.MaxPowDifficulty)
	}
	if !(c.PowAutoRate >= 0) || c.PowAutoRate > 1e9 {
		bad("-pow-auto-rate %v: want 0 (off) or a rate of challenge requests per second", c.PowAutoRate)
	}
	if c.Beacon != "quicknet" && c.Beacon != "dev" {
		bad("-beacon %q: want quicknet or dev", c.Beacon)
	}
	if c.PowTTL < 10*time.Second || c.PowTTL > 10*time.Minute {
		bad("-pow-ttl %v: want 10s..10m (long enough to solve, short enough that a solve is not kept)", c.PowTTL)
	}
	if c.PageMaxAge < 0 || c.PageMaxAge > 24*time.Hour {
		bad("-page-max-age %v: want 0..24h", c.PageMaxAge)
	}
	if err := ValidPageToken(c.PageToken); err != nil {
		bad("-page-token %q: %v", c.PageToken, err)
	}
}

// validateLimits checks the token cache, the buckets and the connection limits.
func (c *Config) validateLimits(bad func(string, ...any)) {
	if c.TokenCache < 1 || c.MaxTokenLen < 64 {
		bad("-token-cache must be >= 1 and -max-token-len >= 64")
	}
	if c.IPRate <= 0 || c.IPBurst < 1 || c.UserRate <= 0 || c.UserBurst < 1 {
		bad("rates must be > 0 and bursts >= 1 (ip %v/%d, user %v/%d)", c.IPRate, c.IPBurst, c.UserRate, c.UserBurst)
	}
	if c.LimitKeys < 1024 {
		bad("-limit-keys %d: want at least 1024", c.LimitKeys)
	}
	if c.MaxConnsPerIP < 0 || c.Concurrency < 1 {
		bad("-max-conns-per-ip must be >= 0 and -concurrency >= 1")
	}
}

// validateRedis checks the Redis client's batching.
func (c *Config) validateRedis(bad func(string, ...any)) {
	if c.RedisFlushDelay < 0 || c.RedisFlushDelay > time.Millisecond {
		bad("-redis-flush-delay %v: want 0..1ms", c.RedisFlushDelay)
	}
	if c.RedisMultiplex < 0 || c.RedisMultiplex > 8 {
		bad("-redis-multiplex %d: want 0..8", c.RedisMultiplex)
	}
	if c.RedisBatchLanes < 0 || c.RedisBatchLanes > 256 {
		bad("-redis-batch-lanes %d: want 0..256", c.RedisBatchLanes)
	}
}

// validateTimes checks the budgets, timeouts and poll intervals.
func (c *Config) validateTimes(bad func(string, ...any)) {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"budget", c.Budget}, {"release-budget", c.ReleaseBudget}, {"order-ttl", c.OrderTTL},
		{"poll-interval", c.PollInterval}, {"refresh", c.RefreshEvery}, {"read-timeout", c.ReadTimeout},
		{"write-timeout", c.WriteTimeout}, {"idle-timeout", c.IdleTimeout}, {"jwks-refresh", c.JWKSRefresh}} {
		if d.v <= 0 {
			bad("-%s %v: want a positive duration", d.name, d.v)
		}
	}
	if c.PollInterval > time.Second {
		bad("-poll-interval %v: returned stock must show within 1s, want <= 1s", c.PollInterval)
	}
}

// validateHandoff checks the replica acknowledgement, the journal and the relay
// (its producer's linger).
func (c *Config) validateHandoff(bad func(string, ...any)) {
	if c.ReplicaAcks < 0 || c.ReplicaAcks > 16 {
		bad("-replica-acks %d: want 0..16", c.ReplicaAcks)
	}
	if c.ReplicaAcks > 0 && (c.ReplicaTimeout < time.Millisecond || c.ReplicaTimeout >= c.Budget) {
		bad("-replica-timeout %v: want at least 1ms and below -budget %v", c.ReplicaTimeout, c.Budget)
	}
	if c.JournalBound < 1 {
		bad("-journal-bound %d: want at least 1", c.JournalBound)
	}
	if c.RelayHold <= c.Budget+c.ReleaseBudget {
		bad("-relay-hold %v: must exceed -budget plus -release-budget (%v), the time a gateway has to void a purchase it could not answer", c.RelayHold, c.Budget+c.ReleaseBudget)
	}
	if c.RelayFence < 2*time.Second || c.RelayFence > 10*time.Minute {
		bad("-relay-fence %v: want 2s..10m", c.RelayFence)
	}
	if c.Relay && c.RelaySettle < c.ReleaseBudget+250*time.Millisecond {
		bad("-relay-settle %v: want at least -release-budget plus 250ms (%v), the time a gateway's queue needs to void an attempt once Redis answers again", c.RelaySettle, c.ReleaseBudget+250*time.Millisecond)
	}
	if c.Relay && c.RelayLease < 100*time.Millisecond {
		bad("-relay-lease %v: want at least 100ms", c.RelayLease)
	}
	if c.Linger < 0 || c.Linger > 100*time.Millisecond {
		bad("-linger %v: want 0..100ms", c.Linger)
	}
}

// ValidPageToken checks a -page-token value: "localStorage:<key>" or
// "cookie:<name>", the name made of letters, digits and ._- (it is written
// into the page's static config as is).
func ValidPageToken(v string) error {
	kind, name, ok := strings.Cut(v, ":")
	if !ok || (kind != "localStorage" && kind != "cookie") {
		return errors.New("want localStorage:<key> or cookie:<name>")
	}
	if name == "" || len(name) > 64 {
		return errors.New("the name is empty or longer than 64 bytes")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("the name has %q: want letters, digits and ._-", r)
		}
	}
	return nil
}

// Usage writes the flag/environment table in Markdown, for the README.
func Usage(w io.Writer) {
	c := Default()
	c.newSet().Markdown(w)
}

// redactedSecret stands for a non-empty secret wherever a Config is shown.
const redactedSecret = "[redacted]"

// plainConfig is Config without its methods, for the formatting below.
type plainConfig Config

func (c Config) redacted() plainConfig {
	p := plainConfig(c)
	for _, f := range []*string{&p.JWTSecret, &p.TicketSecret, &p.TicketSecretPrevious} {
		if *f != "" {
			*f = redactedSecret
		}
	}
	return p
}

// String formats c as %+v would, with JWTSecret redacted; fmt uses it for
// %v, %+v and %s, of a Config and of a *Config.
func (c Config) String() string { return fmt.Sprintf("%+v", c.redacted()) }

// GoString formats c as %#v would, with JWTSecret redacted.
func (c Config) GoString() string {
	return strings.Replace(fmt.Sprintf("%#v", c.redacted()), "config.plainConfig{", "config.Config{", 1)
}

// LogValue makes log/slog show c as String does, with either handler.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }
