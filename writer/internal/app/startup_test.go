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
	type started struct {
		a   *app.App
		err error
	}
	newDone := make(chan started, 1)
	go func() {
		a, err := app.New(ctx, cfg, testLog(t))
		newDone <- started{a, err}
	}()
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
	select {
	case r := <-newDone:
		t.Fatalf("New returned while PostgreSQL was away: %v", r.err)
	default:
	}

	proxy.Start(t)
	back := time.Now()
	var r started
	select {
	case r = <-newDone:
	case <-time.After(10 * time.Second):
		t.Fatal("New still waits 10 s after PostgreSQL answered")
	}
	if r.err != nil {
		t.Fatalf("New after PostgreSQL answered: %v", r.err)
	}
	defer r.a.Close()
	t.Logf("started %v after PostgreSQL answered", time.Since(back).Round(time.Millisecond))
	ran := make(chan error, 1)
	go func() { ran <- r.a.Run(ctx) }()
	for wait := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if code, body = testenv.Get(t, admin+"/readyz"); code == 200 {
			break
		}
		if time.Since(wait) > 10*time.Second {
			t.Fatalf("/readyz 10 s after the start: %d %q", code, body)
		}
	}
	produce(t, newProducer(t, topic), reservations(s, s.Items[0].ID, 10, 10*time.Minute))
	waitFor(t, 30*time.Second, "10 orders persisted", func() bool { return obs.Value(r.a.Metrics.Persisted) >= 10 })
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
