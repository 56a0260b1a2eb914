package stock_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"flashsale/deploy/testenv"
	"flashsale/lua"
	"flashsale/lua/ablation"
	"flashsale/sharding"
	"flashsale/sharding/stock"
)

// BenchmarkReserveManyScript times reserve_many.lua inside Redis (INFO
// commandstats: the EVALSHA's own time, no network, no replica) for calls
// of 25 new buyers on one shard, as the accepted path sends them, beside
// issue 58's ablation scripts with the same keys and arguments: noop
// answers at once, bare runs the same redis.calls with no checks and no
// string building. It reports script-µs/reservation; the differences are
// what the arguments, the commands and the checks cost (bench/MEASUREMENTS.md).
func BenchmarkReserveManyScript(b *testing.B) {
	c := testenv.LoneRedis(b)
	for _, s := range []struct{ name, src string }{{"today", lua.ReserveMany}, {"noop", ablation.Noop}, {"bare", ablation.Bare}} {
		b.Run(s.name, func(b *testing.B) { benchScript(b, c, rueidis.NewLuaScript(s.src)) })
	}
}

func benchScript(b *testing.B, c rueidis.Client, sc *rueidis.Lua) {
	ctx := context.Background()
	const batch = 25
	tag := "s9:0:0"
	stockKey := string(sharding.AppendStockKey(nil, tag, 91))
	for _, err := range []error{
		c.Do(ctx, c.B().Del().Key(string(sharding.AppendEventsKey(nil, tag)), string(sharding.AppendBuyersKey(nil, tag))).Build()).Error(),
		c.Do(ctx, c.B().Set().Key(stockKey).Value("1000000000").Build()).Error(),
		c.Do(ctx, c.B().ConfigResetstat().Build()).Error(),
	} {
		if err != nil {
			b.Fatal(err)
		}
	}
	user := uint64(1)
	ks, as := make([][]string, batch), make([][]string, batch)
	for b.Loop() {
		for i := range batch {
			id := sharding.NewOrderID(9, user, 1)
			ks[i] = []string{stockKey, string(sharding.AppendBuyersKey(nil, tag)), string(sharding.AppendOrderKey(nil, tag, id)),
				string(sharding.AppendFenceKey(nil, tag)), string(sharding.AppendEventsKey(nil, tag)),
				string(sharding.AppendNoMoveKey(nil, tag)), string(sharding.AppendHaltKey(nil, tag))}
			as[i] = []string{strconv.FormatUint(user, 10), id.String(), "91", "1796600446019", "1796600506019", "3600", "9",
				"1000000000", strconv.FormatUint(user+1e12, 10), "0", "", "60"}
			user++
		}
		keys, args := stock.JoinedLayout(ks, as)
		if err := sc.Exec(ctx, c, keys, args).Error(); err != nil {
			b.Fatal(err)
		}
	}
	st, err := c.Do(ctx, c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	_, l, _ := strings.Cut(st, "cmdstat_evalsha:")
	_, u, _ := strings.Cut(l, "usec=")
	u, _, _ = strings.Cut(u, ",")
	usec, err := strconv.ParseFloat(u, 64)
	if err != nil {
		b.Fatalf("commandstats: %q", l)
	}
	b.ReportMetric(usec/float64(b.N*batch), "script-µs/reservation")
}
