package journal_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/stock"
)

// BenchmarkRelayDrain relays b.N journal entries of one shard to Kafka (hold
// 0) and reports, besides the wall time per entry, the CPU its Redis master
// spent per entry (redis-µs/entry, from INFO cpu; the stack's other traffic
// counts too, so run it alone):
//
//	go test -run '^$' -bench RelayDrain -benchtime 20000x ./sharding/journal/
func BenchmarkRelayDrain(b *testing.B) {
	e := setup(b, 1)
	ctx := context.Background()
	c := e.st.Client()
	tag := e.sale.Shards[0]
	stockKey := string(sharding.AppendStockKey(nil, tag, e.sale.Items[0].ID))
	if err := c.Do(ctx, c.B().Set().Key(stockKey).Value(strconv.Itoa(b.N+1)).Build()).Error(); err != nil {
		b.Fatal(err)
	}
	top, err := stock.Topology(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	master := c.Nodes()[top.Masters[top.Owner(sharding.Slot(stockKey))].Addr]
	cpu := func() float64 {
		info, err := master.Do(ctx, master.B().Info().Section("cpu").Build()).ToString()
		if err != nil {
			b.Fatal(err)
		}
		var s float64
		for _, line := range strings.Split(info, "\r\n") {
			k, v, _ := strings.Cut(line, ":")
			if k == "used_cpu_sys" || k == "used_cpu_user" {
				f, _ := strconv.ParseFloat(v, 64)
				s += f
			}
		}
		return s
	}
	for i := 0; i < b.N; i++ {
		e.reserve(b, uint64(i+1))
	}
	before := cpu()
	b.ResetTimer()
	_, obs, stop := e.run(b, 0)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		obs.mu.Lock()
		n := obs.relayed
		obs.mu.Unlock()
		if n >= b.N {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("relayed %d of %d entries in a minute", n, b.N)
		}
	}
	b.StopTimer()
	stop()
	b.ReportMetric((cpu()-before)*1e6/float64(b.N), "redis-µs/entry")
}
