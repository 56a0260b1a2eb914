// Package load is the bench's load engine: raw HTTP/1.1 keep-alive
// connections driven by one epoll loop per worker, the way wrk works, so that
// the harness spends less CPU per request than the server it measures.
//
// Each worker owns a share of the connections and one Recorder, so nothing is
// locked while requests fly; recorders are merged when the run ends. Requests
// are appended into a per-connection buffer from prebuilt pieces (request
// line per item, token per user) and responses are parsed in place (status
// line, Content-Length, Retry-After, Connection, and the JSON "error" and
// "orderId" members), so the send/receive loop does not allocate.
//
// Two loops are supported. Closed loop keeps every connection busy: the next
// request goes out when the previous response arrives. Open loop gives every
// request an intended send time (a schedule of rates, or a scenario's
// arrivals); a request is sent on the first idle connection at or after that
// time, and its latency is measured from the intended time, not from the
// send. When the connections cannot keep up, requests wait for one and their
// wait shows in the latency, which is what a user would see (no coordinated
// omission). Sends later than Options.LateBy are counted.
//
// The engine speaks HTTP/1.1 over TCP to one address; responses must carry a
// Content-Length (fasthttp and net/http do). On Linux, plain http runs on the
// epoll engine (epoll_linux.go); https (Options.TLS) and every other system
// run on the portable engine (portable.go: fasthttp's client, a goroutine per
// connection), which keeps the same schedule, recorder and results.
package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"time"
)

// Tokens gives the bearer token of user index i, or nil for none. The
// returned bytes must not change during the run.
type Tokens interface {
	Token(i int) []byte
}

// Defaults of Options.
const (
	DefaultTimeout = 10 * time.Second
	DefaultLateBy  = 10 * time.Millisecond
	DefaultDrain   = 30 * time.Second
	readBufSize    = 16 << 10
)

// Options configure an Engine.
type Options struct {
	// Addr is the host:port to connect to, and the Host header.
	Addr string
	// Conns is the number of connections; Workers the number of epoll loops
	// (0: GOMAXPROCS), at most Conns.
	Conns, Workers int
	// SourceAddrs, when set, are the local addresses connections bind to,
	// round robin (127.0.0.x on loopback look like distinct clients).
	SourceAddrs []netip.Addr
	// Timeout is how long a response may take before the connection is
	// dropped and the request counted as timed out (DefaultTimeout).
	Timeout time.Duration
	// LateBy is the send delay past the intended time from which an
	// open-loop send counts as late (DefaultLateBy).
	LateBy time.Duration
	// Drain is how long after the last scheduled send time queued requests
	// may still go out; the rest are counted as unsent (DefaultDrain).
	Drain time.Duration
	// Items are the item ids Action.Item indexes.
	Items []int64
	// Tokens are the users' bearer tokens, Action.User indexes them; nil
	// sends no Authorization header.
	Tokens Tokens
	// UserBase is the user id of user index 0 (idempotency keys name it).
	UserBase uint64
	// XForwardedFor adds a fake client address per user.
	XForwardedFor bool
	// IdempotencyKeys adds an Idempotency-Key per click to purchases.
	IdempotencyKeys bool
	// RunID makes idempotency keys unique to the run.
	RunID string
	// Seed seeds the follow-up decisions' jitter.
	Seed uint64
	// TLS speaks https (the portable engine); Insecure skips the check of
	// the server's certificate (self-signed test targets); ServerName is the
	// name checked and sent in SNI (default: Addr's host).
	TLS, Insecure bool
	ServerName    string
	// Portable runs the portable engine on Linux too (tests compare them).
	Portable bool
	// StartAt, when set, is the wall-clock time the schedule starts: Run
	// connects nothing before it, waits for it and counts intended times
	// from it, so bench instances on several machines send one schedule.
	StartAt time.Time
}

// Engine runs plans against one server. Create it with New.
type Engine struct {
	o        Options
	portable bool // the portable engine, not epoll
	target   netip.AddrPort
	sys      sysTarget // the epoll engine's addresses (Linux)
	rb       *requestBuilder

	mu      sync.Mutex
	workers []runner
	start   time.Time
}

// runner is one worker of either engine.
type runner interface {
	run()
	closeAll()
	base() *sched
}

// New checks o and resolves its addresses.
func New(o Options) (*Engine, error) {
	if o.Conns <= 0 {
		return nil, fmt.Errorf("load: %d connections, want at least 1", o.Conns)
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	o.Workers = min(o.Workers, o.Conns)
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.LateBy <= 0 {
		o.LateBy = DefaultLateBy
	}
	if o.Drain <= 0 {
		o.Drain = DefaultDrain
	}
	if len(o.Items) == 0 {
		return nil, errors.New("load: no items")
	}
	if len(o.Items) > 1<<16 {
		return nil, fmt.Errorf("load: %d items, at most %d", len(o.Items), 1<<16)
	}
	ta, err := net.ResolveTCPAddr("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("load: resolving %s: %w", o.Addr, err)
	}
	ap := ta.AddrPort()
	if !ap.Addr().IsValid() {
		return nil, fmt.Errorf("load: %s has no address", o.Addr)
	}
	e := &Engine{o: o, target: ap, portable: o.TLS || o.Portable || !epollAvailable}
	for _, s := range o.SourceAddrs {
		if s.Unmap().Is4() != ap.Addr().Unmap().Is4() {
			return nil, fmt.Errorf("load: source address %s is not of the target's family", s)
		}
	}
	if !e.portable {
		e.sys = newSysTarget(ap, o.SourceAddrs)
	}
	e.rb = newRequestBuilder(o.Addr, o.Items, o.Tokens, o.XForwardedFor, o.IdempotencyKeys, o.RunID, o.UserBase)
	return e, nil
}

// Result is a finished run.
type Result struct {
	Engine   string // "epoll" or "portable"
	Start    time.Time
	Elapsed  time.Duration
	Workers  int
	Conns    int
	Closed   bool
	Recorder *Recorder // merged over the workers
}

// Progress is a snapshot of a running run.
type Progress struct {
	Elapsed                      time.Duration
	Done, Failed, Sent, InFlight int64
}

// Progress sums the workers' live counters; it is safe to call while Run runs.
func (e *Engine) Progress() Progress {
	e.mu.Lock()
	defer e.mu.Unlock()
	var p Progress
	if e.start.IsZero() {
		return p
	}
	p.Elapsed = time.Since(e.start)
	for _, w := range e.workers {
		l := &w.base().rec.live
		p.Done += l.done.Load()
		p.Failed += l.failed.Load()
		p.Sent += l.sent.Load()
		p.InFlight += l.inflight.Load()
	}
	return p
}

// Run sends p and returns what happened. Cancelling ctx stops new sends and
// waits up to Options.Timeout for the requests in flight.
func (e *Engine) Run(ctx context.Context, p *Plan) (*Result, error) {
	if p.Actions == nil && p.Count <= 0 && p.Duration <= 0 && len(p.Stages) == 0 {
		return nil, errors.New("load: plan has neither actions, count, duration nor rate stages")
	}
	if p.Actions == nil && p.Items > len(e.o.Items) {
		return nil, fmt.Errorf("load: plan uses %d items, engine knows %d", p.Items, len(e.o.Items))
	}
	for _, s := range p.Stages {
		if s.Rate <= 0 || s.For <= 0 {
			return nil, fmt.Errorf("load: rate stage %v for %v: want a positive rate and duration", s.Rate, s.For)
		}
	}
	sh := &shared{plan: p, total: p.total(), closed: p.closed()}
	sh.end = scheduleEnd(p, sh.total)
	workers := make([]runner, e.o.Workers)
	for i := range workers {
		w, err := e.newRunner(i, sh)
		if err != nil {
			for _, w := range workers[:i] {
				w.closeAll()
			}
			return nil, err
		}
		workers[i] = w
	}
	if err := waitUntil(ctx, e.o.StartAt); err != nil {
		for _, w := range workers {
			w.closeAll()
		}
		return nil, err
	}
	e.mu.Lock()
	e.workers = workers
	e.start = time.Now()
	if !e.o.StartAt.IsZero() {
		e.start = e.o.StartAt
	}
	start := e.start
	e.mu.Unlock()
	for _, w := range workers {
		w.base().start = start
	}

	stop := context.AfterFunc(ctx, func() { sh.stop.Store(true) })
	defer stop()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(w.run)
	}
	wg.Wait()
	res := &Result{Engine: e.Name(), Start: start, Elapsed: time.Since(start), Workers: len(workers), Conns: e.o.Conns,
		Closed: sh.closed, Recorder: NewRecorder()}
	for _, w := range workers {
		res.Recorder.Merge(w.base().rec)
	}
	if claimed := sh.next.Load(); sh.total > claimed {
		res.Recorder.Unsent += sh.total - claimed
	}
	return res, nil
}

// newRunner makes worker id of the engine in use.
func (e *Engine) newRunner(id int, sh *shared) (runner, error) {
	if e.portable {
		return e.newPortableWorker(id, sh), nil
	}
	return e.newEpollWorker(id, sh)
}

// Name names the engine in use: "epoll" or "portable".
func (e *Engine) Name() string {
	if e.portable {
		return "portable"
	}
	return "epoll"
}

// share returns how many of the engine's connections worker id owns.
func (e *Engine) share(id int) int {
	n := e.o.Conns / e.o.Workers
	if id < e.o.Conns%e.o.Workers {
		n++
	}
	return n
}
