package room_test

import (
	"context"
	strconvpkg "strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"flashsale/deploy/testenv"
	"flashsale/lua"
	"flashsale/sharding"
)

// TestScriptsRefuseBadInput: every malformed call of the room's scripts gets
// an error reply and writes nothing.
func TestScriptsRefuseBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs the local stack")
	}
	c := testenv.NewRedis(t)
	ctx := context.Background()
	sale := randomSale()
	draw := sharding.RoomLotteryKey(sale, 3)
	state, tail := sharding.RoomStateKey(sale), sharding.RoomTailKey(sale)
	future := ms(time.Now().Add(time.Hour).UnixMilli())
	later := ms(time.Now().Add(2 * time.Hour).UnixMilli())
	join, tick := rueidis.NewLuaScript(lua.RoomJoin), rueidis.NewLuaScript(lua.RoomTick)
	jargs := []string{"42", "12345", future, later}
	targs := []string{future, "0", "0", "10", "1", later}
	with := func(a []string, i int, v string) []string {
		out := append([]string(nil), a...)
		out[i] = v
		return out
	}
	cases := []struct {
		name   string
		script *rueidis.Lua
		keys   []string
		args   []string
		want   string
	}{
		{"join: no keys", join, nil, jargs, "want 1 key and 4 args"},
		{"join: 3 args", join, []string{draw}, jargs[:3], "want 1 key and 4 args"},
		{"join: user 0", join, []string{draw}, with(jargs, 0, "0"), "bad arguments"},
		{"join: user not a number", join, []string{draw}, with(jargs, 0, "u1"), "bad arguments"},
		{"join: draw 2^52", join, []string{draw}, with(jargs, 1, "4503599627370496"), "bad arguments"},
		{"join: draw negative", join, []string{draw}, with(jargs, 1, "-1"), "bad arguments"},
		{"join: draw fraction", join, []string{draw}, with(jargs, 1, "1.5"), "bad arguments"},
		{"join: close not a number", join, []string{draw}, with(jargs, 2, "soon"), "bad arguments"},
		{"join: expiry before close", join, []string{draw}, with(jargs, 3, future), "bad arguments"},
		{"tick: one key", tick, []string{state}, targs, "want 2 keys and 6 args"},
		{"tick: 5 args", tick, []string{state, tail}, targs[:5], "want 2 keys and 6 args"},
		{"tick: admission not a number", tick, []string{state, tail}, with(targs, 0, "x"), "bad arguments"},
		{"tick: negative draw", tick, []string{state, tail}, with(targs, 1, "-2"), "bad arguments"},
		{"tick: final 2", tick, []string{state, tail}, with(targs, 2, "2"), "bad arguments"},
		{"tick: remaining fraction", tick, []string{state, tail}, with(targs, 3, "0.5"), "bad arguments"},
		{"tick: factor 0", tick, []string{state, tail}, with(targs, 4, "0"), "bad arguments"},
		{"tick: factor nan", tick, []string{state, tail}, with(targs, 4, "nan"), "bad arguments"},
		{"tick: expiry missing", tick, []string{state, tail}, with(targs, 5, ""), "bad arguments"},
	}
	for _, tc := range cases {
		err := tc.script.Exec(ctx, c, tc.keys, tc.args).Error()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	for _, k := range []string{draw, state, tail} {
		if n, err := c.Do(ctx, c.B().Exists().Key(k).Build()).AsInt64(); err != nil || n != 0 {
			t.Fatalf("%s was written by a refused call (%d, %v)", k, n, err)
		}
	}
	// The good calls work (the cases above differ from them in one argument).
	if err := join.Exec(ctx, c, []string{draw}, jargs).Error(); err != nil {
		t.Fatal(err)
	}
	if err := tick.Exec(ctx, c, []string{state, tail}, targs).Error(); err != nil {
		t.Fatal(err)
	}
	_ = c.Do(ctx, c.B().Del().Key(draw).Build()).Error()
	_ = c.Do(ctx, c.B().Del().Key(state).Build()).Error()
}

func ms(n int64) string { return strconvpkg.FormatInt(n, 10) }
