package room

import (
	"context"
	"strings"
	"testing"

	"flashsale/deploy/testenv"
)

// TestMalformedReplies feeds the reply parsers real Redis replies of the
// wrong shape: each is a clear error, never a state or a draw.
func TestMalformedReplies(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs the local stack")
	}
	c := testenv.NewRedis(t)
	ctx := context.Background()
	ticks := map[string]string{
		"return 1":                             "room_tick",
		"return {1,2,3,4}":                     "malformed reply of 4 elements",
		"return {1,2,'x',4,5}":                 "malformed reply element 2",
		"return {-1,2,0,4,5}":                  "malformed reply",
		"return {1,2,2,4,5}":                   "malformed reply",
		"return redis.error_reply('ERR boom')": "boom",
	}
	for src, want := range ticks {
		res := c.Do(ctx, c.B().Eval().Script(src).Numkeys(0).Build())
		if st, err := parseTick(res); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("tick reply %q: %+v %v, want an error saying %q", src, st, err, want)
		}
	}
	joins := map[string]string{
		"return {}":                       "malformed reply of 0 elements",
		"return {2}":                      "malformed reply of 1 elements",
		"return {0, '5'}":                 "first element",
		"return {1, 'abc'}":               "malformed nonce",
		"return {1, '-3'}":                "malformed nonce",
		"return {1, string.rep('A', 32)}": "malformed nonce",
		"return {1, string.rep('0', 31)}": "malformed nonce",
		"return {1, {1}}":                 "malformed nonce",
	}
	for src, want := range joins {
		v, err := c.Do(ctx, c.B().Eval().Script(src).Numkeys(0).Build()).ToArray()
		if err != nil {
			t.Fatal(err)
		}
		if n, ok, err := parseJoin(v); err == nil || ok || !strings.Contains(err.Error(), want) {
			t.Errorf("join reply %q: %q %v %v, want an error saying %q", src, n, ok, err, want)
		}
	}
	good := strings.Repeat("0a", 16)
	v, _ := c.Do(ctx, c.B().Eval().Script("return {1, '"+good+"'}").Numkeys(0).Build()).ToArray()
	if n, ok, err := parseJoin(v); err != nil || !ok || n != good {
		t.Errorf("a good join reply: %q %v %v", n, ok, err)
	}
	h := strings.Repeat("ab", 32)
	freezes := map[string]string{
		"return {'late'}": "malformed reply of 1 elements",
		"return {}":       "malformed reply of 0 elements",
		"return {'" + h + "', '3', '1700000000000', '', '1'}":        "malformed reply of 5 elements",
		"return {'" + h + "', '3', '1700000000000', '', '2', ''}":    "malformed reply",
		"return {'" + h + "', '-3', '1700000000000', '', '1', ''}":   "malformed reply",
		"return {'" + h + "', '3', 'x', '', '1', ''}":                "malformed reply",
		"return {'zz', '3', '1700000000000', '', '1', ''}":           "root",
		"return {'" + h + "', '3', '1700000000000', 'abc', '1', ''}": "seed",
		"return {'" + h + "', '3', '1700000000000', '', '1', 'ab'}":  "beacon",
	}
	for src, want := range freezes {
		v, err := c.Do(ctx, c.B().Eval().Script(src).Numkeys(0).Build()).ToArray()
		if err != nil {
			t.Fatal(err)
		}
		if rep, err := parseFreeze(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("freeze reply %q: %+v %v, want an error saying %q", src, rep, err, want)
		}
	}
	v, _ = c.Do(ctx, c.B().Eval().Script("return {'"+h+"', '3', '1700000000000', '"+h+"', '1', ''}").Numkeys(0).Build()).ToArray()
	if rep, err := parseFreeze(v); err != nil || rep.count != 3 || rep.seed == nil || !rep.committed {
		t.Errorf("a good freeze reply: %+v %v", rep, err)
	}
}

// TestMalformedEntrants: an entrants shard's field that is not a user id with a
// nonce as room_join.lua writes it is refused, never read as an entrant.
func TestMalformedEntrants(t *testing.T) {
	good := strings.Repeat("0f", 16)
	for _, tc := range [][2]string{{"0", good}, {"-1", good}, {"x", good}, {"18446744073709551616", good},
		{"5", ""}, {"5", good[:30]}, {"5", strings.ToUpper(good)}, {"5", good + "00"}, {"5", strings.Repeat("g", 32)}} {
		if e, err := parseEntrant(tc[0], tc[1]); err == nil {
			t.Errorf("entrant %q=%q read as %+v", tc[0], tc[1], e)
		}
	}
	if e, err := parseEntrant("5", good); err != nil || e.user != 5 || e.nonce[0] != 0x0f {
		t.Errorf("a good entrant: %+v %v", e, err)
	}
}
