// Package startup waits, at a process's start, for the servers it depends on.
//
// A gateway or writer started while Redis (or PostgreSQL) is away, restarting
// or still loading its data used to exit at once; under Kubernetes it then
// waited out the crash-loop back-off (up to five minutes) after the server
// came back. Instead, the process now keeps its admin listener up (/healthz
// green, /readyz red with the reason), retries the step that needs the
// server with a capped back-off, logs the wait without flooding the log, and
// goes on the moment the server answers.
//
// Only errors a server gives while it is away or starting are waited out
// (Transient): a refused or timed-out connection, a name that does not
// resolve yet, LOADING, CLUSTERDOWN, a slot without a node. Any other error
// (a wrong password, a certificate, a malformed sale) is a configuration
// error and ends the wait at once, as before.
package startup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"flashsale/sharding/backoff"
	"flashsale/sharding/repeatlog"
)

// Retry is the wait between two attempts: from 200 ms, doubling, up to 2 s,
// so that a server that comes back is used within about 2 s.
var Retry = backoff.Policy{First: 200 * time.Millisecond, Max: 2 * time.Second}

// attemptTimeout bounds one attempt: a server that accepts connections and
// never answers (stalled, paused) is a transient failure, not a hang.
const attemptTimeout = 5 * time.Second

// State is what a process's /readyz says while it starts: the step it waits
// for and the last error of that step. The zero value is "starting". It is
// safe for concurrent use.
type State struct {
	mu   sync.Mutex
	what string
	err  error
	done bool
}

// Err returns nil once the start is over, and otherwise why the process is
// not ready yet ("starting: waiting for redis: dial tcp ...: connection
// refused").
func (s *State) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.done:
		return nil
	case s.err != nil:
		return fmt.Errorf("starting: waiting for %s: %w", s.what, s.err)
	case s.what != "":
		return fmt.Errorf("starting: waiting for %s", s.what)
	}
	return errors.New("starting")
}

// Done marks the start over: Err returns nil from now on.
func (s *State) Done() {
	s.mu.Lock()
	s.done, s.err = true, nil
	s.mu.Unlock()
}

func (s *State) note(what string, err error) {
	s.mu.Lock()
	s.what, s.err = what, err
	s.mu.Unlock()
}

// Wait is one step of a start that needs a server.
type Wait struct {
	What  string        // the server, for the log and /readyz: "redis"
	Max   time.Duration // give up after this long; 0 waits until ctx ends
	Log   *slog.Logger
	State *State // when set, notes each failure for /readyz
}

// Until calls step until it returns nil, and returns nil. It returns step's
// error at once when the error is not Transient, the last error once Max has
// passed, and ctx's error (wrapping the last one) when ctx ends first. Each
// attempt gets a context bounded by attemptTimeout. The first failure is
// logged at once, a reminder every repeatlog.Every, and the end of the wait
// once.
func (w Wait) Until(ctx context.Context, step func(context.Context) error) error {
	var fails repeatlog.Failure
	began := time.Now()
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := step(actx)
		cancel()
		if err == nil {
			fails.Recovered(w.Log, time.Now(), w.What+" answers: starting")
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("stopped while waiting for %s: %w (last: %w)", w.What, ctx.Err(), err)
		}
		if !Transient(err) {
			return err
		}
		if w.Max > 0 && time.Since(began) >= w.Max {
			return fmt.Errorf("%s did not answer within %v: %w", w.What, w.Max, err)
		}
		if w.State != nil {
			w.State.note(w.What, err)
		}
		fails.Failed(w.Log, time.Now(), "waiting for "+w.What+" to start", "err", err)
		if !backoff.Sleep(ctx, Retry.Wait(attempt)) {
			return fmt.Errorf("stopped while waiting for %s: %w (last: %w)", w.What, ctx.Err(), err)
		}
	}
}

// transientReplies are the Redis error replies of a server that is starting,
// loading or between failovers.
var transientReplies = []string{"LOADING", "CLUSTERDOWN", "MASTERDOWN", "TRYAGAIN", "BUSY", "READONLY"}

// Transient reports whether err is what a server gives while it is away or
// starting (worth waiting out), rather than a configuration error. An error
// with a Transient method says so itself.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var says interface{ Transient() bool }
	if errors.As(err, &says) {
		return says.Transient()
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, rueidis.ErrNoSlot) || errors.Is(err, rueidis.ErrNoAddr) || errors.Is(err, rueidis.ErrClosing) {
		return true
	}
	var re *rueidis.RedisError
	if errors.As(err, &re) && re != nil && !re.IsNil() {
		msg := re.Error()
		for _, p := range transientReplies {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return false
	}
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		// 57P03: the database system is starting up (or shutting down);
		// 08*: connection exceptions.
		c := coded.SQLState()
		return c == "57P03" || strings.HasPrefix(c, "08")
	}
	return false
}
