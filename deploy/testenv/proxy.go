package testenv

import (
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Proxy forwards TCP connections on Addr to To once started: until then Addr
// refuses connections, as a server that is down or not started yet does. It
// is a Toxiproxy proxy (the lab's links are too: deploy/lab), so Toxics
// takes latency, a cut or a bandwidth cap.
type Proxy struct {
	Addr, To string
	p        *toxiproxy.Proxy
}

// NewProxy returns a proxy to "to" on a free loopback address, not started.
func NewProxy(t testing.TB, to string) *Proxy {
	addr := FreeAddr(t)
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	return &Proxy{Addr: addr, To: to, p: toxiproxy.NewProxy(srv, "testenv-"+addr, addr, to)}
}

// Start listens on Addr and forwards every connection until the test ends.
func (p *Proxy) Start(t testing.TB) {
	t.Helper()
	if err := p.p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.p.Stop)
}

// Toxics is the proxy's Toxiproxy toxic collection.
func (p *Proxy) Toxics() *toxiproxy.ToxicCollection { return p.p.Toxics }
