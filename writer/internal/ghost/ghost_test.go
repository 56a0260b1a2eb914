package ghost

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	"flashsale/deploy/testenv"
)

// TestBuyersOfReadsEveryPage: a buyers record larger than several HSCAN
// pages comes back whole, each user with its own order id; an empty or
// missing one comes back empty; a key of another type is an error.
func TestBuyersOfReadsEveryPage(t *testing.T) {
	c := testenv.NewRedis(t)
	ctx := context.Background()
	key := "{ghost-scan-" + strconv.FormatUint(rand.Uint64(), 36) + "}:buyers"
	t.Cleanup(func() { c.Do(context.Background(), c.B().Del().Key(key).Build()) })
	const n = 2*scanPage + 500
	args := c.B().Hset().Key(key).FieldValue()
	for i := range n {
		args = args.FieldValue(strconv.Itoa(i+1), "order-"+strconv.Itoa(i+1))
	}
	if err := c.Do(ctx, args.Build()).Error(); err != nil {
		t.Fatal(err)
	}
	got, err := buyersOf(ctx, c, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d buyers, want %d", len(got), n)
	}
	for i := range n {
		if u := strconv.Itoa(i + 1); got[u] != "order-"+u {
			t.Fatalf("user %s: %q", u, got[u])
		}
	}
	if got, err := buyersOf(ctx, c, key+"-missing"); err != nil || len(got) != 0 {
		t.Fatalf("missing record: %v %v", got, err)
	}
	str := "{ghost-scan-str}:buyers"
	t.Cleanup(func() { c.Do(context.Background(), c.B().Del().Key(str).Build()) })
	if err := c.Do(ctx, c.B().Set().Key(str).Value("x").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := buyersOf(ctx, c, str); err == nil {
		t.Fatal("a string key read as a buyers record")
	}
}
