package repeatlog

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// lines returns a logger writing one text line per record into buf.
func lines() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	h := slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	return slog.New(h), &buf
}

func TestFailureThinsARunAndLogsItsEnd(t *testing.T) {
	log, buf := lines()
	var f Failure
	t0 := time.Unix(1000, 0)
	f.Recovered(log, t0, "poll recovered") // no run: nothing
	for i := 0; i < 40; i++ {              // 10 s of failures, 4 a second
		f.Failed(log, t0.Add(time.Duration(i)*250*time.Millisecond), "poll failed", "err", "down")
	}
	f.Failed(log, t0.Add(10*time.Second), "poll failed", "err", "down")
	f.Failed(log, t0.Add(10250*time.Millisecond), "poll failed", "err", "down")
	f.Recovered(log, t0.Add(11*time.Second), "poll recovered", "shard", "s1:0:0")
	f.Recovered(log, t0.Add(12*time.Second), "poll recovered") // over already: nothing
	want := []string{
		`level=WARN msg="poll failed" err=down`,
		`level=WARN msg="poll failed" err=down repeats=39 failing_for=10s`,
		`level=INFO msg="poll recovered" shard=s1:0:0 failures=42 after=11s`,
	}
	if got := strings.Split(strings.TrimSpace(buf.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	buf.Reset()
	f.Failed(log, t0.Add(13*time.Second), "poll failed", "err", "again") // a new run: logged at once
	if got := strings.TrimSpace(buf.String()); got != `level=WARN msg="poll failed" err=again` {
		t.Fatalf("a new run's first failure: %q", got)
	}
}

func TestFailureConcurrentUse(t *testing.T) {
	log, buf := lines()
	var mu sync.Mutex
	log = slog.New(lockedHandler{log.Handler(), &mu})
	var f Failure
	now := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for i := 0; i < 1000; i++ {
				f.Failed(log, now, "round failed")
			}
		})
	}
	wg.Wait()
	f.Recovered(log, now, "round recovered")
	mu.Lock()
	defer mu.Unlock()
	out := buf.String()
	if n := strings.Count(out, "round failed"); n != 1 {
		t.Fatalf("%d failure lines for 8000 failures at one instant, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "failures=8000") {
		t.Fatalf("the recovery line should count 8000 failures:\n%s", out)
	}
}

// lockedHandler serializes a handler's writes into a shared buffer.
type lockedHandler struct {
	slog.Handler
	mu *sync.Mutex
}

func (h lockedHandler) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.Handler.Handle(ctx, r)
}

func TestRoundLogsFailureRecoveryAndNothingAfterShutdown(t *testing.T) {
	log, buf := lines()
	var f Failure
	ctx, cancel := context.WithCancel(context.Background())
	f.Round(ctx, log, nil, "tick", "shard", "s1:0:0") // no run: nothing
	f.Round(ctx, log, errors.New("down"), "tick", "shard", "s1:0:0")
	f.Round(ctx, log, nil, "tick", "shard", "s1:0:0")
	cancel()
	f.Round(ctx, log, context.Canceled, "tick", "shard", "s1:0:0") // a shutdown: nothing
	got := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(got) != 2 || !strings.HasPrefix(got[0], `level=WARN msg="tick failed" shard=s1:0:0 err=down`) ||
		!strings.HasPrefix(got[1], `level=INFO msg="tick recovered" shard=s1:0:0 failures=1 after=`) {
		t.Fatalf("log:\n%s", buf.String())
	}
}

func TestLoopRunsRoundsAndLogsTheirRun(t *testing.T) {
	log, buf := lines()
	ctx, cancel := context.WithCancel(context.Background())
	var rounds int
	done := make(chan struct{})
	go func() {
		defer close(done)
		Loop(ctx, 5*time.Millisecond, log, "sweep", func(ctx context.Context, now time.Time) error {
			rounds++
			switch {
			case now.IsZero():
				return errors.New("no time")
			case rounds <= 3:
				return errors.New("down")
			case rounds == 5:
				cancel()
				return errors.New("stopped") // after ctx ended: not logged
			}
			return nil
		})
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Loop did not return after ctx ended")
	}
	if rounds != 5 {
		t.Fatalf("rounds = %d, want 5 (Loop went on after ctx ended?)", rounds)
	}
	got := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(got) != 2 || got[0] != `level=WARN msg="sweep failed" err=down` ||
		!strings.HasPrefix(got[1], `level=INFO msg="sweep recovered" failures=3 after=`) {
		t.Fatalf("log:\n%s", buf.String())
	}
}
