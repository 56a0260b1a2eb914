package stock_test

import (
	"context"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"flashsale/lua"
	"flashsale/sharding"
	"flashsale/sharding/orderevent"
	"flashsale/sharding/stock"
)

//go:embed testdata/reserve_before_lazy.lua
var reserveBeforeLazy string

// TestReserveAnswersAsBeforeTheLazyRecord runs random batches of
// reservations (the cases of TestReserveManyMatchesReserveInTurn: repeat
// buyers, replays, used ids, VOID records and the attempts fenced on them,
// sold-out and malformed stock, halts, fences, a full journal, borrowed
// credits, malformed arguments) from the same starting state through the
// reserve script as it was before reservations stopped writing the order
// record, one call after another, and through today's reserve_many.lua in
// one call and reserve.lua in turn. Every reply, the stock and the journal's
// events must come out the same; only where the order is kept differs (its
// record then, its buyer record now, whose reads are tested elsewhere), and
// the version of the journal entry (the same event decoded).
func TestReserveAnswersAsBeforeTheLazyRecord(t *testing.T) {
	_, c := newStore(t)
	ctx := context.Background()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 2))
	before, one, many := rueidis.NewLuaScript(reserveBeforeLazy), rueidis.NewLuaScript(lua.Reserve), rueidis.NewLuaScript(lua.ReserveMany)
	for n := range 150 {
		saleID := randomSaleID()
		mc := randomManyCase(r, saleID)
		for u, v := range mc.buyers {
			if strings.Contains(v, "|") {
				delete(mc.buyers, u) // the old layout has no lazy orders
			}
		}
		tags := []string{fmt.Sprintf("s%d:0:1", saleID), fmt.Sprintf("s%d:0:2", saleID), fmt.Sprintf("s%d:0:3", saleID)}
		for _, tag := range tags {
			mc.setUp(t, c, tag)
		}
		inTurn := func(sc *rueidis.Lua, tag string) []string {
			var out []string
			for i, a := range mc.rs {
				out = append(out, strings.ReplaceAll(replyText(sc.Exec(ctx, c, mc.keys(tag, i), a[:])), tag, "TAG"))
			}
			return out
		}
		want, turn := inTurn(before, tags[0]), inTurn(one, tags[1])
		var ks, as [][]string
		for i, a := range mc.rs {
			ks, as = append(ks, mc.keys(tags[2], i)), append(as, slices.Clone(a[:]))
		}
		keys, args := stock.JoinedLayout(ks, as)
		arr, err := many.Exec(ctx, c, keys, args).ToArray()
		if err != nil {
			t.Fatalf("case %d: reserve_many: %v", n, err)
		}
		var joined []string
		for _, m := range arr {
			joined = append(joined, strings.ReplaceAll(replyText(rueidis.NewResult(m, nil)), tags[2], "TAG"))
		}
		if !slices.Equal(turn, want) || !slices.Equal(joined, want) {
			t.Fatalf("case %d (%+v): replies differ\nbefore, in turn:      %q\nreserve.lua in turn:  %q\nreserve_many.lua:     %q", n, mc, want, turn, joined)
		}
		old := mc.state(t, c, tags[0])
		oldJournal := decodedJournal(t, c, tags[0])
		for _, tag := range tags[1:] {
			if j := decodedJournal(t, c, tag); j != oldJournal {
				t.Fatalf("case %d: journal events differ\nbefore: %s\nnow (%s): %s", n, oldJournal, tag, j)
			}
			now := mc.state(t, c, tag)
			for k, v := range old {
				if k == "buyers" || k == "journal" || strings.Contains(k, ":o:") {
					continue // where the order is kept; the entry's version (compared decoded above)
				}
				if now[k] != v {
					t.Fatalf("case %d: %s: before %q, now (%s) %q", n, k, v, tag, now[k])
				}
			}
		}
	}
}

// decodedJournal returns the events of tag's journal as the relay decodes
// them (orderevent.FromFields), whichever version of the entry the script
// wrote; an entry that does not decode (the cases' filler) by its fields.
func decodedJournal(t *testing.T, c rueidis.Client, tag string) string {
	t.Helper()
	es, err := c.Do(context.Background(), c.B().Xrange().Key(string(sharding.AppendEventsKey(nil, tag))).Start("-").End("+").Build()).AsXRange()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range es {
		if ev, err := orderevent.FromFields(e.FieldValues); err == nil {
			fmt.Fprintf(&b, "%+v\n", ev)
		} else {
			fmt.Fprintf(&b, "undecodable %v\n", e.FieldValues)
		}
	}
	return b.String()
}
