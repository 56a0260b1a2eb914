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
		"return {}":                      "malformed reply of 0 elements",
		"return {2}":                     "malformed reply of 1 elements",
		"return {0, '5'}":                "first element",
		"return {1, 'abc'}":              "malformed draw",
		"return {1, '-3'}":               "malformed draw",
		"return {1, '1.5'}":              "malformed draw",
		"return {1, '4503599627370496'}": "malformed draw",
		"return {1, {1}}":                "malformed draw",
	}
	for src, want := range joins {
		v, err := c.Do(ctx, c.B().Eval().Script(src).Numkeys(0).Build()).ToArray()
		if err != nil {
			t.Fatal(err)
		}
		if d, ok, err := parseJoin(v); err == nil || ok || !strings.Contains(err.Error(), want) {
			t.Errorf("join reply %q: %d %v %v, want an error saying %q", src, d, ok, err, want)
		}
	}
	// The good shapes parse (a score as Redis prints a double, too).
	for src, want := range map[string]uint64{"return {1, '12345'}": 12345, "return {1, '1e+15'}": 1e15} {
		v, _ := c.Do(ctx, c.B().Eval().Script(src).Numkeys(0).Build()).ToArray()
		if d, ok, err := parseJoin(v); err != nil || !ok || d != want {
			t.Errorf("join reply %q: %d %v %v", src, d, ok, err)
		}
	}
}
