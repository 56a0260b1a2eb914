package httpapi

import (
	"testing"

	"flashsale/sharding"
)

// usersHome returns n users whose home shard in the env's sale is home.
func (e *env) usersHome(home, n int) []uint64 {
	var out []uint64
	for u := uint64(1000); len(out) < n; u++ {
		if sharding.HomeShard(u, e.sale.ID, len(e.sale.Shards)) == home {
			out = append(out, u)
		}
	}
	return out
}

// setStock sets item 7's units on the sale's shard-th shard.
func (e *env) setStock(shard int, n int64) { e.st.setStock(e.sale.Shards[shard], n) }

// stockOf reads item 7's units on the sale's shard-th shard.
func (e *env) stockOf(shard int) int64 { return e.st.stockOf(e.sale.Shards[shard]) }

// TestBorrowPastAShardThatDoesNotAnswer: a buyer whose home shard is dry
// borrows from a shard that answers while another shard's master is down,
// and while every shard that answers is dry the answer is 503 (nothing
// reserved), not SOLD_OUT: the shard that did not answer may hold units.
// Once it answers again, its units sell.
func TestBorrowPastAShardThatDoesNotAnswer(t *testing.T) {
	e := newEnv(t, envOpt{shards: 3, stockPerShard: 1, borrow: true})
	c := e.serve("10.0.0.1")
	users := e.usersHome(0, 3)
	e.setStock(0, 0) // dry after the catalog read it
	e.setStock(1, 5) // its master is down
	e.setStock(2, 1)
	e.st.set(func(f *scriptStore) { f.unread = map[string]bool{e.sale.Shards[1]: true} })

	r := do(t, c, "POST", purchasePath, e.token(users[0]))
	want(t, r, 202, "")
	if e.stockOf(2) != 0 || e.stockOf(0) != 0 {
		t.Fatalf("after the borrow: shards 0 and 2 hold %d and %d, want 0 and 0", e.stockOf(0), e.stockOf(2))
	}

	r = do(t, c, "POST", purchasePath, e.token(users[1]))
	want(t, r, 503, `{"error":"UNAVAILABLE"}`)
	if n := len(e.st.journal()); n != 1 || e.stockOf(1) != 5 {
		t.Fatalf("the 503 left %d journal entries (want 1) and shard 1 at %d (want 5)", n, e.stockOf(1))
	}

	e.st.set(func(f *scriptStore) { f.unread = nil })
	r = do(t, c, "POST", purchasePath, e.token(users[1]))
	want(t, r, 202, "")
	if e.stockOf(1) != 4 {
		t.Fatalf("shard 1 holds %d after lending one unit, want 4", e.stockOf(1))
	}
}

// TestBorrowSoldOutWhenEveryShardReadZero: a dry home shard and every other
// shard read zero is a SOLD_OUT, and sets the item's flag.
func TestBorrowSoldOutWhenEveryShardReadZero(t *testing.T) {
	e := newEnv(t, envOpt{shards: 3, stockPerShard: 1, borrow: true})
	c := e.serve("10.0.0.1")
	for i := range 3 {
		e.setStock(i, 0) // sold since the catalog read them
	}
	r := do(t, c, "POST", purchasePath, e.token(e.usersHome(1, 1)[0]))
	want(t, r, 410, `{"error":"SOLD_OUT"}`)
	if it := e.cat.Snapshot().Item(7); it == nil || !it.Flags.SoldOut() {
		t.Fatal("the item is not flagged sold out after a reading of every shard at zero")
	}
}
