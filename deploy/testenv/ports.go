package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
)

// Ports handed to servers a test starts in another process come from
// [portLow, portLow+portSpan): below Linux's ephemeral range (32768-60999 by
// default), so that no outgoing connection of any process (a Redis, Kafka or
// PostgreSQL client) takes one between the check and the server's bind, and
// away from the local stack's own ports (7001-7056, 9092-9142, 18070-18096,
// 55432). A kernel-chosen port (":0") closed again before the server binds
// it is one such connection away from "address already in use".
const (
	portLow  = 20000
	portSpan = 10000
)

// given holds the ports this test binary handed out, never handed out twice.
var given sync.Map

// FreePort returns a loopback port that was free at the call, for a server
// started in another process: a random one of the range (test binaries of
// several packages run at once), never one this binary handed out before.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 200 {
		p := portLow + rand.IntN(portSpan)
		if _, dup := given.LoadOrStore(p, true); dup {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err == nil {
			_ = ln.Close()
			return p
		}
	}
	t.Fatalf("no free loopback port in %d-%d after 200 tries", portLow, portLow+portSpan-1)
	return 0
}

// FreeAddr is FreePort as a 127.0.0.1:port address (nothing listens there
// until the caller starts its server).
func FreeAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", FreePort(t))
}
