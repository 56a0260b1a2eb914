package testenv

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections on Addr to To once started: until then Addr
// refuses connections, as a server that is down or not started yet does.
type Proxy struct {
	Addr, To string
	wg       sync.WaitGroup
}

// NewProxy returns a proxy to "to" on a free loopback address, not started.
func NewProxy(t testing.TB, to string) *Proxy { return &Proxy{Addr: FreeAddr(t), To: to} }

// Start listens on Addr and forwards every connection until the test ends.
func (p *Proxy) Start(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.To)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.wg.Go(func() { _, _ = io.Copy(up, c); _ = up.Close() })
			p.wg.Go(func() { _, _ = io.Copy(c, up); _ = c.Close() })
		}
	})
	t.Cleanup(func() { _ = ln.Close() })
}
