package httpapi

import (
	"strconv"
	"testing"

	"github.com/valyala/fasthttp"

	"flashsale/sharding"
)

// BenchmarkHandler measures each cheap path through the whole handler (no
// network).
func BenchmarkHandler(b *testing.B) {
	for _, pc := range cheapPaths() {
		b.Run(pc.name, func(b *testing.B) {
			h, ctx := pc.setup(b)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				run(h, ctx)
			}
		})
	}
}

// BenchmarkReserve measures the reservation path over in-memory fakes: order
// id, context, fake Redis and journal, 202 body. Each iteration is a new user.
func BenchmarkReserve(b *testing.B) {
	e := newEnv(b, envOpt{stockPerShard: 1 << 40})
	toks := make([]*fasthttp.RequestCtx, 1024)
	for i := range toks {
		toks[i] = newCtx("POST", purchasePath, "10.0.0."+strconv.Itoa(i%250+1), "Authorization", "Bearer "+e.token(uint64(i+1)))
		run(e.h, toks[i]) // warm the token cache
	}
	e.st.buyers = map[string]map[uint64]sharding.OrderID{}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		ctx := toks[i%len(toks)]
		i++
		if i%len(toks) == 0 {
			b.StopTimer()
			e.st.buyers = map[string]map[uint64]sharding.OrderID{}
			e.st.events, e.st.records = e.st.events[:0], map[sharding.OrderID]*fakeRecord{}
			b.StartTimer()
		}
		run(e.h, ctx)
	}
}

func BenchmarkRoute(b *testing.B) {
	p := []byte("/api/flash-sales/items/123456/purchase")
	b.ReportAllocs()
	for b.Loop() {
		Route(p)
	}
}
