// Package app wires the gateway: it builds the Redis, Kafka, auth, limiter,
// catalog and HTTP pieces from a config.Config, serves the public and admin
// listeners, and shuts them down in order (stop accepting, drain requests,
// flush the producer, close the clients).
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
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
	"flashsale/gateway/internal/orders"
	"flashsale/sharding/stock"
	"flashsale/writer/orderevent"
)

// App is a wired gateway. Create it with New, then Serve; Close releases what
// New opened when Serve is never called.
type App struct {
	cfg      config.Config
	log      *slog.Logger
	redis    rueidis.Client
	batcher  *stock.Batcher
	store    *stock.Store
	producer *orders.Producer
	verifier *auth.Verifier
	Catalog  *catalog.Catalog
	Handler  *httpapi.Handler
	Metrics  *obs.Metrics
	server   *fasthttp.Server
	admin    *http.Server

	mu          sync.Mutex
	readyAt     time.Time
	readyErr    error
	public, adm net.Listener
}

// Options are the parts tests replace.
type Options struct {
	Log *slog.Logger
	// KafkaOpts are appended to the producer's franz-go options.
	KafkaOpts []kgo.Opt
	// WrapStore, when set, wraps the Redis store the handler uses (tests count
	// calls with it).
	WrapStore func(httpapi.Store) httpapi.Store
}

// New connects to Redis and Kafka, loads the sales and binds both listeners.
func New(ctx context.Context, cfg config.Config, opt Options) (*App, error) {
	log := opt.Log
	if log == nil {
		log = slog.Default()
	}
	a := &App{cfg: cfg, log: log, Metrics: obs.New()}
	ok := false
	defer func() {
		if !ok {
			a.Close()
		}
	}()
	var err error
	a.redis, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: cfg.Redis, ShuffleInit: true, DisableCache: true,
		MaxFlushDelay: cfg.RedisFlushDelay, PipelineMultiplex: cfg.RedisMultiplex})
	if err != nil {
		return nil, fmt.Errorf("connecting to redis %v: %w", cfg.Redis, err)
	}
	a.store = stock.New(a.redis)
	if cfg.RedisBatchLanes > 0 {
		a.batcher = stock.NewBatcher(a.redis, cfg.RedisBatchLanes, cfg.Budget)
		a.store.SetBatcher(a.batcher)
		a.Metrics.Batches(a.batcher.Stats)
	}
	a.verifier, err = auth.New(ctx, auth.Config{
		HS256Secret: []byte(cfg.JWTSecret), JWKS: cfg.JWKS, JWKSRefresh: cfg.JWKSRefresh,
		Issuer: cfg.Issuer, Audience: cfg.Audience, Skew: skew(cfg.Skew),
		MaxTokenLen: cfg.MaxTokenLen, CacheSize: cfg.TokenCache,
	})
	if err != nil {
		return nil, fmt.Errorf("setting up token verification: %w", err)
	}
	a.Catalog = catalog.New(newSalesSource(a.store, log), catalog.Config{
		Refresh: cfg.RefreshEvery, Poll: cfg.PollInterval, SoldOutGauge: a.Metrics.SoldOut, Log: log,
	})
	var h *httpapi.Handler
	a.producer, err = orders.New(orders.Config{
		Brokers: cfg.Kafka, Topic: cfg.Topic, Linger: cfg.Linger, Budget: cfg.Budget, ExtraOpts: opt.KafkaOpts,
	}, func(ev *orderevent.Event, err error) { h.Settle(ev, err) })
	if err != nil {
		return nil, err
	}
	var st httpapi.Store = a.store
	if opt.WrapStore != nil {
		st = opt.WrapStore(st)
	}
	h = httpapi.New(httpapi.Config{
		Budget: cfg.Budget, ReleaseBudget: cfg.ReleaseBudget, OrderTTL: cfg.OrderTTL, TrustedProxies: cfg.TrustedProxies,
		NoRepeatRead: !cfg.RepeatRead,
	}, httpapi.Deps{
		Catalog: a.Catalog, Store: st, Producer: a.producer, Verifier: a.verifier,
		IPLimit:   limit.New(limit.Config{Rate: cfg.IPRate, Burst: cfg.IPBurst, MaxKeys: cfg.LimitKeys}),
		UserLimit: limit.New(limit.Config{Rate: cfg.UserRate, Burst: cfg.UserBurst, MaxKeys: cfg.LimitKeys}),
		Metrics:   a.Metrics, Borrower: a.store, Log: log,
	})
	a.Handler = h
	if err := a.Catalog.Refresh(ctx, time.Now()); err != nil {
		return nil, fmt.Errorf("loading sales from redis: %w", err)
	}
	a.server = httpapi.NewServer(h.Handle, httpapi.ServerConfig{
		ReadTimeout: cfg.ReadTimeout, WriteTimeout: cfg.WriteTimeout, IdleTimeout: cfg.IdleTimeout,
		MaxConnsPerIP: cfg.MaxConnsPerIP, Concurrency: cfg.Concurrency,
	})
	a.admin = &http.Server{Handler: a.adminMux(), ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	a.public = httpapi.NewDeadlineListener(ln, 0)
	if a.adm, err = net.Listen("tcp", cfg.Admin); err != nil {
		return nil, fmt.Errorf("listening on admin %s: %w", cfg.Admin, err)
	}
	ok = true
	return a, nil
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
	errc := make(chan error, 2)
	go func() { errc <- a.server.Serve(a.public) }()
	go func() {
		if err := a.admin.Serve(a.adm); !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	go a.Catalog.Run(ctx)
	a.log.Info("gateway serving", "listen", a.Addr(), "admin", a.AdminAddr())
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
		a.log.Error("listener failed", "err", serveErr)
	}
	cancel()
	sctx, scancel := context.WithTimeout(context.Background(), a.cfg.ShutdownGrace)
	defer scancel()
	if err := a.server.ShutdownWithContext(sctx); err != nil {
		a.log.Warn("draining public requests", "err", err)
	}
	_ = a.admin.Shutdown(sctx)
	if err := a.producer.Close(sctx); err != nil {
		a.log.Warn("flushing producer", "err", err)
	}
	a.producer = nil
	a.Close()
	a.log.Info("gateway stopped")
	return serveErr
}

// Close releases the clients and listeners; Serve calls it on its way out.
func (a *App) Close() {
	if a.producer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = a.producer.Close(ctx)
		cancel()
		a.producer = nil
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
	if a.adm != nil {
		_ = a.adm.Close()
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
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// ready pings Redis and Kafka, at most once a second; between checks it
// answers the last result.
func (a *App) ready(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if time.Since(a.readyAt) < time.Second {
		return a.readyErr
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var err error
	if e := a.redis.Do(ctx, a.redis.B().Ping().Build()).Error(); e != nil {
		err = fmt.Errorf("redis: %w", e)
	} else if p := a.producer; p == nil {
		err = errors.New("kafka: producer closed")
	} else if e := p.Ping(ctx); e != nil {
		err = fmt.Errorf("kafka: %w", e)
	}
	a.readyAt, a.readyErr = time.Now(), err
	return err
}

// skew maps -jwt-skew to auth.Config.Skew, where 0 means the default and a
// negative value none: the flag's 0 means none.
func skew(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
