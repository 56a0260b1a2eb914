package httpapi

import (
	"errors"
	"net"
	"sync"
	"time"
)

// DeadlineListener enforces the connections' read and write deadlines with a
// sweep instead of a runtime timer per deadline.
//
// fasthttp sets three deadlines per keep-alive request (idle, read, write),
// each re-arming a runtime timer: on the sold-out path that was about 5% of
// the gateway's CPU, more than the handler itself. A connection from this
// listener only records the deadline it is given (under an uncontended lock);
// every tick a sweep trips the connections whose recorded deadline has
// passed, by setting a deadline in the past on the socket, which fails the
// blocked (or next) read or write exactly as the real deadline would have.
// The next deadline set re-arms a tripped connection. A deadline is thus
// enforced between 0 and one tick late.
type DeadlineListener struct {
	net.Listener
	tick  time.Duration
	mu    sync.Mutex
	conns map[*deadlineConn]struct{}
	quit  chan struct{}
	once  sync.Once
}

// NewDeadlineListener wraps ln; tick is the sweep interval (default 100ms).
func NewDeadlineListener(ln net.Listener, tick time.Duration) *DeadlineListener {
	if tick <= 0 {
		tick = 100 * time.Millisecond
	}
	l := &DeadlineListener{Listener: ln, tick: tick, conns: map[*deadlineConn]struct{}{}, quit: make(chan struct{})}
	go l.sweeper()
	return l
}

// Accept returns the next connection, wrapped.
func (l *DeadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	dc := &deadlineConn{Conn: c, l: l}
	l.mu.Lock()
	l.conns[dc] = struct{}{}
	l.mu.Unlock()
	return dc, nil
}

// Close closes the listener and stops the sweep; connections already
// accepted keep working, without deadlines.
func (l *DeadlineListener) Close() error {
	l.once.Do(func() { close(l.quit) })
	return l.Listener.Close()
}

// open returns the number of open connections.
func (l *DeadlineListener) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

func (l *DeadlineListener) sweeper() {
	t := time.NewTicker(l.tick)
	defer t.Stop()
	var due []*deadlineConn
	for {
		select {
		case <-l.quit:
			return
		case now := <-t.C:
			due = due[:0]
			l.mu.Lock()
			for c := range l.conns {
				due = append(due, c)
			}
			l.mu.Unlock()
			for i, c := range due {
				c.sweep(now)
				due[i] = nil
			}
		}
	}
}

// past is a deadline that has passed: setting it fails reads or writes now.
var past = time.Unix(1, 0)

// The two deadlines of a connection.
const (
	dRead = iota
	dWrite
)

type deadlineConn struct {
	net.Conn
	l      *DeadlineListener
	mu     sync.Mutex
	d      [2]recorded // dRead, dWrite
	closed bool
}

type recorded struct {
	at      time.Time // zero: none
	tripped bool      // the socket's deadline was set to past
}

// socket sets deadline i on the socket itself.
func (c *deadlineConn) socket(i int, t time.Time) error {
	if i == dRead {
		return c.Conn.SetReadDeadline(t)
	}
	return c.Conn.SetWriteDeadline(t)
}

// set records deadline i, re-arming the socket if the sweep had tripped it.
func (c *deadlineConn) set(i int, t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := &c.d[i]
	d.at = t
	if d.tripped {
		d.tripped = false
		return c.socket(i, time.Time{})
	}
	return nil
}

func (c *deadlineConn) sweep(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	for i := range c.d {
		if d := &c.d[i]; !d.tripped && !d.at.IsZero() && now.After(d.at) {
			d.tripped = c.socket(i, past) == nil
		}
	}
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error  { return c.set(dRead, t) }
func (c *deadlineConn) SetWriteDeadline(t time.Time) error { return c.set(dWrite, t) }

func (c *deadlineConn) SetDeadline(t time.Time) error {
	return errors.Join(c.set(dRead, t), c.set(dWrite, t))
}

func (c *deadlineConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.l.mu.Lock()
	delete(c.l.conns, c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}
