package app_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"flashsale/deploy/testenv"
	"flashsale/writer/internal/app"
	"flashsale/writer/internal/obs"
)

// TestStartWaitsForPostgres starts a writer while PostgreSQL refuses
// connections: it stays up with /healthz green and /readyz red naming the
// wait (one line), and once PostgreSQL answers it starts by itself, turns
// ready and persists.
func TestStartWaitsForPostgres(t *testing.T) {
	stack(t)
	st, rs := newStores(t)
	s := newSale(t, st, rs, 2, 10)
	topic := testenv.NewTopic(t, "writer-startwait")
	cfg := testConfig(topic, groupName(t), s)
	pg, err := url.Parse(testenv.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewProxy(t, pg.Host)
	pg.Host = proxy.Addr
	cfg.Postgres.URL, cfg.Admin = pg.String(), testenv.FreeAddr(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := testenv.StartAsync(func() (*app.App, error) { return app.New(ctx, cfg, testLog(t)) })
	admin := "http://" + cfg.Admin
	testenv.WaitListening(t, cfg.Admin, 5*time.Second)
	time.Sleep(1500 * time.Millisecond) // several attempts
	if code, body := testenv.Get(t, admin+"/healthz"); code != 200 {
		t.Errorf("/healthz while waiting for postgresql: %d %q, want 200: the process is alive", code, body)
	}
	code, body := testenv.Get(t, admin+"/readyz")
	if want := "start: starting: waiting for postgresql: connecting to postgresql: failed to connect to "; code != 503 || !strings.HasPrefix(body, want) ||
		!strings.Contains(body, "connection refused") || strings.Contains(body, "\npostgresql:") || strings.Contains(body, "\nkafka:") {
		t.Errorf("/readyz while waiting for postgresql: %d %q, want 503 %q... connection refused, and no other check", code, body, want)
	}
	start.StillWaiting(t, "PostgreSQL")

	proxy.Start(t)
	a := start.Await(t, "PostgreSQL")
	defer a.Close()
	ran := make(chan error, 1)
	go func() { ran <- a.Run(ctx) }()
	testenv.WaitReady(t, cfg.Admin)
	produce(t, newProducer(t, topic), reservations(s, s.Items[0].ID, 10, 10*time.Minute))
	waitFor(t, 30*time.Second, "10 orders persisted", func() bool { return obs.Value(a.Metrics.Persisted) >= 10 })
	cancel()
	if err := <-ran; err != nil {
		t.Errorf("run: %v", err)
	}
}

// TestStopWhileWaitingForPostgres: SIGTERM (ctx's end) while the writer
// waits ends New at once with the reason, and frees the admin port.
func TestStopWhileWaitingForPostgres(t *testing.T) {
	stack(t)
	st, rs := newStores(t)
	s := newSale(t, st, rs, 1, 10)
	cfg := testConfig("unused", groupName(t), s)
	cfg.Postgres.URL = "postgres://flashsale@" + testenv.FreeAddr(t) + "/flashsale?sslmode=disable"
	cfg.Admin = testenv.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := app.New(ctx, cfg, testLog(t))
		errc <- err
	}()
	time.Sleep(700 * time.Millisecond)
	cancel()
	testenv.CheckGaveUp(t, errc, "stopped while waiting for postgresql: context canceled", cfg.Admin)
}

// TestReadyzChecksRedis: a ready writer whose Redis connections are gone
// (here: its client closed) is not ready, and /readyz names Redis: the
// writer marks orders persisted, returns stock and sweeps ghosts there. The
// per-master pings are checked against real kills in deploy/e2e
// (TestFaultMasterKill: red naming the master until its replica took over;
// TestFaultReplicaKill: a dead replica leaves it green).
func TestReadyzChecksRedis(t *testing.T) {
	stack(t)
	st, rs := newStores(t)
	s := newSale(t, st, rs, 1, 10)
	cfg := testConfig(testenv.NewTopic(t, "writer-readyz"), groupName(t), s)
	cfg.Admin = testenv.FreeAddr(t)
	a, err := app.New(context.Background(), cfg, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	testenv.WaitReady(t, cfg.Admin)
	a.Redis.Close()
	code, body := testenv.Get(t, "http://"+cfg.Admin+"/readyz")
	if code != 503 || !strings.HasPrefix(body, "redis: ") || strings.Contains(body, "postgresql:") {
		t.Fatalf("/readyz with Redis gone: %d %q, want 503 naming redis only", code, body)
	}
	t.Logf("/readyz: %q", body)
}
