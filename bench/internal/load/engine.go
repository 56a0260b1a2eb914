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
// Content-Length (fasthttp and net/http do). It needs Linux (epoll).
package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"flashsale/sharding"
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
	// StartAt, when set, is the wall-clock time the schedule starts: Run
	// connects nothing before it, waits for it and counts intended times
	// from it, so bench instances on several machines send one schedule.
	StartAt time.Time
}

// Engine runs plans against one server. Create it with New.
type Engine struct {
	o      Options
	dst    syscall.Sockaddr
	family int
	srcs   []syscall.Sockaddr
	rb     *requestBuilder

	mu      sync.Mutex
	workers []*worker
	start   time.Time
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
	e := &Engine{o: o}
	e.dst, e.family = sockaddr(ap.Addr(), ap.Port())
	for _, s := range o.SourceAddrs {
		sa, fam := sockaddr(s, 0)
		if fam != e.family {
			return nil, fmt.Errorf("load: source address %s is not of the target's family", s)
		}
		e.srcs = append(e.srcs, sa)
	}
	e.rb = newRequestBuilder(o.Addr, o.Items, o.Tokens, o.XForwardedFor, o.IdempotencyKeys, o.RunID, o.UserBase)
	return e, nil
}

// cloneSockaddr copies sa: the syscall package encodes into a Sockaddr's
// hidden buffer on every call, so each worker needs its own.
func cloneSockaddr(sa syscall.Sockaddr) syscall.Sockaddr {
	switch v := sa.(type) {
	case *syscall.SockaddrInet4:
		return &syscall.SockaddrInet4{Port: v.Port, Addr: v.Addr}
	case *syscall.SockaddrInet6:
		return &syscall.SockaddrInet6{Port: v.Port, ZoneId: v.ZoneId, Addr: v.Addr}
	}
	return sa
}

func sockaddr(a netip.Addr, port uint16) (syscall.Sockaddr, int) {
	a = a.Unmap()
	if a.Is4() {
		return &syscall.SockaddrInet4{Port: int(port), Addr: a.As4()}, syscall.AF_INET
	}
	return &syscall.SockaddrInet6{Port: int(port), Addr: a.As16()}, syscall.AF_INET6
}

// Result is a finished run.
type Result struct {
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
		p.Done += w.rec.live.done.Load()
		p.Failed += w.rec.live.failed.Load()
		p.Sent += w.rec.live.sent.Load()
		p.InFlight += w.rec.live.inflight.Load()
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
	workers := make([]*worker, e.o.Workers)
	for i := range workers {
		w, err := e.newWorker(i, sh)
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
		w.start = start
	}

	stop := context.AfterFunc(ctx, func() { sh.stop.Store(true) })
	defer stop()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(w.run)
	}
	wg.Wait()
	res := &Result{Start: start, Elapsed: time.Since(start), Workers: len(workers), Conns: e.o.Conns,
		Closed: sh.closed, Recorder: NewRecorder()}
	for _, w := range workers {
		res.Recorder.Merge(w.rec)
	}
	if claimed := sh.next.Load(); sh.total > claimed {
		res.Recorder.Unsent += sh.total - claimed
	}
	return res, nil
}

// waitUntil sleeps until t (zero: not at all); a t more than a second past
// is an error, as the run would start late on its own schedule.
func waitUntil(ctx context.Context, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	d := time.Until(t)
	if d < -time.Second {
		return fmt.Errorf("load: start time %s is %v in the past", t.Format(time.RFC3339Nano), -d.Round(time.Millisecond))
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// scheduleEnd is the intended time of the plan's last scheduled send, or -1
// when it has none (closed loop).
func scheduleEnd(p *Plan, total int64) int64 {
	switch {
	case len(p.Actions) > 0:
		return p.Actions[len(p.Actions)-1].At
	case p.Actions == nil && len(p.Stages) > 0 && total > 0:
		return p.at(p.global(total - 1))
	}
	return -1
}

// shared is the state workers share: the schedule cursor and the stop flag.
type shared struct {
	plan   *Plan
	total  int64
	closed bool
	end    int64 // scheduleEnd
	next   atomic.Int64
	_      [56]byte
	stop   atomic.Bool
}

type conn struct {
	fd       int // -1 when not connected
	src      syscall.Sockaddr
	busy     bool
	wantOut  bool
	act      Action
	intended int64 // ns after start
	sent     int64
	rbuf     []byte
	rn       int
	wbuf     []byte
	wpos     int
}

type worker struct {
	e      *Engine
	sh     *shared
	start  time.Time
	ep     int
	dst    syscall.Sockaddr // the worker's own copy of Engine.dst
	conns  []conn
	idle   []int32
	events []syscall.EpollEvent
	follow []Action // min-heap on At
	rec    *Recorder
	resp   response
	ts     syscall.Timespec

	pending    Action
	cur        Action // a follow-up being sent
	hasPending bool
	exhausted  bool
	stopping   bool
	stopAt     int64
	busy       int
	lastCheck  int64
	rng        uint64
}

func (e *Engine) newWorker(id int, sh *shared) (*worker, error) {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("load: epoll: %w", err)
	}
	n := e.o.Conns / e.o.Workers
	if id < e.o.Conns%e.o.Workers {
		n++
	}
	w := &worker{e: e, sh: sh, ep: ep, dst: cloneSockaddr(e.dst), rec: NewRecorder(), rng: e.o.Seed*0x9e3779b97f4a7c15 + uint64(id) + 1,
		conns: make([]conn, n), idle: make([]int32, 0, n), events: make([]syscall.EpollEvent, min(n, 512)),
		follow: make([]Action, 0, 1024)}
	srcs := make([]syscall.Sockaddr, len(e.srcs))
	for i, sa := range e.srcs {
		srcs[i] = cloneSockaddr(sa)
	}
	for i := range w.conns {
		c := &w.conns[i]
		c.fd = -1
		c.rbuf = make([]byte, readBufSize)
		c.wbuf = make([]byte, 0, 1024)
		if len(e.srcs) > 0 {
			// Spread every worker's connections over all source addresses.
			c.src = srcs[(i*e.o.Workers+id)%len(srcs)]
		}
		w.idle = append(w.idle, int32(n-1-i))
	}
	return w, nil
}

func (w *worker) elapsed() int64 { return int64(time.Since(w.start)) }

func (w *worker) run() {
	defer w.closeAll()
	for {
		now := w.elapsed()
		if !w.stopping && w.sh.stop.Load() {
			w.stopping, w.stopAt = true, now
			w.follow = w.follow[:0]
			w.hasPending = false
		}
		wait := w.dispatch(now)
		if w.busy == 0 && (w.stopping || (w.exhausted && !w.hasPending && len(w.follow) == 0)) {
			return
		}
		if w.stopping && now-w.stopAt > int64(w.e.o.Timeout) {
			return
		}
		if w.busy > 0 && (wait < 0 || wait > int64(100*time.Millisecond)) {
			wait = int64(100 * time.Millisecond) // time to look for timeouts
		}
		n := w.wait(wait)
		for i := 0; i < n; i++ {
			ev := &w.events[i]
			w.handle(int(ev.Fd), ev.Events)
		}
		if now := w.elapsed(); now-w.lastCheck > int64(10*time.Millisecond) {
			w.lastCheck = now
			w.checkTimeouts(now)
		}
	}
}

// dispatch sends due actions on idle connections. It returns how long until
// the next action is due, or -1 when there is none or no idle connection.
func (w *worker) dispatch(now int64) int64 {
	for len(w.idle) > 0 {
		a, at, ok := w.next(now)
		if !ok {
			return -1
		}
		if at > now+int64(20*time.Microsecond) {
			return at - now
		}
		w.send(a, at, now)
	}
	return -1
}

// next returns the earliest action this worker could send and its intended
// time; it claims a scheduled action from the shared cursor when it holds
// none. The returned action is removed from the queue only when due.
func (w *worker) next(now int64) (*Action, int64, bool) {
	sh := w.sh
	if !w.hasPending && !w.exhausted && !w.stopping {
		if sh.closed && sh.plan.Duration > 0 && now >= int64(sh.plan.Duration) {
			w.exhausted = true
		} else if sh.end >= 0 && now > sh.end+int64(w.e.o.Drain) {
			w.exhausted = true // the rest is counted as unsent
		} else {
			i := sh.next.Add(1) - 1
			if sh.plan.action(i, sh.total, &w.pending) {
				w.hasPending = true
			} else {
				w.exhausted = true
				sh.next.Add(-1)
			}
		}
	}
	var fa int64 = -1
	if len(w.follow) > 0 {
		fa = w.follow[0].At
	}
	if w.hasPending {
		pa := w.pending.At
		if sh.closed {
			pa = now
		}
		if fa < 0 || pa <= fa {
			if pa <= now+int64(20*time.Microsecond) {
				w.hasPending = false
			}
			return &w.pending, pa, true
		}
	}
	if fa < 0 {
		return nil, 0, false
	}
	if fa <= now+int64(20*time.Microsecond) {
		w.cur = w.popFollow()
		return &w.cur, fa, true
	}
	return &w.follow[0], fa, true
}

func (w *worker) send(a *Action, intended, now int64) {
	ci := w.idle[len(w.idle)-1]
	c := &w.conns[ci]
	if c.fd < 0 {
		if err := w.connect(c, ci); err != nil {
			w.rec.recordSend(now, now-intended, int64(w.e.o.LateBy))
			w.rec.recordFailure(a.Kind, ErrConnect, now)
			w.afterFailure(a, now)
			return
		}
	}
	c.act = *a
	c.intended, c.sent = intended, now
	c.wbuf = w.e.rb.appendRequest(c.wbuf[:0], &c.act)
	w.rec.recordSend(now, now-intended, int64(w.e.o.LateBy))
	n, err := sendNoSignal(c.fd, c.wbuf)
	if err == syscall.EAGAIN {
		n, err = 0, nil
	}
	if err != nil {
		w.closeConn(c)
		w.rec.recordFailure(c.act.Kind, ErrWrite, now)
		w.afterFailure(&c.act, now)
		return
	}
	w.idle = w.idle[:len(w.idle)-1]
	c.busy = true
	w.busy++
	w.rec.live.inflight.Store(int64(w.busy))
	c.wpos = n
	if n < len(c.wbuf) {
		w.arm(c, ci, true)
	}
}

func (w *worker) handle(ci int, events uint32) {
	c := &w.conns[ci]
	if c.fd < 0 {
		return
	}
	if events&syscall.EPOLLOUT != 0 && c.wantOut {
		n, err := sendNoSignal(c.fd, c.wbuf[c.wpos:])
		if err != nil && err != syscall.EAGAIN {
			w.fail(c, ci, ErrWrite)
			return
		}
		if n > 0 {
			c.wpos += n
		}
		if c.wpos >= len(c.wbuf) {
			w.arm(c, int32(ci), false)
		}
	}
	if events&(syscall.EPOLLIN|syscall.EPOLLERR|syscall.EPOLLHUP) == 0 {
		return
	}
	n, err := syscall.Read(c.fd, c.rbuf[c.rn:])
	if err == syscall.EAGAIN || err == syscall.EINTR {
		return
	}
	if err != nil || n == 0 {
		if c.busy {
			w.fail(c, ci, ErrRead)
		} else {
			w.closeConn(c) // the server closed an idle keep-alive connection
		}
		return
	}
	c.rn += n
	for c.rn > 0 {
		m, err := parseResponse(c.rbuf[:c.rn], &w.resp)
		if err == nil && m == 0 && c.rn == len(c.rbuf) {
			err = errTooLarge
		}
		if err != nil || (m > 0 && !c.busy) {
			w.fail(c, ci, ErrProtocol)
			return
		}
		if m == 0 {
			return
		}
		now := w.elapsed()
		code := jsonString(w.resp.body, `"error"`)
		w.rec.recordResponse(c.act.Kind, w.resp.status, code, now, now-c.intended, now-c.sent)
		w.afterResponse(&c.act, now)
		copy(c.rbuf, c.rbuf[m:c.rn])
		c.rn -= m
		w.release(c, ci)
		if w.resp.close {
			w.closeConn(c)
			return
		}
	}
}

// release returns a busy connection to the idle stack.
func (w *worker) release(c *conn, ci int) {
	c.busy = false
	w.busy--
	w.rec.live.inflight.Store(int64(w.busy))
	w.idle = append(w.idle, int32(ci))
}

// fail counts a transport failure of c's request, closes c and makes it idle.
func (w *worker) fail(c *conn, ci int, e int) {
	now := w.elapsed()
	busy := c.busy
	w.closeConn(c)
	if busy {
		w.rec.recordFailure(c.act.Kind, e, now)
		w.afterFailure(&c.act, now)
		w.release(c, ci)
	}
}

func (w *worker) checkTimeouts(now int64) {
	limit := int64(w.e.o.Timeout)
	for i := range w.conns {
		c := &w.conns[i]
		if c.busy && now-c.sent > limit {
			w.fail(c, i, ErrTimeout)
		}
	}
}

// afterResponse records a winner and schedules what the user does next.
func (w *worker) afterResponse(a *Action, now int64) {
	f := &w.sh.plan.Follow
	st := w.resp.status
	if a.Kind != Purchase {
		return
	}
	switch {
	case st == 202:
		if id, ok := sharding.ParseOrderID(jsonString(w.resp.body, `"orderId"`)); ok {
			w.rec.Accepted = append(w.rec.Accepted, Accepted{User: a.User, Item: a.Item, Order: id, At: now})
			if a.Click > 0 || a.Try > 0 {
				// Only the first click's first answer decides what the user does
				// with the order; a replay answers with the same order.
				if w.decided(a) {
					return
				}
			}
			u := unit(uint64(a.User)*0x2545f4914f6cdd1d + 7)
			k := Kind(0)
			switch {
			case u < f.Pay:
				k = Pay
			case u < f.Pay+f.Cancel:
				k = Cancel
			default:
				return
			}
			next := Action{At: now + int64(f.Think) + int64(float64(f.Think)*w.rand()), User: a.User, Item: a.Item, Kind: k, Order: id}
			w.pushFollow(next)
		}
	case st == 429 || st == 503 || (f.RetryRefusals && (st == 410 || st >= 500)):
		w.retry(a, now, w.resp.retryAfter)
	}
}

// decided reports whether the user already scheduled a pay or cancel; users
// click at most a few times, so a linear look at the recent winners is cheap.
func (w *worker) decided(a *Action) bool {
	acc := w.rec.Accepted
	for i := len(acc) - 2; i >= 0 && i >= len(acc)-64; i-- {
		if acc[i].User == a.User {
			return true
		}
	}
	return false
}

func (w *worker) afterFailure(a *Action, now int64) {
	if a.Kind == Purchase {
		w.retry(a, now, 0)
	}
}

func (w *worker) retry(a *Action, now int64, retryAfter int) {
	f := &w.sh.plan.Follow
	if w.stopping || int(a.Try) >= f.Retries || f.Retries == 0 {
		return
	}
	if f.RetryFraction < 1 && unit(uint64(a.User)*0x9e3779b97f4a7c15+3) >= f.RetryFraction {
		return
	}
	next := *a
	next.Try++
	next.At = now
	if f.Backoff > 0 {
		d := float64(f.Backoff) * float64(uint64(1)<<min(a.Try, 16)) * (0.5 + w.rand())
		next.At += int64(d)
	}
	if ra := int64(retryAfter) * int64(time.Second); next.At < now+ra {
		next.At = now + ra
	}
	w.rec.Retries++
	w.pushFollow(next)
}

// rand returns a pseudo-random number in [0,1) (xorshift64*).
func (w *worker) rand() float64 {
	w.rng ^= w.rng >> 12
	w.rng ^= w.rng << 25
	w.rng ^= w.rng >> 27
	return float64((w.rng*0x2545f4914f6cdd1d)>>11) / (1 << 53)
}

// unit maps x to [0,1) by a fixed mix, so the same user makes the same choice.
func unit(x uint64) float64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return float64(x>>11) / (1 << 53)
}

func (w *worker) pushFollow(a Action) {
	h := append(w.follow, a)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].At <= h[i].At {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	w.follow = h
}

// popFollow removes and returns the heap's minimum.
func (w *worker) popFollow() Action {
	h := w.follow
	n := len(h) - 1
	h[0], h[n] = h[n], h[0]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].At < h[l].At {
			m = r
		}
		if h[i].At <= h[m].At {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	w.follow = h[:n]
	return h[n]
}

func (w *worker) connect(c *conn, ci int32) error {
	fd, err := syscall.Socket(w.e.family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	if c.src != nil {
		const ipBindAddressNoPort = 24 // IP_BIND_ADDRESS_NO_PORT: pick the port at connect
		_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_IP, ipBindAddressNoPort, 1)
		if err := syscall.Bind(fd, c.src); err != nil {
			syscall.Close(fd)
			return err
		}
	}
	tv := syscall.NsecToTimeval(int64(w.e.o.Timeout))
	_ = syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv)
	for {
		err = syscall.Connect(fd, w.dst)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return err
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return err
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: ci}
	if err := syscall.EpollCtl(w.ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		syscall.Close(fd)
		return err
	}
	c.fd, c.rn, c.wantOut = fd, 0, false
	return nil
}

func (w *worker) arm(c *conn, ci int32, out bool) {
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: ci}
	if out {
		ev.Events |= syscall.EPOLLOUT
	}
	c.wantOut = out
	_ = syscall.EpollCtl(w.ep, syscall.EPOLL_CTL_MOD, c.fd, &ev)
}

func (w *worker) closeConn(c *conn) {
	if c.fd >= 0 {
		syscall.Close(c.fd)
	}
	c.fd, c.rn, c.wantOut = -1, 0, false
}

func (w *worker) closeAll() {
	for i := range w.conns {
		w.closeConn(&w.conns[i])
	}
	if w.ep >= 0 {
		syscall.Close(w.ep)
		w.ep = -1
	}
}

// pwait2 is cleared when the kernel lacks epoll_pwait2 (Linux < 5.11); the
// millisecond epoll_wait then stands in, rounding up.
var pwait2 atomic.Bool

func init() { pwait2.Store(true) }

const sysEpollPwait2 = 441 // same number on amd64 and arm64

// wait waits up to ns nanoseconds (-1: until an event) for events.
func (w *worker) wait(ns int64) int {
	if ns == 0 {
		ns = 1
	}
	for {
		var n int
		var err error
		switch {
		case ns < 0:
			n, err = syscall.EpollWait(w.ep, w.events, -1)
		case pwait2.Load():
			w.ts = syscall.NsecToTimespec(ns)
			r, _, errno := syscall.Syscall6(sysEpollPwait2, uintptr(w.ep), uintptr(unsafe.Pointer(&w.events[0])),
				uintptr(len(w.events)), uintptr(unsafe.Pointer(&w.ts)), 0, 0)
			if errno == syscall.ENOSYS {
				pwait2.Store(false)
				continue
			}
			n = int(r)
			if errno != 0 {
				err = errno
			}
		default:
			n, err = syscall.EpollWait(w.ep, w.events, int((ns+999_999)/1_000_000))
		}
		if err == syscall.EINTR {
			return 0
		}
		if err != nil {
			return 0
		}
		return n
	}
}

func sendNoSignal(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	r, _, errno := syscall.Syscall6(syscall.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		syscall.MSG_NOSIGNAL, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// EngineName names this build's engine in reports.
const EngineName = "epoll"
