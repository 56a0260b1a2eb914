package presale

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"flashsale/deploy/testenv"
	"flashsale/gateway/internal/auth"
	"flashsale/sharding"
)

func tok(t *testing.T, user uint64, claims map[string]any) []byte {
	t.Helper()
	s, err := auth.MintHS256([]byte("presale-test-secret-0123456789ab"), user, time.Now().Add(time.Hour), claims)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(s)
}

// TestEligible: the claim as a string or in an array of strings, another
// value, another type, no claim, the list; and an answer once cached costs
// no allocation.
func TestEligible(t *testing.T) {
	g := New(nil, nil)
	now := time.Now()
	s := &sharding.Sale{ID: 5, StartsAt: now.Add(time.Minute), Presale: &sharding.Presale{StartsAt: now, Claim: "tier", Values: []string{"gold", "member"}}}
	cases := []struct {
		claims map[string]any
		want   bool
	}{
		{map[string]any{"tier": "gold"}, true},
		{map[string]any{"tier": []string{"silver", "member"}}, true},
		{map[string]any{"tier": "silver"}, false},
		{map[string]any{"tier": 1}, false},
		{map[string]any{"tier": map[string]string{"gold": "gold"}}, false},
		{map[string]any{"Tier": "gold"}, false},
		{nil, false},
	}
	for i, tc := range cases {
		tk := tok(t, uint64(10+i), tc.claims)
		if got := g.Eligible(s, uint64(10+i), tk); got != tc.want {
			t.Errorf("claims %v: eligible %v", tc.claims, got)
		}
		if n := testing.AllocsPerRun(100, func() { g.Eligible(s, uint64(10+i), tk) }); n != 0 {
			t.Errorf("claims %v: a cached answer allocates %v", tc.claims, n)
		}
	}
	for _, garbage := range []string{"", "a.b", "a.!!!.c", "a.e30.c"} {
		if g.Eligible(s, 99, []byte(garbage)) {
			t.Errorf("token %q eligible", garbage)
		}
	}
	if (&Gate{}).Eligible(&sharding.Sale{}, 1, nil) {
		t.Error("a sale without a presale is eligible")
	}
}

// TestListRefresh: a live presale's list is read from Redis (and only a
// live one's); a malformed member is an error that keeps the last good
// copy; a listed user is eligible without any claim.
func TestListRefresh(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs the local stack")
	}
	c := testenv.NewRedis(t)
	ctx := context.Background()
	g := New(c, nil)
	now := time.Now()
	id := 1 + rand.Int64N(sharding.MaxSaleID-1)
	key := sharding.PresaleListKey(id)
	t.Cleanup(func() { _ = c.Do(context.Background(), c.B().Del().Key(key).Build()).Error() })
	s := &sharding.Sale{ID: id, StartsAt: now.Add(time.Minute), Presale: &sharding.Presale{StartsAt: now, List: true}}
	later := &sharding.Sale{ID: id + 1, StartsAt: now.Add(time.Hour), Presale: &sharding.Presale{StartsAt: now.Add(30 * time.Minute), List: true}}
	if err := c.Do(ctx, c.B().Sadd().Key(key).Member("7", "8").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := g.Refresh(ctx, now, []*sharding.Sale{s, later}); err != nil {
		t.Fatal(err)
	}
	if !g.Eligible(s, 7, nil) || g.Eligible(s, 9, nil) || len(*g.lists.Load()) != 1 {
		t.Fatalf("lists %v", *g.lists.Load())
	}
	if err := c.Do(ctx, c.B().Sadd().Key(key).Member("x9").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := g.Refresh(ctx, now, []*sharding.Sale{s}); err == nil || !g.Eligible(s, 8, nil) {
		t.Fatalf("a malformed list: %v, and the last copy is lost", err)
	}
}
