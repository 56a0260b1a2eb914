//go:build !race

package httpapi

import "testing"

// TestHandlerAllocs runs every cheap path through the whole handler and
// wants no allocation: sold-out, rate-limited (IP and user), unauthorized,
// and a repeat click whose token is cached and whose home shard is sold out.
func TestHandlerAllocs(t *testing.T) {
	for _, pc := range cheapPaths() {
		t.Run(pc.name, func(t *testing.T) {
			h, ctx := pc.setup(t)
			if got := run(h, ctx); got != pc.status {
				t.Fatalf("status %d, want %d: %s", got, pc.status, ctx.Response.Body())
			}
			if n := testing.AllocsPerRun(1000, func() { run(h, ctx) }); n != 0 {
				t.Fatalf("%v allocations per request, want 0", n)
			}
			if got := run(h, ctx); got != pc.status {
				t.Fatalf("status %d after the runs, want %d", got, pc.status)
			}
		})
	}
}

func TestRouteAllocs(t *testing.T) {
	p := []byte("/api/flash-sales/orders/0000004d-0000-8000-8000-000000000001/cancel")
	if n := testing.AllocsPerRun(1000, func() { Route(p) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
