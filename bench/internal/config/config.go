// Package config is the bench binary's configuration: one Config struct,
// loaded once from flags and environment, with every default in Default.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	shared "flashsale/sharding/config"
)

// Scenario names.
const (
	Steady     = "steady"
	FlashCrowd = "flash-crowd"
	Bots       = "bots"
	RetryStorm = "retry-storm"
)

// Scenarios lists the scenario names -scenario accepts.
var Scenarios = []string{Steady, FlashCrowd, Bots, RetryStorm}

// DevSecret is the HS256 secret -dev uses, the same the gateway accepts with
// its own -dev flag.
const DevSecret = "dev-secret-change-me"

// DefaultRedis is the local stack's Redis Cluster.
const DefaultRedis = shared.DefaultRedis

// Stage is one step of an open-loop rate schedule.
type Stage struct {
	Rate float64
	For  time.Duration
}

// Config is everything the bench binary reads from flags and environment.
type Config struct {
	URL      string // target base URL, http or https
	Addr     string // host:port of URL
	TLS      bool   // URL is https
	Insecure bool   // https: skip the certificate check (self-signed targets)
	Engine   string // "auto", "epoll" or "portable"
	Scenario string

	Conns   int // connections (-c)
	Workers int // epoll loops, 0: GOMAXPROCS

	Duration time.Duration // steady and bots: how long to send (closed loop or with -rate)
	Count    int64         // steady closed loop: stop after this many requests (0: use Duration)
	Rate     []Stage       // steady: open-loop rate schedule; empty: closed loop

	Users     int    // distinct users, 0: the scenario's default
	TokensOut string // write the users' tokens here, one a line, and exit
	UserBase  uint64 // the first user id
	ClicksMin int    // flash-crowd: clicks per user, uniform in [ClicksMin, ClicksMax]
	ClicksMax int
	Ramp      time.Duration // flash-crowd: most users arrive within Ramp

	RetryFraction float64       // share of users that retry 429/503
	Retries       int           // at most this many retries per click
	Backoff       time.Duration // first retry delay, doubled per try
	Pay, Cancel   float64       // winners that pay / cancel; the rest walk away
	Think         time.Duration // winners' delay before paying or cancelling

	SourceIPs   int          // bind connections to 127.0.0.1..127.0.0.N (loopback targets)
	SourceAddrs []netip.Addr // bind connections to these local addresses (-source-addrs)
	XFF         bool         // send X-Forwarded-For per user
	IdemKeys    bool         // send an Idempotency-Key per click

	Items  []int64 // item ids; empty: read from the sale
	SaleID int64

	JWTSecret   string
	JWTKeyFile  string
	JWTKeyID    string
	JWTIssuer   string
	JWTAudience string
	TokenTTL    time.Duration
	Dev         bool

	Timeout time.Duration // response timeout
	LateBy  time.Duration // open-loop sends later than this are counted
	Drain   time.Duration // how long queued requests may still go out after the schedule ends

	OutDir   string // result directory, default bench/out/<timestamp>
	Quiet    bool   // no progress line
	Seed     uint64
	JSONOnly bool // print the result JSON instead of the text summary

	MetricsURL string // the gateway's /metrics, sampled for its stock gauge during the run

	// Shard and Shards: this instance is slice Shard of Shards (-shard i/N):
	// it sends the requests of the users u with u % Shards == Shard.
	Shard, Shards int
	StartAt       time.Time // start the schedule at this wall-clock time (-start-at)
	Args          []string  // the command line, for the report

	Audit       bool
	DatabaseURL string
	Redis       []string
	Settle      time.Duration // how long the audit's snapshot must stay unchanged
	SettleMax   time.Duration // give up settling after this long
}

// Default returns the defaults of every field that has one.
func Default() Config {
	return Config{
		URL:           "http://127.0.0.1:8080",
		Scenario:      Steady,
		Conns:         64,
		Duration:      10 * time.Second,
		UserBase:      1,
		ClicksMin:     1,
		ClicksMax:     3,
		Ramp:          2 * time.Second,
		RetryFraction: 0.5,
		Retries:       3,
		Backoff:       200 * time.Millisecond,
		Pay:           0.6,
		Cancel:        0.1,
		Think:         2 * time.Second,
		IdemKeys:      true,
		TokenTTL:      2 * time.Hour,
		Timeout:       10 * time.Second,
		LateBy:        10 * time.Millisecond,
		Drain:         30 * time.Second,
		Redis:         strings.Split(DefaultRedis, ","),
		Settle:        5 * time.Second,
		SettleMax:     2 * time.Minute,
	}
}

// scenarioUsers is each scenario's default user count.
var scenarioUsers = map[string]int{Steady: 10_000, FlashCrowd: 500_000, Bots: 4, RetryStorm: 100_000}

// ErrHelp is returned by Load for -h.
var ErrHelp = flag.ErrHelp

// Load reads args (without the program name) and the environment through
// getenv. Usage goes to usage on -h or a flag error.
func Load(args []string, getenv func(string) string, usage io.Writer) (Config, error) {
	c := Default()
	if v := getenv("FLASHSALE_JWT_SECRET"); v != "" {
		c.JWTSecret = v
	}
	c.JWTIssuer = getenv("FLASHSALE_JWT_ISSUER")
	c.JWTAudience = getenv("FLASHSALE_JWT_AUDIENCE")
	c.DatabaseURL = getenv("DATABASE_URL")
	if v := getenv("FLASHSALE_REDIS"); v != "" {
		c.Redis = splitList(v)
	}
	raw := rawFlags{redis: strings.Join(c.Redis, ",")}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.Usage = func() {
		fmt.Fprintf(usage, "usage: bench [flags]              a load run: -scenario %s\n", strings.Join(Scenarios, ", "))
		fmt.Fprintln(usage, "       bench merge [flags] DIR... one result from the shards of a run on many machines")
		fmt.Fprintln(usage, "       bench compare A B          two results side by side")
		fmt.Fprintln(usage, "\nflags:")
		fs.PrintDefaults()
	}
	c.register(fs, &raw)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, unexpectedArg(fs.Arg(0))
	}
	c.Args = append([]string(nil), args...)
	if err := c.parseRaw(raw); err != nil {
		return c, err
	}
	return c, c.resolve()
}

// unexpectedArg says what to type instead of a word among the flags: a
// scenario's name is given with -scenario.
func unexpectedArg(a string) error {
	if slices.Contains(Scenarios, a) {
		return fmt.Errorf("unexpected argument %q: a scenario is chosen with -scenario %s", a, a)
	}
	return fmt.Errorf("unexpected argument %q (flags only; the subcommands are merge and compare, first)", a)
}

// rawFlags are the flags parsed after the flag set: lists, ranges, times.
type rawFlags struct {
	items, rate, clicks, redis, shard, startAt, sources string
}

// register defines every flag on fs, into c or raw, with c's values as the
// defaults.
func (c *Config) register(fs *flag.FlagSet, raw *rawFlags) {
	items, rate, clicks, redis, shard, startAt, sources := &raw.items, &raw.rate, &raw.clicks, &raw.redis, &raw.shard, &raw.startAt, &raw.sources
	fs.StringVar(&c.URL, "url", c.URL, "gateway base URL, http:// or https://")
	fs.BoolVar(&c.Insecure, "insecure", false, "https: do not check the server's certificate (a self-signed test target)")
	fs.StringVar(&c.Engine, "engine", "auto", "load engine: epoll (Linux, http), portable (fasthttp's client: https, any OS), auto")
	fs.StringVar(sources, "source-addrs", "", "bind connections to these local addresses, comma separated, round robin; \"auto\": every non-loopback address of this host in the target's family")
	fs.StringVar(&c.Scenario, "scenario", c.Scenario, "scenario: "+strings.Join(Scenarios, ", "))
	fs.IntVar(&c.Conns, "c", c.Conns, "connections")
	fs.IntVar(&c.Workers, "workers", 0, "event loops (0: GOMAXPROCS)")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "steady, bots: how long to send")
	fs.Int64Var(&c.Count, "n", 0, "steady closed loop: stop after this many requests instead of -duration")
	fs.StringVar(rate, "rate", "", "steady, bots: open-loop rate in req/s, or stages RATE:DURATION,... (empty: closed loop)")
	fs.IntVar(&c.Users, "users", 0, "distinct users (default: flash-crowd 500000, retry-storm 100000, steady 10000, bots 4)")
	fs.Uint64Var(&c.UserBase, "user-base", c.UserBase, "the first user id")
	fs.StringVar(clicks, "clicks", "1-3", "flash-crowd, retry-storm: clicks per user, N or MIN-MAX")
	fs.DurationVar(&c.Ramp, "ramp", c.Ramp, "flash-crowd, retry-storm: about 95% of users arrive within this")
	fs.Float64Var(&c.RetryFraction, "retry-fraction", c.RetryFraction, "flash-crowd: share of users retrying on 429/503")
	fs.IntVar(&c.Retries, "retries", c.Retries, "retries per click (retry-storm: immediate, on every refusal)")
	fs.DurationVar(&c.Backoff, "backoff", c.Backoff, "flash-crowd: first retry delay, doubled per try")
	fs.Float64Var(&c.Pay, "pay", c.Pay, "share of winners that pay")
	fs.Float64Var(&c.Cancel, "cancel", c.Cancel, "share of winners that cancel (the rest walk away)")
	fs.DurationVar(&c.Think, "think", c.Think, "winners wait this plus up to this again before paying or cancelling")
	fs.IntVar(&c.SourceIPs, "source-ips", 0, "bind connections to 127.0.0.1..127.0.0.N (loopback targets; bots default: -users)")
	fs.BoolVar(&c.XFF, "xff", false, "send a distinct X-Forwarded-For per user (only matters if the gateway trusts this client)")
	fs.BoolVar(&c.IdemKeys, "idempotency-keys", c.IdemKeys, "send an Idempotency-Key per click")
	fs.StringVar(items, "items", "", "item ids, comma separated (default: the sale's items, from -sale)")
	fs.Int64Var(&c.SaleID, "sale", 0, "sale id (items come from GET /api/flash-sales/sales/{id}; the audit checks it)")
	fs.StringVar(&c.JWTSecret, "jwt-secret", c.JWTSecret, "HS256 secret (env FLASHSALE_JWT_SECRET)")
	fs.StringVar(&c.JWTKeyFile, "jwt-key", "", "PEM private key file: ES256 (EC) or RS256 (RSA) tokens instead of HS256")
	fs.StringVar(&c.JWTKeyID, "jwt-kid", "", "kid header of the tokens")
	fs.StringVar(&c.JWTIssuer, "jwt-issuer", c.JWTIssuer, "iss claim (env FLASHSALE_JWT_ISSUER)")
	fs.StringVar(&c.JWTAudience, "jwt-audience", c.JWTAudience, "aud claim (env FLASHSALE_JWT_AUDIENCE)")
	fs.DurationVar(&c.TokenTTL, "token-ttl", c.TokenTTL, "token lifetime (exp = now + this)")
	fs.BoolVar(&c.Dev, "dev", false, "use the development HS256 secret when none is set")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "response timeout")
	fs.DurationVar(&c.LateBy, "late-by", c.LateBy, "count open-loop sends later than this past their intended time")
	fs.DurationVar(&c.Drain, "drain", c.Drain, "open loop: queued requests may go out this long after the schedule ends; the rest count as unsent")
	fs.StringVar(&c.OutDir, "out", "", "result directory (default bench/out/<timestamp>)")
	fs.BoolVar(&c.Quiet, "quiet", false, "no progress line")
	fs.StringVar(&c.TokensOut, "tokens-out", "", "write the users' tokens to this file, one a line, and exit (for wrk scripts)")
	fs.Uint64Var(&c.Seed, "seed", 0, "random seed (0: from the clock)")
	fs.StringVar(&c.MetricsURL, "metrics-url", "", "the gateway's metrics URL (http://host:admin/metrics): its stock gauge is sampled during the run for the sell-out curve")
	fs.StringVar(shard, "shard", "", "i/N: run slice i (0-based) of N bench instances, the users u with u%N == i (needs -seed; merge with bench merge)")
	fs.StringVar(startAt, "start-at", "", "start the schedule at this wall-clock time (RFC 3339, or Unix seconds), the same on every shard")
	fs.BoolVar(&c.Audit, "audit", false, "after the run, check the sale's invariants in PostgreSQL and Redis (needs -sale)")
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "PostgreSQL URL for the audit (env DATABASE_URL)")
	fs.StringVar(redis, "redis", *redis, "Redis Cluster seeds for the audit, comma separated (env FLASHSALE_REDIS)")
	fs.DurationVar(&c.Settle, "settle", c.Settle, "audit: how long the orders and stock must stay unchanged before checking")
	fs.DurationVar(&c.SettleMax, "settle-max", c.SettleMax, "audit: stop waiting for the system to settle after this long")
}

// parseRaw reads the flags kept as text.
func (c *Config) parseRaw(raw rawFlags) (err error) {
	c.Redis = splitList(raw.redis)
	if c.Shard, c.Shards, err = parseShard(raw.shard); err != nil {
		return err
	}
	if c.StartAt, err = parseStartAt(raw.startAt); err != nil {
		return err
	}
	if c.SourceAddrs, err = parseSources(raw.sources); err != nil {
		return err
	}
	if c.Items, err = parseItems(raw.items); err != nil {
		return err
	}
	if c.Rate, err = ParseRate(raw.rate); err != nil {
		return err
	}
	c.ClicksMin, c.ClicksMax, err = parseRange(raw.clicks)
	return err
}

// resolve fills scenario defaults and checks the whole.
func (c *Config) resolve() error {
	if err := c.resolveTarget(); err != nil {
		return err
	}
	known := false
	for _, s := range Scenarios {
		known = known || s == c.Scenario
	}
	if !known {
		return fmt.Errorf("-scenario %q: want one of %s", c.Scenario, strings.Join(Scenarios, ", "))
	}
	if c.Users == 0 {
		c.Users = scenarioUsers[c.Scenario]
	}
	if c.Scenario == Bots && c.SourceIPs == 0 {
		c.SourceIPs = c.Users
	}
	if c.Workers == 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if err := c.checkRanges(); err != nil {
		return err
	}
	if c.SourceIPs > 0 {
		h, _, _ := strings.Cut(c.Addr, ":")
		if a, err := netip.ParseAddr(h); err != nil || !a.IsLoopback() || !a.Is4() {
			return fmt.Errorf("-source-ips: only for an IPv4 loopback target, not %s", c.Addr)
		}
	}
	if c.JWTKeyFile == "" && c.JWTSecret == "" {
		if !c.Dev {
			return errors.New("no token signer: set -jwt-secret or FLASHSALE_JWT_SECRET, or -jwt-key FILE, or -dev for the development secret")
		}
		c.JWTSecret = DevSecret
	}
	return nil
}

// resolveTarget reads -url into Addr and TLS and checks the engine and
// source flags against it.
func (c *Config) resolveTarget() error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("-url %q: want http://host:port or https://host:port", c.URL)
	}
	c.TLS = u.Scheme == "https"
	c.Addr = u.Host
	if u.Port() == "" {
		c.Addr = u.Host + map[bool]string{false: ":80", true: ":443"}[c.TLS]
	}
	switch {
	case c.Engine != "auto" && c.Engine != "epoll" && c.Engine != "portable":
		return fmt.Errorf("-engine %q: want auto, epoll or portable", c.Engine)
	case c.Engine == "epoll" && c.TLS:
		return errors.New("-engine epoll speaks plain http only; https runs on the portable engine")
	case c.Insecure && !c.TLS:
		return errors.New("-insecure is for an https -url")
	case c.SourceIPs > 0 && len(c.SourceAddrs) > 0:
		return errors.New("-source-ips and -source-addrs: give one")
	}
	return nil
}

// checkRanges checks every number, and the flags that need one another.
func (c *Config) checkRanges() error {
	switch {
	case c.Conns < 1:
		return fmt.Errorf("-c %d: want at least 1 connection", c.Conns)
	case c.Users < 1 || c.Users > 1<<31:
		return fmt.Errorf("-users %d: want 1..%d", c.Users, 1<<31)
	case c.UserBase < 1:
		return errors.New("-user-base: user ids start at 1")
	case c.Duration <= 0 && c.Count <= 0:
		return errors.New("-duration: want a positive duration (or -n)")
	case c.Count < 0:
		return fmt.Errorf("-n %d: want a positive count", c.Count)
	case c.Ramp <= 0:
		return fmt.Errorf("-ramp %v: want a positive duration", c.Ramp)
	case c.RetryFraction < 0 || c.RetryFraction > 1:
		return fmt.Errorf("-retry-fraction %v: want 0..1", c.RetryFraction)
	case c.Retries < 0 || c.Retries > 100:
		return fmt.Errorf("-retries %d: want 0..100", c.Retries)
	case c.Pay < 0 || c.Cancel < 0 || c.Pay+c.Cancel > 1:
		return fmt.Errorf("-pay %v -cancel %v: want shares in 0..1 that add up to at most 1", c.Pay, c.Cancel)
	case c.SourceIPs < 0 || c.SourceIPs > 254:
		return fmt.Errorf("-source-ips %d: want 0..254", c.SourceIPs)
	case c.Timeout <= 0:
		return fmt.Errorf("-timeout %v: want a positive duration", c.Timeout)
	case c.TokenTTL <= 0:
		return fmt.Errorf("-token-ttl %v: want a positive duration", c.TokenTTL)
	case len(c.Items) == 0 && c.SaleID == 0 && c.TokensOut == "":
		return errors.New("no items: give -items 1,2,... or -sale ID")
	case c.SaleID < 0 || c.SaleID > 1<<32-1:
		return fmt.Errorf("-sale %d: want 1..%d", c.SaleID, int64(1<<32-1))
	case c.Shards > 1 && c.Seed == 0:
		return errors.New("-shard: every shard must draw the same crowd: give the same -seed to all")
	case c.Audit && c.Shards > 1:
		return errors.New("-audit with -shard: audit once, after bench merge of every shard's result")
	case c.Audit && c.SaleID == 0:
		return errors.New("-audit needs -sale ID")
	case c.Audit && c.DatabaseURL == "":
		return errors.New("-audit needs -database-url or DATABASE_URL")
	case c.Audit && len(c.Redis) == 0:
		return errors.New("-audit needs -redis or FLASHSALE_REDIS")
	}
	return nil
}

// Sources returns the local addresses to bind: -source-addrs, or
// 127.0.0.1..127.0.0.SourceIPs.
func (c *Config) Sources() []netip.Addr {
	if len(c.SourceAddrs) > 0 {
		return c.SourceAddrs
	}
	out := make([]netip.Addr, c.SourceIPs)
	for i := range out {
		out[i] = netip.AddrFrom4([4]byte{127, 0, 0, byte(i + 1)})
	}
	return out
}

// ParseRate reads "5000" (one rate for -duration, returned with For 0) or
// "1000:5s,5000:10s".
func ParseRate(s string) ([]Stage, error) {
	if strings.TrimSpace(s) == "" || s == "0" {
		return nil, nil
	}
	var out []Stage
	for _, part := range strings.Split(s, ",") {
		r, d, hasD := strings.Cut(strings.TrimSpace(part), ":")
		rate, err := strconv.ParseFloat(r, 64)
		if err != nil || rate <= 0 {
			return nil, fmt.Errorf("-rate %q: %q is not a positive rate", s, r)
		}
		st := Stage{Rate: rate}
		if hasD {
			if st.For, err = time.ParseDuration(d); err != nil || st.For <= 0 {
				return nil, fmt.Errorf("-rate %q: %q is not a positive duration", s, d)
			}
		} else if strings.Contains(s, ",") {
			return nil, fmt.Errorf("-rate %q: every stage of a schedule needs RATE:DURATION", s)
		}
		out = append(out, st)
	}
	return out, nil
}

// parseShard reads "i/N" (0 <= i < N <= 1024); "" is 0/1.
func parseShard(s string) (int, int, error) {
	if s == "" {
		return 0, 1, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || n > 1024 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("-shard %q: want i/N with 0 <= i < N <= 1024", s)
	}
	return i, n, nil
}

// parseStartAt reads an RFC 3339 time or Unix seconds; "" is the zero time.
func parseStartAt(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 {
		return time.Unix(0, int64(f*1e9)), nil
	}
	return time.Time{}, fmt.Errorf("-start-at %q: want an RFC 3339 time (2026-12-01T12:00:00Z) or Unix seconds", s)
}

// parseSources reads -source-addrs: addresses, or "auto" for every
// non-loopback unicast address of this host (resolved later, by family).
func parseSources(s string) ([]netip.Addr, error) {
	if strings.TrimSpace(s) == "auto" {
		return hostAddrs()
	}
	var out []netip.Addr
	for _, p := range splitList(s) {
		a, err := netip.ParseAddr(p)
		if err != nil {
			return nil, fmt.Errorf("-source-addrs: %q is not an IP address", p)
		}
		out = append(out, a)
	}
	return out, nil
}

// hostAddrs lists this host's global unicast addresses.
func hostAddrs() ([]netip.Addr, error) {
	ifs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("-source-addrs auto: %w", err)
	}
	var out []netip.Addr
	for _, ia := range ifs {
		if p, err := netip.ParsePrefix(ia.String()); err == nil && p.Addr().IsGlobalUnicast() {
			out = append(out, p.Addr())
		}
	}
	if len(out) == 0 {
		return nil, errors.New("-source-addrs auto: this host has no address beyond loopback")
	}
	return out, nil
}

func parseItems(s string) ([]int64, error) {
	var out []int64
	for _, p := range splitList(s) {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-items: %q is not a positive item id", p)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseRange(s string) (int, int, error) {
	lo, hi, ok := strings.Cut(s, "-")
	if !ok {
		hi = lo
	}
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil || a < 1 || b < a || b > 100 {
		return 0, 0, fmt.Errorf("-clicks %q: want N or MIN-MAX with 1 <= MIN <= MAX <= 100", s)
	}
	return a, b, nil
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
