// Package repeatlog keeps a background loop's repeating failure from
// flooding the log. While Redis or Kafka is away, each relay shard, poll and
// refresh loop fails every round (several times a second each); an operator
// needs the first line, a reminder now and then that it goes on, and a line
// when it is over, not hundreds of copies of one line.
//
// A Failure holds one loop's run of failures: Failed logs the run's first
// failure at once and then at most one line per Every (carrying how many it
// left out and how long the run has lasted); Recovered logs the end of the
// run, once. Metrics still count every failure: only the log is thinned.
package repeatlog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Every is how often a failure that goes on is logged again.
const Every = 10 * time.Second

// Failure is one loop's run of failures. The zero value is ready; it is safe
// for concurrent use.
type Failure struct {
	mu      sync.Mutex
	failing bool
	since   time.Time // first failure of the run
	logged  time.Time // the run's last line
	left    int       // failures since the last line, not logged
	count   int       // failures in the run
}

// Failed records a failure at now and logs msg at Warn with args when it is
// the run's first or Every has passed since the run's last line; a repeat
// line adds "repeats" (the failures left out since the line before) and
// "failing_for" (the run's length so far).
func (f *Failure) Failed(log *slog.Logger, now time.Time, msg string, args ...any) {
	f.mu.Lock()
	first := !f.failing
	if first {
		f.failing, f.since, f.count = true, now, 0
	}
	f.count++
	if !first && now.Sub(f.logged) < Every {
		f.left++
		f.mu.Unlock()
		return
	}
	left, since := f.left, f.since
	f.logged, f.left = now, 0
	f.mu.Unlock()
	if !first {
		args = append(args, "repeats", left, "failing_for", now.Sub(since).Round(time.Millisecond))
	}
	log.Warn(msg, args...)
}

// Recovered ends the run of failures, if there is one, and logs msg at Info
// with args, the run's failures ("failures") and its length ("after").
// Without a run it logs nothing.
func (f *Failure) Recovered(log *slog.Logger, now time.Time, msg string, args ...any) {
	f.mu.Lock()
	if !f.failing {
		f.mu.Unlock()
		return
	}
	count, since := f.count, f.since
	f.failing, f.left = false, 0
	f.mu.Unlock()
	log.Info(msg, append(args, "failures", count, "after", now.Sub(since).Round(time.Millisecond))...)
}

// Round logs one round's outcome: a nil err ends the run of failures
// (Recovered, what+" recovered"), an error while ctx is live is a failure
// (Failed, what+" failed" with "err" and args). An error after ctx ended (a
// shutdown) logs nothing.
func (f *Failure) Round(ctx context.Context, log *slog.Logger, err error, what string, args ...any) {
	switch {
	case err == nil:
		f.Recovered(log, time.Now(), what+" recovered", args...)
	case ctx.Err() == nil:
		f.Failed(log, time.Now(), what+" failed", append(args, "err", err)...)
	}
}

// Loop runs round every interval (its first after one interval) until ctx
// ends, and logs the rounds' outcomes as one loop's run of failures (Round,
// under what). It is the body of the writer's and gateway's periodic jobs.
func Loop(ctx context.Context, interval time.Duration, log *slog.Logger, what string, round func(ctx context.Context, now time.Time) error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var fails Failure
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			fails.Round(ctx, log, round(ctx, now), what)
		}
	}
}
