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
	draw := sharding.RoomEntrantsKey(sale, 3)
	state, tail := sharding.RoomStateKey(sale), sharding.RoomTailKey(sale)
	future := ms(time.Now().Add(time.Hour).UnixMilli())
	later := ms(time.Now().Add(2 * time.Hour).UnixMilli())
	join, tick, freeze := rueidis.NewLuaScript(lua.RoomJoin), rueidis.NewLuaScript(lua.RoomTick), rueidis.NewLuaScript(lua.RoomFreeze)
	seedKey := sharding.RoomSeedKey(sale)
	h := strings.Repeat("ab", 32)
	fargs := []string{h, "3", h, "100", later, "0", "", "0"}
	jargs := []string{"42", strings.Repeat("0f", 16), future, later}
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
		{"join: user of 21 digits", join, []string{draw}, with(jargs, 0, "123456789012345678901"), "bad arguments"},
		{"join: nonce short", join, []string{draw}, with(jargs, 1, strings.Repeat("0f", 15)), "bad arguments"},
		{"join: nonce upper case", join, []string{draw}, with(jargs, 1, strings.Repeat("0F", 16)), "bad arguments"},
		{"join: nonce not hex", join, []string{draw}, with(jargs, 1, strings.Repeat("zz", 16)), "bad arguments"},
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
		{"freeze: one key", freeze, []string{state}, fargs, "want 2 keys and 8 args"},
		{"freeze: 7 args", freeze, []string{state, seedKey}, fargs[:7], "want 2 keys and 8 args"},
		{"freeze: earliest not a number", freeze, []string{state, seedKey}, with(fargs, 5, "soon"), "bad arguments"},
		{"freeze: root short", freeze, []string{state, seedKey}, with(fargs, 0, h[:62]), "bad arguments"},
		{"freeze: root upper case", freeze, []string{state, seedKey}, with(fargs, 0, strings.ToUpper(h)), "bad arguments"},
		{"freeze: count negative", freeze, []string{state, seedKey}, with(fargs, 1, "-1"), "bad arguments"},
		{"freeze: count fraction", freeze, []string{state, seedKey}, with(fargs, 1, "1.5"), "bad arguments"},
		{"freeze: seed not hex", freeze, []string{state, seedKey}, with(fargs, 2, strings.Repeat("zz", 32)), "bad arguments"},
		{"freeze: delay negative", freeze, []string{state, seedKey}, with(fargs, 3, "-1"), "bad arguments"},
		{"freeze: expiry missing", freeze, []string{state, seedKey}, with(fargs, 4, ""), "bad arguments"},
		{"freeze: beacon short", freeze, []string{state, seedKey}, with(fargs, 6, strings.Repeat("ab", 47)), "bad arguments"},
		{"freeze: beacon upper case", freeze, []string{state, seedKey}, with(fargs, 6, strings.Repeat("AB", 48)), "bad arguments"},
		{"freeze: sealed 2", freeze, []string{state, seedKey}, with(fargs, 7, "2"), "bad arguments"},
	}
	for _, tc := range cases {
		err := tc.script.Exec(ctx, c, tc.keys, tc.args).Error()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	for _, k := range []string{draw, state, tail, seedKey} {
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

// TestFreezeThenReveal: room_freeze.lua records nothing before the earliest
// freeze by its own clock, then the first root and count it is given, and
// answers them to every later call (a gateway that read other
// entrants sees the difference); the seed stays secret until the reveal
// delay after the freeze, then it is the one written at the creation; a
// sale without one gets the caller's, marked as not committed.
func TestFreezeThenReveal(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs the local stack")
	}
	c := testenv.NewRedis(t)
	ctx := context.Background()
	freeze := rueidis.NewLuaScript(lua.RoomFreeze)
	later := ms(time.Now().Add(time.Hour).UnixMilli())
	rootA, rootB, seed, spare := strings.Repeat("0a", 32), strings.Repeat("0b", 32), strings.Repeat("5e", 32), strings.Repeat("77", 32)
	earliest, sig, sealed := "0", "", "0"
	run := func(sale int64, root, count string) []string {
		t.Helper()
		keys := []string{sharding.RoomStateKey(sale), sharding.RoomSeedKey(sale)}
		t.Cleanup(func() { _ = c.Do(context.Background(), c.B().Del().Key(keys[0]).Build()).Error() })
		t.Cleanup(func() { _ = c.Do(context.Background(), c.B().Del().Key(keys[1]).Build()).Error() })
		v, err := freeze.Exec(ctx, c, keys, []string{root, count, spare, "300", later, earliest, sig, sealed}).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	sale := randomSale()
	if err := c.Do(ctx, c.B().Set().Key(sharding.RoomSeedKey(sale)).Value(seed).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	// A gateway whose clock runs ahead asks before the close by Redis's
	// clock: nothing is recorded.
	earliest = ms(time.Now().Add(time.Minute).UnixMilli())
	if early := run(sale, rootB, "8"); len(early) != 1 || early[0] != "early" {
		t.Fatalf("a freeze before the close by Redis's clock: %q", early)
	}
	earliest = "0"
	first := run(sale, rootA, "7")
	if first[0] != rootA || first[1] != "7" || first[3] != "" {
		t.Fatalf("first freeze: %q", first)
	}
	if again := run(sale, rootB, "8"); again[0] != rootA || again[1] != "7" || again[2] != first[2] || again[3] != "" {
		t.Fatalf("a second freeze with another root: %q, want the first root and no seed yet", again)
	}
	time.Sleep(350 * time.Millisecond)
	if rev := run(sale, rootA, "7"); rev[3] != seed || rev[4] != "1" {
		t.Fatalf("after the delay: %q, want the committed seed", rev)
	}
	bare := randomSale()
	run(bare, rootA, "0")
	time.Sleep(350 * time.Millisecond)
	if rev := run(bare, rootA, "0"); rev[3] != spare || rev[4] != "0" {
		t.Fatalf("a sale without a seed: %q, want the caller's, not committed", rev)
	}
	// A sealed draw: the seed waits for a beacon round past the delay; the
	// first round recorded stands.
	sealedSale := randomSale()
	if err := c.Do(ctx, c.B().Set().Key(sharding.RoomSeedKey(sealedSale)).Value(seed).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	sealed = "1"
	run(sealedSale, rootA, "7")
	time.Sleep(350 * time.Millisecond)
	if rev := run(sealedSale, rootA, "7"); rev[3] != "" || rev[5] != "" {
		t.Fatalf("a sealed draw past the delay, no round: %q, want no seed yet", rev)
	}
	sig = strings.Repeat("ab", 48)
	if rev := run(sealedSale, rootA, "7"); rev[3] != seed || rev[5] != sig {
		t.Fatalf("a sealed draw with its round: %q, want the seed and the round", rev)
	}
	other := sig
	sig = strings.Repeat("cd", 48)
	if rev := run(sealedSale, rootA, "7"); rev[5] != other {
		t.Fatalf("a second round offered: %q, want the first kept", rev)
	}
}

func ms(n int64) string { return strconvpkg.FormatInt(n, 10) }
