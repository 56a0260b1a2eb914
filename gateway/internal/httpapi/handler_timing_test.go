package httpapi

import (
	"context"
	"strconv"
	"testing"

	"github.com/valyala/fasthttp"

	"flashsale/sharding"
	"flashsale/sharding/stock"
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

// reservedStore answers every reservation Reserved: BenchmarkReserve measures
// the handler's own part of the reservation path, not Redis's.
type reservedStore struct{ Store }

func (reservedStore) Reserve(_ context.Context, r stock.Reservation) (stock.Result, error) {
	return stock.Result{Outcome: stock.Reserved, OrderID: r.OrderID, Left: 1}, nil
}

// Holder finds no order: a repeat click of a benchmark user goes on to
// Reserve.
func (reservedStore) Holder(context.Context, string, uint64) (sharding.OrderID, bool, error) {
	return sharding.OrderID{}, false, nil
}

// BenchmarkReserve measures the reservation path in the handler: order id,
// context, winners cache and 202 body, over a store that answers at once.
// Each iteration is a new user.
func BenchmarkReserve(b *testing.B) {
	e := newEnv(b, envOpt{stockPerShard: 1 << 40})
	e.h.Store = reservedStore{e.h.Store}
	toks := make([]*fasthttp.RequestCtx, 1024)
	for i := range toks {
		toks[i] = newCtx("POST", purchasePath, "10.0.0."+strconv.Itoa(i%250+1), "Authorization", "Bearer "+e.token(uint64(i+1)))
		run(e.h, toks[i]) // warm the token cache
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		ctx := toks[i%len(toks)]
		i++
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
