package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"flashsale/deploy/testenv"
	"flashsale/gateway/internal/app"
	"flashsale/gateway/internal/config"
)

// startConfig is a gateway config over s's sale with fixed listen addresses
// (New does not return while it waits, so the test must know them first)
// and Redis reached through seed only.
func startConfig(t *testing.T, s *stack, seed string) config.Config {
	cfg := config.Default()
	cfg.Listen, cfg.Admin = testenv.FreeAddr(t), testenv.FreeAddr(t)
	cfg.Redis.Addrs, cfg.Kafka.Brokers, cfg.Topic = []string{seed}, testenv.KafkaBrokers(), s.topic
	cfg.JWTSecret = string(secret)
	cfg.RelaySales = []int64{s.sale.ID}
	cfg.IPRate, cfg.IPBurst, cfg.MaxConnsPerIP = 1e6, 1e6, 0
	return cfg
}

// TestStartWaitsForRedis starts a gateway while its Redis seed refuses
// connections: it stays up with /healthz green and /readyz red naming the
// wait, refuses public connections (nothing could be served), and once Redis
// answers it starts by itself, turns ready and sells.
func TestStartWaitsForRedis(t *testing.T) {
	s := start(t, 100, 2, nil, "") // the sale, and a gateway proving the stack works
	// The cluster client only reads the topology through its seed and then
	// dials the nodes the topology names: the purchases do not go through
	// the proxy.
	proxy := testenv.NewProxy(t, testenv.RedisAddrs()[0])
	cfg := startConfig(t, s, proxy.Addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := testenv.StartAsync(func() (*app.App, error) {
		return app.New(ctx, cfg, app.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	})
	admin := "http://" + cfg.Admin
	var code int
	var body string
	testenv.WaitListening(t, cfg.Admin, 5*time.Second)
	time.Sleep(1500 * time.Millisecond) // several attempts
	if code, body = testenv.Get(t, admin+"/healthz"); code != 200 {
		t.Errorf("/healthz while waiting for redis: %d %q, want 200: the process is alive", code, body)
	}
	code, body = testenv.Get(t, admin+"/readyz")
	if want := "not ready: starting: waiting for redis: connecting to redis [" + proxy.Addr + "]: dial tcp " + proxy.Addr + ": connect: connection refused"; code != 503 || strings.TrimSpace(body) != want {
		t.Errorf("/readyz while waiting for redis: %d %q, want 503 %q", code, body, want)
	}
	if c, err := net.DialTimeout("tcp", cfg.Listen, time.Second); err == nil {
		_ = c.Close()
		t.Errorf("the public listener accepts connections before a purchase can be served")
	}
	start.StillWaiting(t, "Redis")

	proxy.Start(t)
	a := start.Await(t, "Redis")
	served := make(chan error, 1)
	go func() { served <- a.Serve(ctx) }()
	testenv.WaitReady(t, cfg.Admin)
	g := &stack{t: t, app: a, sale: s.sale, item: s.item, client: &fasthttp.Client{}}
	if code, body := g.do("POST", g.purchasePath(), token(t, 7)); code != 202 {
		t.Errorf("first purchase on the gateway that waited: %d %s, want 202", code, body)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
}

// TestStopWhileWaitingForRedis: SIGTERM (ctx's end) while the gateway waits
// for Redis ends New at once with the reason, and frees the admin port.
func TestStopWhileWaitingForRedis(t *testing.T) {
	s := start(t, 10, 1, nil, "")
	cfg := startConfig(t, s, testenv.FreeAddr(t))
	cfg.StartWait = 0
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := app.New(ctx, cfg, app.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		errc <- err
	}()
	time.Sleep(700 * time.Millisecond)
	cancel()
	testenv.CheckGaveUp(t, errc, "stopped while waiting for redis: context canceled", cfg.Admin)
}

// TestStartWaitBound: with -start-wait, a Redis that never answers ends the
// start with the last error.
func TestStartWaitBound(t *testing.T) {
	s := start(t, 10, 1, nil, "")
	seed := testenv.FreeAddr(t)
	cfg := startConfig(t, s, seed)
	cfg.StartWait = 600 * time.Millisecond
	began := time.Now()
	_, err := app.New(context.Background(), cfg, app.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if want := fmt.Sprintf("redis did not answer within 600ms: connecting to redis [%s]", seed); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("New = %v, want %q", err, want)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("gave up after %v", d)
	}
}
