package ops

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/journal"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/schema"
)

type env struct {
	t    *Tool
	c    rueidis.Client
	pool *pgxpool.Pool
}

func newEnv(t testing.TB) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the local stack")
	}
	testenv.Require(t, "redis", "postgres")
	c := testenv.NewRedis(t)
	pool := testenv.NewPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := schema.Migrate(ctx, pool, nil); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	return &env{t: NewTool(c, pool), c: c, pool: pool}
}

func randomSaleID() int64 { return 1 + rand.Int64N(sharding.MaxSaleID-1) }

// newSale creates a sale with one item per quantity in PostgreSQL, preloads it
// with shards shards through the tool, and removes every trace of it when the
// test ends. Item ids are random (items.id is global).
func (e *env) newSale(t testing.TB, shards int, qty ...int64) *sale.Sale {
	t.Helper()
	ctx := context.Background()
	id := randomSaleID()
	now := time.Now().UTC().Truncate(time.Second)
	if _, err := e.pool.Exec(ctx, `INSERT INTO sales (id, name, starts_at, ends_at, shards) VALUES ($1, $2, $3, $4, $5)`,
		id, "ops test", now.Add(-time.Minute), now.Add(time.Hour), shards); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.dropSale(id) })
	for _, q := range qty {
		item := 1 + rand.Int64N(1<<50)
		if _, err := e.pool.Exec(ctx, `INSERT INTO items (id, sale_id, name, price, currency, quantity) VALUES ($1, $2, 'thing', 1000, 'EUR', $3)`,
			item, id, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.t.Preload(ctx, id, shards, false); err != nil {
		t.Fatal(err)
	}
	sale, err := e.t.Store.LoadSale(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return sale
}

// dropSale deletes the sale's rows and every Redis key of its tags.
func (e *env) dropSale(id int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = e.pool.Exec(ctx, `DELETE FROM orders WHERE sale_id = $1`, id)
	_, _ = e.pool.Exec(ctx, `DELETE FROM items WHERE sale_id = $1`, id)
	_, _ = e.pool.Exec(ctx, `DELETE FROM sales WHERE id = $1`, id)
	e.dropRedis(ctx, id)
}

// dropRedis deletes every key of sale id from Redis, as if Redis had lost
// the sale: its description, index entry, reshard record and shard keys.
func (e *env) dropRedis(ctx context.Context, id int64) {
	s := strconv.FormatInt(id, 10)
	keys := map[string]bool{}
	// One pattern for both kinds of tag ({s<id>:...} and {s<id>v...}), on
	// the masters only: a SCAN walks a node's whole keyspace, which a well
	// used dev stack makes long.
	nodes := e.c.Nodes()
	if top, err := stock.Topology(ctx, e.c); err == nil {
		nodes = map[string]rueidis.Client{}
		for _, m := range top.Masters {
			if n, ok := e.c.Nodes()[m.Addr]; ok {
				nodes[m.Addr] = n
			}
		}
	}
	pattern := "{s" + s + "[:v]*"
	for _, node := range nodes {
		var cursor uint64
		for {
			sc, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(pattern).Count(10000).Build()).AsScanEntry()
			if err != nil {
				break
			}
			for _, k := range sc.Elements {
				keys[k] = true
			}
			if cursor = sc.Cursor; cursor == 0 {
				break
			}
		}
	}
	cmds := rueidis.Commands{
		e.c.B().Del().Key(sharding.SaleKey(id)).Build(),
		e.c.B().Del().Key(sharding.ReshardKey(id)).Build(),
		e.c.B().Srem().Key(sharding.SalesKey).Member(s).Build(),
	}
	for k := range keys {
		cmds = append(cmds, e.c.B().Del().Key(k).Build())
	}
	e.c.DoMulti(ctx, cmds...)
}

// shopper buys the way a gateway does: reserve on the user's home shard; on
// SOLD_OUT while the item has units on other shards, borrow one, reserved in
// the crediting script; on a frozen shard, reload the sale and retry.
type shopper struct {
	st       *stock.Store
	sale     atomic.Pointer[sale.Sale]
	tries    int           // reservation attempts before answering SOLD_OUT (default 8)
	timeout  time.Duration // per Redis call (default 2 s)
	borrowed atomic.Int64
	borrows  atomic.Int64
	frozen   atomic.Int64
	// soldOutWithStock counts SOLD_OUT answers given while units remained.
	soldOutWithStock atomic.Int64
}

func newShopper(st *stock.Store, sale *sale.Sale) *shopper {
	sh := &shopper{st: st, tries: 8, timeout: 2 * time.Second}
	sh.sale.Store(sale)
	return sh
}

// buy returns the final answer to one purchase click of user for item, the
// way the gateway's purchase does it: on SOLD_OUT, a reading of every shard
// with moves in flight (Available); sold out only when it is all zero; else
// one unit taken from a donor and reserved in the script that credits it.
func (sh *shopper) buy(ctx context.Context, item int64, user uint64) (stock.Result, error) {
	var credit stock.Credit
	var from string
	for try := 0; try < sh.tries; {
		sale := sh.sale.Load()
		home := sharding.HomeShard(user, sale.ID, len(sale.Shards))
		now := time.Now()
		cctx, cancel := context.WithTimeout(ctx, sh.timeout)
		r, err := sh.st.Reserve(cctx, stock.Reservation{Tag: sale.Shards[home], SaleID: sale.ID, ItemID: item, UserID: user, Attempt: rand.Uint64(),
			OrderID: sharding.NewOrderID(sale.ID, rand.Uint64(), rand.Uint32()),
			Created: now, Expires: now.Add(10 * time.Minute), TTL: 15 * time.Minute, Credit: credit})
		cancel()
		if errors.Is(err, stock.ErrFrozen) {
			sh.frozen.Add(1)
			fresh, err := sh.st.LoadSale(ctx, sale.ID)
			if err != nil {
				return r, err
			}
			if fresh.Version == sale.Version {
				time.Sleep(time.Millisecond)
			}
			sh.sale.CompareAndSwap(sale, fresh)
			credit = stock.Credit{}
			continue
		}
		if err == nil && credit.Units > 0 {
			_ = sh.st.DropMove(ctx, from, credit.MoveID)
			sh.borrowed.Add(credit.Units)
		}
		credit = stock.Credit{}
		if err != nil || r.Outcome != stock.SoldOut {
			return r, err
		}
		try++
		rem, err := sh.st.Available(ctx, sale, item)
		if err != nil {
			return r, err
		}
		if sum(rem) == 0 {
			return r, nil // truly sold out
		}
		if try == sh.tries {
			break
		}
		donor, most := -1, int64(0)
		for i, n := range rem {
			if i != home && n > most {
				donor, most = i, n
			}
		}
		if donor < 0 {
			continue // the units are on the home shard now
		}
		from = sale.Shards[donor]
		id, k, err := sh.st.MoveOut(ctx, item, from, sale.Shards[home], 1)
		if errors.Is(err, stock.ErrFrozen) {
			continue
		}
		if err != nil {
			return r, err
		}
		sh.borrows.Add(1)
		if k > 0 {
			credit = stock.Credit{MoveID: id, Units: k}
		}
	}
	if rem, err := sh.st.Available(ctx, sh.sale.Load(), item); err == nil && sum(rem) > 0 {
		sh.soldOutWithStock.Add(1)
	}
	return stock.Result{Outcome: stock.SoldOut}, nil
}

// users returns n distinct random user ids.
func users(n int) []uint64 {
	seen := map[uint64]bool{}
	out := make([]uint64, 0, n)
	for len(out) < n {
		u := 1 + rand.Uint64N(1<<62)
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out
}

// allBuyers returns user -> (shard, order id) over the sale's shards, failing
// on a user recorded twice or off the home shard.
func (e *env) allBuyers(t testing.TB, sale *sale.Sale) map[uint64]sharding.OrderID {
	t.Helper()
	out := map[uint64]sharding.OrderID{}
	for i, tag := range sale.Shards {
		m, err := e.t.Store.Buyers(context.Background(), tag)
		if err != nil {
			t.Fatal(err)
		}
		for u, id := range m {
			if _, dup := out[u]; dup {
				t.Fatalf("user %d holds buyer records on two shards", u)
			}
			if h := sharding.HomeShard(u, sale.ID, len(sale.Shards)); h != i {
				t.Fatalf("user %d recorded on shard %d, home %d", u, i, h)
			}
			out[u] = id
		}
	}
	return out
}

func (e *env) left(t testing.TB, sale *sale.Sale, item int64) int64 {
	t.Helper()
	rem, err := e.t.Store.Remaining(context.Background(), sale, item)
	if err != nil {
		t.Fatal(err)
	}
	return sum(rem)
}

// writerLag returns a consumer group's lag reader (ReconcileOptions.WriterLag)
// on a topic of its own in the stack's Kafka holding records uncommitted
// records (8 partitions, the group at offset 0 on each), with the group and topic names, for flashctl's flags.
func writerLag(t testing.TB, records int) (lag func(context.Context) (int64, error), group, topic string) {
	t.Helper()
	testenv.Require(t, "kafka")
	topic = testenv.NewTopic(t, "reconcile-lag")
	cl, err := kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < records; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The group commits offset 0 on every partition, as a writer that has
	// persisted nothing of the topic yet would have.
	group = "reconcile-" + strconv.FormatInt(randomSaleID(), 36)
	offs := kadm.Offsets{}
	for p := int32(0); p < 8; p++ {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: 0, LeaderEpoch: -1})
	}
	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, group, offs); err != nil {
		t.Fatalf("committing the group's offsets: %v", err)
	}
	return func(ctx context.Context) (int64, error) { return journal.GroupLag(ctx, cl, group, topic) }, group, topic
}
