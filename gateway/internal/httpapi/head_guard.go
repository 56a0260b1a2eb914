package httpapi

import (
	"bytes"
	"errors"
	"net"
)

// GuardHeads wraps ln so that a request head whose lines end in a bare LF
// (no CR) is refused at once, with 400 BAD_REQUEST.
//
// fasthttp waits for the CRLFCRLF that ends a request head before it parses
// a head it could not parse at first sight, so a head ending in LF LF never
// ends: the request sat until the read timeout and was answered 408, and
// its connection held a slot of the server's concurrency meanwhile. RFC 9112
// (section 2.2) lets a server refuse such a message; a guarded connection
// fails the read that brings the bare LF, and fasthttp answers the read
// error through parseError.
//
// A connection scans from its start, and again from each response it
// writes, up to the CRLFCRLF of the head that follows; a body and a
// pipelined request's head are not scanned (a bare LF there waits as
// before). The scan is a bytes.IndexByte per line of the head.
func GuardHeads(ln net.Listener) net.Listener { return guardListener{ln} }

type guardListener struct{ net.Listener }

func (l guardListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &headConn{Conn: c, inHead: true}, nil
}

// errBareLF is the read error of a guarded connection that met a bare LF.
var errBareLF = errors.New("request head line ends in a bare LF")

// headConn is a connection of GuardHeads. It is used by one goroutine at a
// time, as fasthttp uses a connection.
type headConn struct {
	net.Conn
	inHead bool  // scanning a head: since the start or the last write
	line   int   // bytes of the current head line seen, its CR included
	cr     bool  // the last byte seen was CR
	bad    error // errBareLF once met: every later read fails
}

func (c *headConn) Read(p []byte) (int, error) {
	if c.bad != nil {
		return 0, c.bad
	}
	n, err := c.Conn.Read(p)
	if c.inHead && n > 0 && !c.scan(p[:n]) {
		c.bad = errBareLF
		return n, c.bad
	}
	return n, err
}

func (c *headConn) Write(p []byte) (int, error) {
	c.inHead, c.line, c.cr = true, 0, false
	return c.Conn.Write(p)
}

// scan follows the head through b and reports false on a bare LF; it stops
// scanning at the empty line that ends the head.
func (c *headConn) scan(b []byte) bool {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			c.line += len(b)
			c.cr = b[len(b)-1] == '\r'
			return true
		}
		cr := c.cr
		if i > 0 {
			cr = b[i-1] == '\r'
		}
		if !cr {
			return false
		}
		if c.line+i == 1 { // the line was CR alone: the head's end
			c.inHead = false
			return true
		}
		c.line, c.cr, b = 0, false, b[i+1:]
	}
	return true
}
