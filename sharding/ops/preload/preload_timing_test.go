package preload_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/stock"
)

// BenchmarkReserveShards measures reservation throughput on the local cluster
// for S = 1, 2, 4, 8 and 16 shards, from 64×GOMAXPROCS goroutines sharing one
// auto-pipelined rueidis client, and reports the calls each master served per
// second. "reserve" is a fresh user per call on a sale that never sells out
// (each call takes a unit and writes a buyer and an order record);
// "already-purchased" repeats 1,024 users who each hold an order (read-only
// path of the script).
//
//	go test -run '^$' -bench BenchmarkReserveShards -benchtime 2s ./sharding/ops/
func BenchmarkReserveShards(b *testing.B) {
	e := opstest.NewEnv(b)
	ctx := context.Background()
	top, err := stock.Topology(ctx, e.C)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range []int{1, 2, 4, 8, 16} {
		for _, mode := range []string{"reserve", "already-purchased"} {
			b.Run(fmt.Sprintf("S=%d/%s", s, mode), func(b *testing.B) {
				sale := e.NewSale(b, s, 1<<40)
				item := sale.Items[0].ID
				master := make([]int, s)
				for i, tag := range sale.Shards {
					master[i] = top.Owner(sharding.Slot([]byte("{" + tag + "}")))
				}
				base := rand.Uint64N(1 << 50)
				reserve := func(u uint64) (stock.Result, int, error) {
					home := sharding.HomeShard(u, sale.ID, s)
					now := time.Now()
					r, err := e.T.Store.Reserve(ctx, stock.Reservation{Tag: sale.Shards[home], SaleID: sale.ID, ItemID: item, UserID: u,
						OrderID: sharding.NewOrderID(sale.ID, rand.Uint64(), rand.Uint32()),
						Created: now, Expires: now.Add(time.Minute), TTL: 30 * time.Second})
					return r, master[home], err
				}
				const repeat = 1024
				want := stock.Reserved
				if mode == "already-purchased" {
					want = stock.AlreadyPurchased
					for u := uint64(0); u < repeat; u++ {
						if _, _, err := reserve(base + u); err != nil {
							b.Fatal(err)
						}
					}
				}
				calls := make([]atomic.Int64, len(top.Masters))
				var next atomic.Uint64
				var wrong atomic.Int64
				b.ReportAllocs()
				b.SetParallelism(64)
				b.ResetTimer()
				began := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						u := next.Add(1)
						if mode == "already-purchased" {
							u %= repeat
						}
						r, m, err := reserve(base + u)
						if err != nil {
							b.Error(err)
							return
						}
						if r.Outcome != want {
							wrong.Add(1)
						}
						calls[m].Add(1)
					}
				})
				el := time.Since(began).Seconds()
				b.StopTimer()
				if wrong.Load() > 0 {
					b.Fatalf("%d calls did not answer %v", wrong.Load(), want)
				}
				b.ReportMetric(float64(b.N)/el, "calls/s")
				for i, m := range top.Masters {
					_, port, _ := strings.Cut(m.Addr, ":")
					b.ReportMetric(float64(calls[i].Load())/el, "calls/s@"+port)
				}
			})
		}
	}
}
