// Package app wires the gateway: it builds the Redis, auth, limiter, catalog,
// HTTP and journal-relay pieces from a config.Config, serves the public and
// admin listeners, and shuts them down in order (stop accepting, drain
// requests, stop the relay and release its leases, close the clients).
//
// The purchase path needs Redis alone: /readyz is green once the purchase
// scripts are loaded on every master and every master answers. Kafka is the
// relay's business; while it is away the journal fills (bounded per shard).
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/rueidis"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fasthttp"

	"flashsale/gateway/internal/auth"
	"flashsale/gateway/internal/catalog"
	"flashsale/gateway/internal/config"
	"flashsale/gateway/internal/httpapi"
	"flashsale/gateway/internal/limit"
	"flashsale/gateway/internal/obs"
	"flashsale/gateway/internal/page"
	"flashsale/gateway/internal/pow"
	"flashsale/gateway/internal/presale"
	"flashsale/gateway/internal/room"
	"flashsale/sharding/clock"
	"flashsale/sharding/journal"
	"flashsale/sharding/repeatlog"
	"flashsale/sharding/startup"
	"flashsale/sharding/stock"
)

// App is a wired gateway. Create it with New, then Serve; Close releases what
// New opened when Serve is never called.
type App struct {
	cfg      config.Config
	log      *slog.Logger
	redis    rueidis.Client
	batcher  *stock.Batcher
	store    *stock.Store
	kafka    *kgo.Client
	Relay    *journal.Relay
	fence    *journal.Fence
	verifier *auth.Verifier
	Catalog  *catalog.Catalog
	Room     *room.Room    // the waiting rooms and raffles, ticked every 100 ms while Serve runs
	Presale  *presale.Gate // the presale phases' lists and caps
	proofs   *pow.Issuer
	Handler  *httpapi.Handler
	Metrics  *obs.Metrics
	server   *fasthttp.Server
	admin    *http.Server

	start    startup.State // why /readyz is red while New waits
	born     time.Time     // when New began (the drift mirror's age of a sale never read)
	adminErr chan error    // the admin server's failure

	mu          sync.Mutex
	readyAt     time.Time
	readyErr    error
	readyErrs   uint64 // Metrics.RedisErrors at readyAt
	public, adm net.Listener
}

// Options are the parts tests replace.
type Options struct {
	Log *slog.Logger
	// KafkaOpts are appended to the relay producer's franz-go options.
	KafkaOpts []kgo.Opt
	// WrapStore, when set, wraps the Redis store the handler uses (tests count
	// calls with it).
	WrapStore func(httpapi.Store) httpapi.Store
}

// New binds the admin listener and serves it at once (/healthz green,
// /readyz red with the reason while the start lasts), connects to Redis,
// loads the sales and the purchase scripts, and binds the public listener.
// While Redis is away or starting, New waits for it (sharding/startup) for
// at most -start-wait (0: until ctx ends); the public listener is bound only
// once a purchase can be served, so that a client meanwhile is refused at
// once rather than left waiting.
func New(ctx context.Context, cfg config.Config, opt Options) (*App, error) {
	log := opt.Log
	if log == nil {
		log = slog.Default()
	}
	a := &App{cfg: cfg, log: log, Metrics: obs.New(), born: time.Now()}
	ok := false
	defer func() {
		if !ok {
			a.Close()
		}
	}()
	if err := a.serveAdmin(); err != nil {
		return nil, err
	}
	var err error
	a.verifier, err = auth.New(ctx, auth.Config{
		HS256Secret: []byte(cfg.JWTSecret), JWKS: cfg.JWKS, JWKSRefresh: cfg.JWKSRefresh,
		Issuer: cfg.Issuer, Audience: cfg.Audience, Skew: skew(cfg.Skew),
		MaxTokenLen: cfg.MaxTokenLen, CacheSize: cfg.TokenCache,
	})
	if err != nil {
		return nil, fmt.Errorf("setting up token verification: %w", err)
	}
	wait := startup.Wait{What: "redis", Max: cfg.StartWait, Log: log, State: &a.start}
	if err := wait.Until(ctx, func(context.Context) error { return a.connectRedis() }); err != nil {
		return nil, err
	}
	a.Catalog = catalog.New(newSalesSource(a.store, log), catalog.Config{
		Refresh: cfg.RefreshEvery, Poll: cfg.PollInterval, SoldOutGauge: a.Metrics.SoldOut, StockGauge: a.Metrics.Stock, SaleGauge: a.Metrics.Sale, Forget: a.Metrics.ForgetSale, Linger: coldMargin, Log: log,
		Prepare: a.prepareSales,
	})
	if err := a.newRelay(opt); err != nil {
		return nil, err
	}
	a.fence = journal.NewFence(a.redis, journal.FenceConfig{Hold: cfg.RelayFence, Tags: a.liveTags, Pending: a.pendingVoids, Log: log})
	a.Metrics.ClockOffset(a.fence.Offset)
	a.Metrics.MasterClockJumps(a.fence.Jumps)
	if a.Handler, err = a.newHandler(opt); err != nil {
		return nil, err
	}
	if err := wait.Until(ctx, a.loadRedis); err != nil {
		return nil, err
	}
	// The first fence beat before the first request: without its marks this
	// gateway may journal nothing (httpapi.Deps.Fence).
	if err := wait.Until(ctx, a.fence.Beat); err != nil {
		return nil, err
	}
	a.server = httpapi.NewServer(a.Handler.Handle, httpapi.ServerConfig{
		ReadTimeout: cfg.ReadTimeout, WriteTimeout: cfg.WriteTimeout, IdleTimeout: cfg.IdleTimeout,
		MaxConnsPerIP: cfg.MaxConnsPerIP, Concurrency: cfg.Concurrency, Log: a.log,
	})
	if err := a.listen(); err != nil {
		return nil, err
	}
	a.start.Done()
	ok = true
	return a, nil
}

// loadRedis loads the sales and the purchase scripts: what a purchase reads
// first. A master that accepts connections while it loads its data or while
// its cluster forms refuses both, and New waits.
func (a *App) loadRedis(ctx context.Context) error {
	if err := a.Catalog.Refresh(ctx, time.Now()); err != nil {
		return fmt.Errorf("loading sales from redis: %w", err)
	}
	return a.store.LoadScripts(ctx)
}

// redisConnTimeout is how long a Redis connection may leave a command
// unanswered, or take to open, before it is closed as dead (see
// connectRedis).
const redisConnTimeout = time.Second

// connectRedis creates the Redis client, the stock store and, with batch
// lanes, the batcher of the hot path (waiting for ReplicaAcks replicas).
func (a *App) connectRedis() error {
	cfg := a.cfg
	ropt := cfg.Redis.ClientOption()
	ropt.DisableCache, ropt.MaxFlushDelay, ropt.PipelineMultiplex = true, cfg.RedisFlushDelay, cfg.RedisMultiplex
	// No retries inside rueidis: it retries a read-only command that met a
	// broken connection (or LOADING, CLUSTERDOWN) with a backoff that grows
	// to a second, until the context ends. In a failover a purchase's
	// reading of a dead master's shard then held its batch lane, and every
	// purchase queued behind it, for the whole budget, and a reading begun
	// before the promotion outlived it: /readyz was green and the next
	// borrow still timed out (fresh-clone TestFaultMasterKill). A failed
	// call now fails at once; the purchase answers 503 (nothing reserved)
	// and each background loop (relay, catalog, sold-out poll) tries again
	// on its own pace. Redirects (MOVED, ASK) are still followed.
	ropt.DisableRetry = true
	// A node that hangs with its connections open (frozen, stalled, cut off
	// by a partition that drops packets) answers nothing and breaks nothing.
	// rueidis closes such a connection, and reads the slot map again, only
	// after ConnWriteTimeout (ten times the keep-alive by default: 10 s), and
	// every command of its slots goes to it meanwhile, also after its replica
	// was promoted (TestFaultMasterFreeze: 7 s of 503s past the promotion).
	// Every command of this process is a short script or reading answered in
	// milliseconds, so a second without an answer is a dead node; a new
	// connection's handshake gets the same second.
	ropt.ConnWriteTimeout, ropt.Dialer.Timeout = redisConnTimeout, redisConnTimeout
	var err error
	if a.redis, err = rueidis.NewClient(ropt); err != nil {
		return fmt.Errorf("connecting to redis %v: %w", cfg.Redis.Addrs, err)
	}
	a.store = stock.New(a.redis)
	if cfg.RedisBatchLanes > 0 {
		a.batcher = stock.NewBatcher(a.redis, cfg.RedisBatchLanes, cfg.Budget)
		a.batcher.SetAcks(cfg.ReplicaAcks, cfg.ReplicaTimeout)
		a.store.SetBatcher(a.batcher)
		a.Metrics.Batches(a.batcher.Stats)
		a.Metrics.ReserveCalls(a.batcher.ReserveStats)
		a.Metrics.ReplicaShortfalls(a.batcher.Shortfalls)
		a.Metrics.ReplicaUnconfirmed(a.batcher.Unconfirmed)
	}
	return nil
}

// newRelay creates the journal relay and its Kafka producer, when the
// gateway relays.
func (a *App) newRelay(opt Options) error {
	cfg := a.cfg
	if !cfg.Relay {
		return nil
	}
	kopts := append(journal.ProducerOpts(cfg.Kafka.Brokers), cfg.Kafka.Opts()...)
	kopts = append(kopts, kgo.ProducerLinger(cfg.Linger))
	var err error
	if a.kafka, err = kgo.NewClient(append(kopts, opt.KafkaOpts...)...); err != nil {
		return fmt.Errorf("creating the relay's kafka producer: %w", err)
	}
	a.Relay = journal.New(journal.Config{
		Topic: cfg.Topic, Lease: cfg.RelayLease, Hold: cfg.RelayHold, Settle: cfg.RelaySettle, Fence: cfg.RelayFence, Log: a.log,
		Acks: cfg.ReplicaAcks, AckTimeout: cfg.ReplicaTimeout,
		Recover: a.store.RecoverStalled, Cold: a.coldShard,
	}, a.redis, a.kafka, a.shards, a.Metrics.Relay())
	return nil
}

// pendingVoids adds to dst the shards where a void of this gateway waits to
// land, which its fence does not beat.
func (a *App) pendingVoids(dst map[string]bool) {
	if a.Handler != nil {
		a.Handler.PendingVoidTags(dst)
	}
}

// newHandler builds the public handler: the purchase path, the pages, the
// ticket, the waiting room and the raffle.
func (a *App) newHandler(opt Options) (*httpapi.Handler, error) {
	cfg := a.cfg
	tickets, err := ticketKeys(cfg, a.log)
	if err != nil {
		return nil, err
	}
	var acks room.Acker
	if a.batcher != nil {
		acks = a.batcher
	}
	if a.Room, a.proofs, err = frontDoor(cfg, a.redis, acks, a.log); err != nil {
		return nil, err
	}
	a.Metrics.DrawBeacons(a.Room.Beacons.Refused.Load, a.Room.Beacons.Overdue.Load)
	var capAcks presale.Acker
	if a.batcher != nil {
		capAcks = a.batcher
	}
	a.Presale = presale.New(a.redis, capAcks, a.log)
	site, err := page.New(page.Config{Token: cfg.PageToken, Dev: cfg.Dev, MaxAge: cfg.PageMaxAge, Media: cfg.PageMedia})
	if err != nil {
		return nil, err
	}
	var st httpapi.Store = a.store
	if opt.WrapStore != nil {
		st = opt.WrapStore(st)
	}
	return httpapi.New(httpapi.Config{
		Budget: cfg.Budget, ReleaseBudget: cfg.ReleaseBudget, OrderTTL: cfg.OrderTTL, TrustedProxies: cfg.TrustedProxies,
		NoRepeatRead: !cfg.RepeatRead, JournalBound: cfg.JournalBound,
		Dev: cfg.Dev, DevSecret: []byte(cfg.JWTSecret), DevIssuer: cfg.Issuer, DevAudience: cfg.Audience,
	}, httpapi.Deps{
		Catalog: a.Catalog, Store: st, Verifier: a.verifier,
		IPLimit:   limit.New(limit.Config{Rate: cfg.IPRate, Burst: cfg.IPBurst, MaxKeys: cfg.LimitKeys}),
		UserLimit: limit.New(limit.Config{Rate: cfg.UserRate, Burst: cfg.UserBurst, MaxKeys: cfg.LimitKeys}),
		Metrics:   a.Metrics, Borrower: a.store, Fence: a.fence, Log: a.log, Tickets: tickets, Page: site,
		Room: a.Room, Presale: a.Presale, Proofs: a.proofs, ProofLevel: &pow.Level{Operator: cfg.PowDifficulty, Auto: cfg.PowAutoRate},
	}), nil
}

// listen opens the public listener.
func (a *App) listen() error {
	ln, err := net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", a.cfg.Listen, err)
	}
	a.public = httpapi.NewDeadlineListener(httpapi.GuardHeads(ln), 0)
	return nil
}

// serveAdmin opens the admin listener and serves it until Serve shuts it
// down (or Close closes it); its failure reaches Serve through adminErr.
func (a *App) serveAdmin() error {
	var err error
	if a.adm, err = net.Listen("tcp", a.cfg.Admin); err != nil {
		return fmt.Errorf("listening on admin %s: %w", a.cfg.Admin, err)
	}
	a.admin = &http.Server{Handler: a.adminMux(), ReadHeaderTimeout: 5 * time.Second}
	a.adminErr = make(chan error, 1)
	go func(srv *http.Server, ln net.Listener) {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			a.adminErr <- err
		}
	}(a.admin, a.adm)
	return nil
}

// Addr returns the public listener's address.
func (a *App) Addr() string { return a.public.Addr().String() }

// AdminAddr returns the admin listener's address.
func (a *App) AdminAddr() string { return a.adm.Addr().String() }

// Serve runs until ctx is done or a listener fails, then shuts down: the
// public server stops accepting and drains for at most ShutdownGrace, the
// producer flushes, the clients close.
func (a *App) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- a.server.Serve(a.public) }()
	go a.Catalog.Run(ctx)
	go a.Room.Run(ctx, roomSource{a.Catalog})
	go a.Presale.Run(ctx, roomSource{a.Catalog})
	go repeatlog.Loop(ctx, driftEvery, a.log, "drift mirror", a.mirrorDrift)
	relayCtx, stopRelay := context.WithCancel(context.Background())
	relayDone := make(chan struct{})
	go func() {
		defer close(relayDone)
		if a.Relay != nil {
			a.Relay.Run(relayCtx)
		}
	}()
	// The fence beats until the last request was answered (it outlives ctx
	// through the drain): a stale mark would refuse the requests draining.
	fenceDone := make(chan struct{})
	go func() {
		defer close(fenceDone)
		a.fence.Run(relayCtx)
	}()
	a.log.Info("gateway serving", "listen", a.Addr(), "admin", a.AdminAddr())
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
		a.log.Error("listener failed", "err", serveErr)
	case serveErr = <-a.adminErr:
		a.log.Error("admin listener failed", "err", serveErr)
	}
	cancel()
	sctx, scancel := context.WithTimeout(context.Background(), a.cfg.ShutdownGrace)
	defer scancel()
	if err := a.server.ShutdownWithContext(sctx); err != nil {
		a.log.Warn("draining public requests", "err", err)
	}
	_ = a.admin.Shutdown(sctx)
	// The relay stops after the last request: it finishes its rounds in
	// flight and releases its leases, so another gateway takes the shards at
	// once instead of after the lease's lifetime.
	stopRelay()
	<-relayDone
	<-fenceDone
	a.Close()
	a.log.Info("gateway stopped")
	return serveErr
}

// Close releases the clients and listeners; Serve calls it on its way out.
func (a *App) Close() {
	if a.Handler != nil {
		a.Handler.Close()
		a.leaveFence()
	}
	if a.kafka != nil {
		a.kafka.Close()
		a.kafka = nil
	}
	if a.verifier != nil {
		a.verifier.Close()
	}
	if a.batcher != nil {
		a.batcher.Close()
	}
	if a.redis != nil {
		a.redis.Close()
	}
	if a.public != nil {
		_ = a.public.Close()
	}
	if a.admin != nil {
		_ = a.admin.Close() // and its listener
	}
}

// leaveFence removes this gateway's fence marks when no void of it is left
// to land, so that the relays need not wait the fence's time for it; with
// voids left, the marks stay until they are taken for gone.
func (a *App) leaveFence() {
	if a.fence == nil || a.redis == nil || a.Handler.RetriesPending() > 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := a.fence.Leave(ctx); err != nil {
		a.log.Warn("leaving the fence: the relays wait for the marks to age out", "err", err)
	}
}

func (a *App) adminMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if err := a.ready(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintf(w, "not ready: %v\n", err)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.Handle("/metrics", promhttp.HandlerFor(a.Metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	// /debug/pprof/cmdline is not served: it would show every flag,
	// secrets included. pprof.Index links to it; the link answers 404.
	mux.HandleFunc("/debug/pprof/cmdline", http.NotFound)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	if clock.Knob() {
		mux.Handle("/debug/clock", clock.Handler()) // the lab's test knob (package clock)
	}
	return mux
}

// ready checks what a purchase needs: the purchase scripts loaded on every
// master (LoadScripts loads them again on a restarted or new master), which
// also proves that every master answers, and a key of every shard of the
// live sales read (a master answers SCRIPT LOAD while it still refuses keys:
// loading its data, or in its first seconds after a restart). It checks at
// most once per readyCache and answers the last result in between, unless a Redis
// call of the request path failed since: then it checks again at once, so
// that a master that just died turns /readyz red with the first purchase it
// failed, not up to a second later. Kafka is not checked: purchases do not
// wait for it (the journal holds the events while it is away).
func (a *App) ready(ctx context.Context) error {
	if err := a.start.Err(); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	errs := a.Metrics.RedisErrors()
	if time.Since(a.readyAt) < readyCache && errs == a.readyErrs {
		return a.readyErr
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var err error
	if e := a.store.LoadScripts(ctx); e != nil {
		err = fmt.Errorf("redis: %w", e)
	} else if e := a.store.ServesShards(ctx, a.liveTags()); e != nil {
		err = fmt.Errorf("redis: %w", e)
	} else if a.batcher != nil {
		if e := a.batcher.Sync(ctx); e != nil {
			err = fmt.Errorf("redis: %w", e)
		}
	}
	if err == nil {
		err = a.fence.Ready(time.Now())
	}
	a.readyAt, a.readyErr, a.readyErrs = time.Now(), err, errs
	return err
}

// readyCache is how long a readiness result is answered again: a load
// balancer or several probers asking many times a second cost one check per
// readyCache, and a fault that began since is seen at most this late (a
// Kubernetes probe, every few seconds, always gets a fresh check).
const readyCache = 250 * time.Millisecond

// liveTags lists the shards of the sales that can take purchases now or
// within coldMargin (not cold, see coldShard): the shards /readyz checks are
// served.
func (a *App) liveTags() []string {
	var out []string
	for _, s := range a.Catalog.Snapshot().Sales() {
		for _, tag := range s.Shards {
			if !a.coldShard(journal.Shard{SaleID: s.ID, Tag: tag}) {
				out = append(out, tag)
			}
		}
	}
	return out
}

// shards lists every shard of every loaded sale (of -relay-sales when set),
// for the relay.
func (a *App) shards() []journal.Shard {
	var out []journal.Shard
	for _, s := range a.Catalog.Snapshot().Sales() {
		if len(a.cfg.RelaySales) > 0 && !slices.Contains(a.cfg.RelaySales, s.ID) {
			continue
		}
		for _, tag := range s.Shards {
			out = append(out, journal.Shard{SaleID: s.ID, Tag: tag})
		}
	}
	return out
}

// prepareSales beats the fence on the shards of the sales the catalog is
// about to serve anew that can take purchases now or soon (not cold), so
// that a sale created live is sold from its first request (without its
// marks the gateway journals nothing there: httpapi.Deps.Fence).
func (a *App) prepareSales(ctx context.Context, sales []*catalog.Sale) error {
	n := time.Now().UnixNano()
	var tags []string
	for _, s := range sales {
		if n >= s.Start-int64(coldMargin) && !s.Closed(n, coldMargin) {
			tags = append(tags, s.Shards...)
		}
	}
	if len(tags) == 0 || a.fence == nil {
		return nil
	}
	return a.fence.BeatTags(ctx, tags)
}

// coldMargin is how long before a sale's start, and after its last payment
// window closed, its journals are still read at the warm pace.
const coldMargin = time.Minute

// coldShard reports a shard whose journal can only get rare entries: its
// sale starts more than coldMargin from now, or its last payment window
// (sale end plus window) closed more than coldMargin ago, or the sale is
// gone from the catalog. The relay reads such an empty journal every few
// seconds instead of every second (journal.Config.Cold).
func (a *App) coldShard(sh journal.Shard) bool {
	s := a.Catalog.Snapshot().Sale(sh.SaleID)
	if s == nil {
		return true
	}
	n := time.Now().UnixNano()
	return n < s.Start-int64(coldMargin) || s.Closed(n, coldMargin)
}

// skew maps -jwt-skew to auth.Config.Skew, where 0 means the default and a
// negative value none: the flag's 0 means none.
func skew(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
