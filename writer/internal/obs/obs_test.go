package obs

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

func TestAdmin(t *testing.T) {
	m := NewMetrics()
	m.Duplicates.Add(3)
	m.Consumed.WithLabelValues("reserved").Inc()
	kafkaDown := errors.New("no broker")
	var kafka error
	srv, err := Listen("127.0.0.1:0", m, map[string]Check{
		"postgresql": func(context.Context) error { return nil },
		"kafka":      func(context.Context) error { return kafka },
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + srv.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("/healthz %d", code)
	}
	if code, _ := get("/readyz"); code != 200 {
		t.Fatalf("/readyz %d with everything up", code)
	}
	kafka = kafkaDown
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "kafka: no broker") {
		t.Fatalf("/readyz %d %q with kafka down", code, body)
	}
	code, body := get("/metrics")
	for _, want := range []string{"flashsale_writer_duplicates_total 3", `flashsale_writer_events_consumed_total{type="reserved"} 1`,
		"flashsale_writer_consumer_lag", "flashsale_writer_reservation_to_commit_seconds_bucket", "flashsale_writer_releases_total"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if Value(m.Duplicates) != 3 {
		t.Errorf("Value = %v", Value(m.Duplicates))
	}
}
