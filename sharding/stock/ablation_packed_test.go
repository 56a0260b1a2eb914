//go:build ablation_packed

package stock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"flashsale/lua"
	"flashsale/sharding/stock"
)

// Issue 58's ablation (d) (deploy/ablation.sh, go test -tags
// ablation_packed): the joined script with each reservation's twelve
// arguments packed into one answers exactly as reserve_many.lua does with
// them apart, on the random batches of TestReserveManyMatchesReserveInTurn,
// so the ablation measures packing and nothing else.
func TestAblationPackedAnswersAsReserveMany(t *testing.T) {
	_, c := newStore(t)
	ctx := context.Background()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	packed, plain := rueidis.NewLuaScript(stock.JoinedSrc), rueidis.NewLuaScript(lua.ReserveMany)
	for n := range 100 {
		saleID := randomSaleID()
		mc := randomManyCase(r, saleID)
		tags := []string{fmt.Sprintf("s%d:0:1", saleID), fmt.Sprintf("s%d:0:2", saleID)}
		for _, tag := range tags {
			mc.setUp(t, c, tag)
		}
		run := func(sc *rueidis.Lua, tag string, pack bool) []string {
			var keys, args []string
			for i, a := range mc.rs {
				keys = append(keys, mc.keys(tag, i)...)
				if pack {
					args = append(args, strings.Join(a[:], "\x1f"))
				} else {
					args = append(args, a[:]...)
				}
			}
			arr, err := sc.Exec(ctx, c, keys, args).ToArray()
			if err != nil {
				return []string{"error " + err.Error()}
			}
			var out []string
			for _, m := range arr {
				out = append(out, strings.ReplaceAll(replyText(rueidis.NewResult(m, nil)), tag, "TAG"))
			}
			return out
		}
		want, got := run(plain, tags[0], false), run(packed, tags[1], true)
		if !slices.Equal(want, got) {
			t.Fatalf("case %d: packed %q, apart %q", n, got, want)
		}
	}
}
