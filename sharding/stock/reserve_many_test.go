package stock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"flashsale/lua"
	"flashsale/sharding"
	"flashsale/sharding/stock"
)

// manyCase is one random batch of reservations on one shard and the state
// the shard starts from.
type manyCase struct {
	stock    map[int64]string // item -> stock value ("" : no key)
	halt     string           // "", PAUSED or ENDED
	fenced   bool
	journal  int // entries already in the journal
	buyers   map[string]string
	voids    map[string]string // order id -> attempt of a VOID record
	vmarks   map[string]string // order id -> an attempt void.lua fenced on its VOID record
	pending  []string          // order ids with a PENDING record
	moveDone string            // a move id already credited
	rs       [][12]string      // arguments per reservation, minus the keys
	items    []int64
	moves    []string // move id per reservation ("" for none)
}

func randomManyCase(r *rand.Rand, saleID int64) manyCase {
	c := manyCase{stock: map[int64]string{}, buyers: map[string]string{}, voids: map[string]string{}, vmarks: map[string]string{}}
	items := []int64{saleID*10 + 1, saleID*10 + 2, saleID*10 + 3}
	c.stock[items[0]] = strconv.Itoa(r.IntN(6))
	c.stock[items[1]] = strconv.Itoa(r.IntN(40))
	switch r.IntN(6) {
	case 0: // no key for item 3
	case 1:
		c.stock[items[2]] = "-1"
	case 2:
		c.stock[items[2]] = "x"
	default:
		c.stock[items[2]] = strconv.Itoa(r.IntN(3))
	}
	switch r.IntN(12) {
	case 0:
		c.halt = "PAUSED"
	case 1:
		c.halt = "ENDED"
	}
	c.fenced = r.IntN(15) == 0
	c.journal = r.IntN(4)
	users := 1 + r.IntN(12)
	// Order ids are a user's own (the gateway derives them from the user:
	// sharding.NewOrderID), so a user's few ids are drawn from a small set
	// to meet again.
	user := func() int { return 1 + r.IntN(users) }
	oidOf := func(u int) string {
		return sharding.NewOrderID(saleID, uint64(u)<<8|r.Uint64N(3), uint32(r.IntN(2))).String()
	}
	now := time.Now().UnixMilli()
	for range r.IntN(3) {
		u := user()
		c.buyers[strconv.Itoa(u)] = oidOf(u)
	}
	for range r.IntN(3) {
		// An order its buyer record holds lazily (lua/order.lua), taken
		// over by a later attempt or an earlier one, or past its record's
		// deadline.
		ac, dl := now+int64(r.IntN(3)-1)*1000, now+3_600_000
		if r.IntN(4) == 0 {
			dl = now - 1
		}
		u := user()
		c.buyers[strconv.Itoa(u)] = fmt.Sprintf("%s|%d|%d|%d|1-1|%d|%d|%d|", oidOf(u), items[0], now-5000, now+600000,
			r.IntN(3), ac, dl)
	}
	for range r.IntN(3) {
		o := oidOf(user())
		c.voids[o] = strconv.Itoa(r.IntN(3))
		if r.IntN(2) == 0 {
			c.vmarks[o] = strconv.Itoa(r.IntN(3))
		}
	}
	if r.IntN(3) == 0 {
		// A PENDING order its buyer holds: a reservation of it is a replay,
		// which takes the order over unless its attempt is fenced.
		u := user()
		o := oidOf(u)
		c.pending = append(c.pending, o)
		if r.IntN(2) == 0 {
			c.buyers[strconv.Itoa(u)] = o
		}
		if r.IntN(2) == 0 {
			c.vmarks[o] = strconv.Itoa(r.IntN(3))
		}
	}
	c.moveDone = "m" + strconv.Itoa(r.IntN(3))
	for range 1 + r.IntN(30) {
		u := user()
		a := [12]string{strconv.Itoa(u), oidOf(u), "", strconv.FormatInt(now+int64(r.IntN(2))*1000, 10),
			strconv.FormatInt(now+600000, 10), "3600", strconv.FormatInt(saleID, 10), strconv.Itoa(c.journal + 1 + r.IntN(25)),
			strconv.Itoa(r.IntN(3)), "0", "", "60"}
		item := items[r.IntN(len(items))]
		a[2] = strconv.FormatInt(item, 10)
		move := ""
		if r.IntN(8) == 0 {
			move = "m" + strconv.Itoa(r.IntN(3))
			a[9], a[10] = strconv.Itoa(1+r.IntN(3)), move
		}
		switch r.IntN(40) {
		case 0:
			a[0] = "" // malformed: no user
		case 1:
			a[5] = "0" // malformed: ttl
		case 2:
			a[9], a[10] = "2", "" // malformed: a credit without a move id
		}
		c.rs = append(c.rs, a)
		c.items = append(c.items, item)
		c.moves = append(c.moves, move)
	}
	return c
}

func (mc *manyCase) keys(tag string, i int) []string {
	oid, _ := sharding.ParseOrderID([]byte(mc.rs[i][1]))
	move := string(sharding.AppendNoMoveKey(nil, tag))
	if mc.moves[i] != "" {
		move = string(sharding.AppendMoveKey(nil, tag, mc.moves[i]))
	}
	return []string{string(sharding.AppendStockKey(nil, tag, mc.items[i])), string(sharding.AppendBuyersKey(nil, tag)),
		string(sharding.AppendOrderKey(nil, tag, oid)), string(sharding.AppendFenceKey(nil, tag)),
		string(sharding.AppendEventsKey(nil, tag)), move, string(sharding.AppendHaltKey(nil, tag))}
}

// setUp writes the case's starting state on tag's shard.
func (mc *manyCase) setUp(t *testing.T, c rueidis.Client, tag string) {
	t.Helper()
	ctx := context.Background()
	var cmds rueidis.Commands
	for item, v := range mc.stock {
		if v != "" {
			cmds = append(cmds, c.B().Set().Key(string(sharding.AppendStockKey(nil, tag, item))).Value(v).Build())
		}
	}
	if mc.halt != "" {
		cmds = append(cmds, c.B().Set().Key(string(sharding.AppendHaltKey(nil, tag))).Value(mc.halt).Build())
	}
	if mc.fenced {
		cmds = append(cmds, c.B().Set().Key(string(sharding.AppendFenceKey(nil, tag))).Value("1").Build())
	}
	ev := string(sharding.AppendEventsKey(nil, tag))
	for range mc.journal {
		cmds = append(cmds, c.B().Xadd().Key(ev).Id("*").FieldValue().FieldValue("t", "old").Build())
	}
	for u, o := range mc.buyers {
		cmds = append(cmds, c.B().Hset().Key(string(sharding.AppendBuyersKey(nil, tag))).FieldValue().FieldValue(u, o).Build())
	}
	for o, a := range mc.voids {
		id, _ := sharding.ParseOrderID([]byte(o))
		cmds = append(cmds, c.B().Hset().Key(string(sharding.AppendOrderKey(nil, tag, id))).FieldValue().
			FieldValue("status", "VOID").FieldValue("a", a).Build())
	}
	for o, a := range mc.vmarks {
		id, _ := sharding.ParseOrderID([]byte(o))
		cmds = append(cmds, c.B().Hset().Key(string(sharding.AppendOrderKey(nil, tag, id))).FieldValue().FieldValue("v"+a, "1").Build())
	}
	for _, o := range mc.pending {
		id, _ := sharding.ParseOrderID([]byte(o))
		cmds = append(cmds, c.B().Hset().Key(string(sharding.AppendOrderKey(nil, tag, id))).FieldValue().
			FieldValue("status", "PENDING").FieldValue("a", "9").Build())
	}
	cmds = append(cmds, c.B().Set().Key(string(sharding.AppendMoveKey(nil, tag, mc.moveDone))).Value("1").Build())
	for i, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatalf("setting up (command %d): %v", i, err)
		}
	}
}

// state reads what the reservations may have changed on tag's shard, with
// the tag and the journal's entry ids taken out so that two shards compare.
func (mc *manyCase) state(t *testing.T, c rueidis.Client, tag string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	norm := func(s string) string { return strings.ReplaceAll(s, tag, "TAG") }
	for item := range mc.stock {
		k := string(sharding.AppendStockKey(nil, tag, item))
		v, err := c.Do(ctx, c.B().Get().Key(k).Build()).ToString()
		if err != nil && !rueidis.IsRedisNil(err) {
			t.Fatal(err)
		}
		out[norm(k)] = v
	}
	ids := map[string]string{} // journal entry id -> its position
	es, err := c.Do(ctx, c.B().Xrange().Key(string(sharding.AppendEventsKey(nil, tag))).Start("-").End("+").Build()).AsXRange()
	if err != nil {
		t.Fatal(err)
	}
	var journal []string
	for i, e := range es {
		ids[e.ID] = strconv.Itoa(i)
		journal = append(journal, fmt.Sprint(e.FieldValues))
	}
	out["journal"] = strings.Join(journal, "\n")
	b, err := c.Do(ctx, c.B().Hgetall().Key(string(sharding.AppendBuyersKey(nil, tag))).Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	for u, v := range b {
		// A buyer record that carries its order names its journal entry.
		if f := strings.Split(v, "|"); len(f) == 9 {
			if n, ok := ids[f[4]]; ok {
				f[4] = "entry " + n
			}
			b[u] = strings.Join(f, "|")
		}
	}
	out["buyers"] = fmt.Sprint(b)
	for _, r := range mc.rs {
		id, ok := sharding.ParseOrderID([]byte(r[1]))
		if !ok {
			continue
		}
		k := string(sharding.AppendOrderKey(nil, tag, id))
		h, err := c.Do(ctx, c.B().Hgetall().Key(k).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		if j, ok := h["j"]; ok {
			h["j"] = "entry " + ids[j]
		}
		ttl, _ := c.Do(ctx, c.B().Ttl().Key(k).Build()).AsInt64()
		out[norm(k)] = fmt.Sprint(h, ttl > 0)
	}
	for _, m := range []string{"m0", "m1", "m2"} {
		k := string(sharding.AppendMoveKey(nil, tag, m))
		v, _ := c.Do(ctx, c.B().Get().Key(k).Build()).ToString()
		out[norm(k)] = v
	}
	return out
}

func replyText(m rueidis.RedisResult) string {
	if err := m.Error(); err != nil {
		return "error " + err.Error()
	}
	arr, err := m.ToArray()
	if err != nil {
		return "not an array: " + err.Error()
	}
	var parts []string
	for _, e := range arr {
		s, err := e.ToString()
		if err != nil {
			n, _ := e.AsInt64()
			s = strconv.FormatInt(n, 10)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}

// TestReserveManyMatchesReserveInTurn runs random batches of reservations
// (repeat buyers, replays of one order id, voided and live order records,
// sold-out and malformed stock, halts, fences, a journal at its bound,
// borrowed credits, malformed arguments) twice from the same starting state:
// through reserve.lua one call after another, and through one
// reserve_many.lua call. Every reply and every key must come out the same.
func TestReserveManyMatchesReserveInTurn(t *testing.T) {
	_, c := newStore(t)
	ctx := context.Background()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	one, many := rueidis.NewLuaScript(lua.Reserve), rueidis.NewLuaScript(lua.ReserveMany)
	for n := range 150 {
		saleID := randomSaleID()
		mc := randomManyCase(r, saleID)
		tagA, tagB := fmt.Sprintf("s%d:0:1", saleID), fmt.Sprintf("s%d:0:2", saleID)
		mc.setUp(t, c, tagA)
		mc.setUp(t, c, tagB)
		var want []string
		for i, a := range mc.rs {
			want = append(want, strings.ReplaceAll(replyText(one.Exec(ctx, c, mc.keys(tagA, i), a[:])), tagA, "TAG"))
		}
		var ks, as [][]string
		for i, a := range mc.rs {
			ks, as = append(ks, mc.keys(tagB, i)), append(as, slices.Clone(a[:]))
		}
		keys, args := stock.JoinedLayout(ks, as)
		res := many.Exec(ctx, c, keys, args)
		arr, err := res.ToArray()
		if err != nil {
			t.Fatalf("case %d: reserve_many: %v", n, err)
		}
		var got []string
		for _, m := range arr {
			got = append(got, strings.ReplaceAll(replyText(rueidis.NewResult(m, nil)), tagB, "TAG"))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("case %d (%+v): replies differ\nreserve.lua in turn: %q\nreserve_many.lua:    %q", n, mc, want, got)
		}
		if a, b := mc.state(t, c, tagA), mc.state(t, c, tagB); !reflect.DeepEqual(a, b) {
			for k := range a {
				if a[k] != b[k] {
					t.Errorf("case %d: %s: in turn %q, joined %q", n, k, a[k], b[k])
				}
			}
			t.FailNow()
		}
	}
}

// TestReserveManyRefusesBadInput: a call whose keys and arguments do not
// come in whole groups and reservations is refused before any write; a
// reservation naming no group of the call is refused alone.
func TestReserveManyRefusesBadInput(t *testing.T) {
	_, c := newStore(t)
	ctx := context.Background()
	tag := fmt.Sprintf("s%d:0:0", randomSaleID())
	many := rueidis.NewLuaScript(lua.ReserveMany)
	mc := manyCase{items: []int64{1}, moves: []string{""}, rs: [][12]string{{"1", sharding.NewOrderID(1, 1, 1).String(), "1", "1", "2", "60", "1", "10", "1", "0", "", "60"}}}
	keys, args := stock.JoinedLayout([][]string{mc.keys(tag, 0)}, [][]string{mc.rs[0][:]})
	if len(keys) != 7 || len(args) != 1+7+6 {
		t.Fatalf("one reservation laid out as %d keys and %d args, want 7 and 14", len(keys), len(args))
	}
	with := func(i int, v string) []string { a := slices.Clone(args); a[i] = v; return a }
	for _, tc := range []struct {
		name       string
		keys, args []string
	}{
		{"no reservation", nil, nil},
		{"a group and no reservation", keys[:6], args[:8]},
		{"5 args for the reservation", keys, args[:13]},
		{"an extra key", append(slices.Clone(keys), keys[6]), args},
		{"group count 0", keys, with(0, "0")},
		{"group count 2", keys, with(0, "2")},
		{"group count not a number", keys, with(0, "x")},
	} {
		err := many.Exec(ctx, c, tc.keys, tc.args).Error()
		if err == nil || !strings.Contains(err.Error(), "reserve_many: want a group count, 6 keys and 7 args per group") {
			t.Errorf("%s: got %v, want the shape refused", tc.name, err)
		}
	}
	if n, _ := c.Do(ctx, c.B().Exists().Key(keys[0], keys[1], keys[3]).Build()).AsInt64(); n != 0 {
		t.Fatalf("a refused call wrote %d keys", n)
	}
	for _, g := range []string{"0", "2", "1.5", ""} {
		arr, err := many.Exec(ctx, c, keys, with(8, g)).ToArray()
		if err != nil || len(arr) != 1 {
			t.Fatalf("group %q: %v %v, want one reply", g, arr, err)
		}
		if e := arr[0].Error(); e == nil || !strings.Contains(e.Error(), "reserve: bad arguments") {
			t.Errorf("a reservation naming group %q of 1: %v, want it refused", g, e)
		}
	}
	if n, _ := c.Do(ctx, c.B().Exists().Key(keys[1], keys[3]).Build()).AsInt64(); n != 0 {
		t.Fatalf("a refused reservation wrote %d keys", n)
	}
}

// TestBatcherJoinsReservations: concurrent reservations through a Batcher
// are joined into reserve_many.lua calls, and every caller gets its own
// answer: exactly the stock is sold, each winner's order is its own, and the
// buyer records name them.
func TestBatcherJoinsReservations(t *testing.T) {
	s, c := newStore(t)
	b := stock.NewBatcher(c, 3, time.Second)
	defer b.Close()
	b.SetAcks(1, 100*time.Millisecond)
	s.SetBatcher(b)
	ctx := context.Background()
	if err := s.LoadScripts(ctx); err != nil {
		t.Fatal(err)
	}
	saleID := randomSaleID()
	tag := fmt.Sprintf("s%d:0:0", saleID)
	const item, units, buyers = 7, 300, 1000
	if err := c.Do(ctx, c.B().Set().Key(string(sharding.AppendStockKey(nil, tag, item))).Value(strconv.Itoa(units)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := map[uint64]sharding.OrderID{}
	sold := 0
	for u := range buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := sharding.NewOrderID(saleID, uint64(u)+1, 7)
			res, err := s.Reserve(ctx, reservation(tag, item, uint64(u)+1, id))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			switch res.Outcome {
			case stock.Reserved:
				if res.OrderID != id || res.Replay {
					t.Errorf("user %d got order %v (replay %v), want its own %v", u+1, res.OrderID, res.Replay, id)
				}
				won[uint64(u)+1] = id
				sold++
			case stock.SoldOut:
			default:
				t.Errorf("user %d: %v", u+1, res.Outcome)
			}
		}()
	}
	wg.Wait()
	if sold != units {
		t.Fatalf("sold %d of %d units", sold, units)
	}
	if left := getInt(t, c, sharding.AppendStockKey(nil, tag, item)); left != 0 {
		t.Fatalf("stock left %d, want 0", left)
	}
	rec, err := c.Do(ctx, c.B().Hgetall().Key(string(sharding.AppendBuyersKey(nil, tag))).Build()).AsStrMap()
	if err != nil || len(rec) != units {
		t.Fatalf("buyer records: %d (%v), want %d", len(rec), err, units)
	}
	for u, id := range won {
		if b, err := stock.ParseBuyer(rec[strconv.FormatUint(u, 10)]); err != nil || !b.Lazy || b.OrderID != id {
			t.Fatalf("buyer %d: record %q, want %v", u, rec[strconv.FormatUint(u, 10)], id)
		}
	}
	if n, _ := c.Do(ctx, c.B().Xlen().Key(string(sharding.AppendEventsKey(nil, tag))).Build()).AsInt64(); n != units {
		t.Fatalf("journal holds %d entries, want %d", n, units)
	}
	if b.Joined() == 0 {
		t.Fatal("no reservation was joined with another: the test did not exercise reserve_many")
	}
	calls, carried := b.ReserveStats()
	if carried < buyers || calls < 1 || calls >= carried {
		t.Fatalf("%d reserve calls carrying %d reservations, want %d reservations in fewer calls", calls, carried, buyers)
	}
	t.Logf("%d of %d reservations went joined; %.1f reservations per call", b.Joined(), buyers, float64(carried)/float64(calls))
}

// TestJoinedLayoutSendsSharedOnce: what the reservations of one shard share
// (six keys, seven arguments) goes once per group into reserve_many.lua's
// call, and a reservation of another item or with a credit of its own opens
// a group of its own.
func TestJoinedLayoutSendsSharedOnce(t *testing.T) {
	tag := "s1:0:0"
	var mc manyCase
	var ks, as [][]string
	for i := range 25 {
		item := int64(11)
		if i == 7 {
			item = 12
		}
		mc.items, mc.moves = append(mc.items, item), append(mc.moves, "")
		mc.rs = append(mc.rs, [12]string{strconv.Itoa(i + 1), sharding.NewOrderID(1, uint64(i+1), 1).String(), strconv.FormatInt(item, 10), "1", "2", "60", "1", "10", strconv.Itoa(i + 100), "0", "", "60"})
	}
	mc.rs[9][9], mc.rs[9][10], mc.moves[9] = "2", "m1", "m1" // a borrow's credit
	for i, r := range mc.rs {
		ks, as = append(ks, mc.keys(tag, i)), append(as, slices.Clone(r[:]))
	}
	keys, args := stock.JoinedLayout(ks, as)
	if len(keys) != 6*3+25 || len(args) != 1+7*3+6*25 || args[0] != "3" {
		t.Fatalf("25 reservations in 3 groups laid out as %d keys, %d args, G=%s; want 43, 172, 3", len(keys), len(args), args[0])
	}
	for i, want := range []string{"1", "1", "1", "1", "1", "1", "1", "2", "1", "3", "1"} {
		if g := args[1+7*3+6*i]; g != want {
			t.Errorf("reservation %d in group %s, want %s", i, g, want)
		}
	}
	if got := keys[6*3+5]; got != ks[5][2] {
		t.Errorf("reservation 5's order key %q, want %q", got, ks[5][2])
	}
}
