//go:build linux

package load

import (
	"fmt"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// epollAvailable: this build has the epoll engine.
const epollAvailable = true

// sysTarget is the epoll engine's view of the target and source addresses.
type sysTarget struct {
	dst    syscall.Sockaddr
	family int
	srcs   []syscall.Sockaddr
}

func newSysTarget(ap netip.AddrPort, srcs []netip.Addr) sysTarget {
	var t sysTarget
	t.dst, t.family = sockaddr(ap.Addr(), ap.Port())
	for _, s := range srcs {
		sa, _ := sockaddr(s, 0)
		t.srcs = append(t.srcs, sa)
	}
	return t
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
	sched
	ep    int
	dst   syscall.Sockaddr // the worker's own copy of the target
	conns []conn
	idle  []int32
	// refilled is when the idle stack last went from empty to not empty
	// (ns after start): a send due before it waited for a connection.
	refilled  int64
	events    []syscall.EpollEvent
	resp      response
	ts        syscall.Timespec
	busy      int
	lastCheck int64
}

func (e *Engine) newEpollWorker(id int, sh *shared) (runner, error) {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("load: epoll: %w", err)
	}
	n := e.share(id)
	w := &worker{sched: newSched(e, sh, id), ep: ep, dst: cloneSockaddr(e.sys.dst),
		conns: make([]conn, n), idle: make([]int32, 0, n), events: make([]syscall.EpollEvent, min(n, 512))}
	srcs := make([]syscall.Sockaddr, len(e.sys.srcs))
	for i, sa := range e.sys.srcs {
		srcs[i] = cloneSockaddr(sa)
	}
	for i := range w.conns {
		c := &w.conns[i]
		c.fd = -1
		c.rbuf = make([]byte, readBufSize)
		c.wbuf = make([]byte, 0, 1024)
		if len(e.sys.srcs) > 0 {
			// Spread every worker's connections over all source addresses.
			c.src = srcs[(i*e.o.Workers+id)%len(srcs)]
		}
		w.idle = append(w.idle, int32(n-1-i))
	}
	return w, nil
}

func (w *worker) run() {
	defer w.closeAll()
	for {
		now := w.elapsed()
		w.checkStop(now)
		wait := w.dispatch(now)
		if w.busy == 0 && w.drained() {
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

func (w *worker) send(a *Action, intended, now int64) {
	ci := w.idle[len(w.idle)-1]
	c := &w.conns[ci]
	if c.fd < 0 {
		if err := w.connect(c, ci); err != nil {
			w.rec.recordSend(now, now-intended, int64(w.e.o.LateBy), w.refilled > intended)
			w.rec.recordFailure(a.Kind, ErrConnect, now)
			w.afterFailure(a, now)
			return
		}
	}
	c.act = *a
	c.intended, c.sent = intended, now
	c.wbuf = w.e.rb.appendRequest(c.wbuf[:0], &c.act)
	w.rec.recordSend(now, now-intended, int64(w.e.o.LateBy), w.refilled > intended)
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
		w.afterResponse(&c.act, w.resp.status, w.resp.body, w.resp.retryAfter, now)
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
	if len(w.idle) == 0 {
		w.refilled = w.elapsed()
	}
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

func (w *worker) connect(c *conn, ci int32) error {
	fd, err := syscall.Socket(w.e.sys.family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
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
