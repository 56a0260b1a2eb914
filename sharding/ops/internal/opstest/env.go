package opstest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
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
	"flashsale/sharding/ops/preload"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/schema"
)

// Env is a test's view of the local stack: a Tool over its Redis and
// PostgreSQL (migrated), and the two clients.
type Env struct {
	T    *tool.Tool
	C    rueidis.Client
	Pool *pgxpool.Pool
}

// NewEnv connects to the stack, or skips t without it (and in -short).
func NewEnv(t testing.TB) *Env {
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
	return &Env{T: tool.NewTool(c, pool), C: c, Pool: pool}
}

// RandomSaleID returns a sale id no other test is likely to use.
func RandomSaleID() int64 { return 1 + rand.Int64N(sharding.MaxSaleID-1) }

// NewSale creates a sale with one item per quantity in PostgreSQL, preloads it
// with shards shards through the tool, and removes every trace of it when the
// test ends. Item ids are random (items.id is global).
func (e *Env) NewSale(t testing.TB, shards int, qty ...int64) *sale.Sale {
	t.Helper()
	ctx := context.Background()
	id := RandomSaleID()
	now := time.Now().UTC().Truncate(time.Second)
	if _, err := e.Pool.Exec(ctx, `INSERT INTO sales (id, name, starts_at, ends_at, shards) VALUES ($1, $2, $3, $4, $5)`,
		id, "ops test", now.Add(-time.Minute), now.Add(time.Hour), shards); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.DropSale(id) })
	for _, q := range qty {
		item := 1 + rand.Int64N(1<<50)
		if _, err := e.Pool.Exec(ctx, `INSERT INTO items (id, sale_id, name, price, currency, quantity) VALUES ($1, $2, 'thing', 1000, 'EUR', $3)`,
			item, id, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := preload.Preload(ctx, e.T, id, shards, false); err != nil {
		t.Fatal(err)
	}
	sale, err := e.T.Store.LoadSale(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return sale
}

// DropSale deletes the sale's rows and every Redis key of its tags.
func (e *Env) DropSale(id int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = e.Pool.Exec(ctx, `DELETE FROM orders WHERE sale_id = $1`, id)
	_, _ = e.Pool.Exec(ctx, `DELETE FROM items WHERE sale_id = $1`, id)
	_, _ = e.Pool.Exec(ctx, `DELETE FROM sales WHERE id = $1`, id)
	e.DropRedis(ctx, id)
}

// DropRedis deletes every key of sale id from Redis, as if Redis had lost
// the sale: its description, index entry, reshard record and shard keys.
func (e *Env) DropRedis(ctx context.Context, id int64) {
	s := strconv.FormatInt(id, 10)
	keys := map[string]bool{}
	// One pattern for both kinds of tag ({s<id>:...} and {s<id>v...}), on
	// the masters only: a SCAN walks a node's whole keyspace, which a well
	// used dev stack makes long.
	nodes := e.C.Nodes()
	if top, err := stock.Topology(ctx, e.C); err == nil {
		nodes = map[string]rueidis.Client{}
		for _, m := range top.Masters {
			if n, ok := e.C.Nodes()[m.Addr]; ok {
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
		e.C.B().Del().Key(sharding.SaleKey(id)).Build(),
		e.C.B().Del().Key(sharding.ReshardKey(id)).Build(),
		e.C.B().Srem().Key(sharding.SalesKey).Member(s).Build(),
	}
	for k := range keys {
		cmds = append(cmds, e.C.B().Del().Key(k).Build())
	}
	e.C.DoMulti(ctx, cmds...)
}

// Shopper buys the way a gateway does: reserve on the user's home shard; on
// SOLD_OUT while the item has units on other shards, borrow one, reserved in
// the crediting script; on a frozen shard, reload the sale and retry.
type Shopper struct {
	st       *stock.Store
	sale     atomic.Pointer[sale.Sale]
	Tries    int           // reservation attempts before answering SOLD_OUT (default 8)
	Timeout  time.Duration // per Redis call (default 2 s)
	Borrowed atomic.Int64
	Borrows  atomic.Int64
	Frozen   atomic.Int64
	// SoldOutWithStock counts SOLD_OUT answers given while units remained.
	SoldOutWithStock atomic.Int64
}

// NewShopper returns a Shopper of sale on st, trying 8 times, 2 s a call.
func NewShopper(st *stock.Store, sale *sale.Sale) *Shopper {
	sh := &Shopper{st: st, Tries: 8, Timeout: 2 * time.Second}
	sh.sale.Store(sale)
	return sh
}

// Buy returns the final answer to one purchase click of user for item, the
// way the gateway's purchase does it: on SOLD_OUT, a reading of every shard
// with moves in flight (Available); sold out only when it is all zero; else
// one unit taken from a donor and reserved in the script that credits it.
func (sh *Shopper) Buy(ctx context.Context, item int64, user uint64) (stock.Result, error) {
	var credit stock.Credit
	var from string
	for try := 0; try < sh.Tries; {
		sale := sh.sale.Load()
		home := sharding.HomeShard(user, sale.ID, len(sale.Shards))
		now := time.Now()
		cctx, cancel := context.WithTimeout(ctx, sh.Timeout)
		r, err := sh.st.Reserve(cctx, stock.Reservation{Tag: sale.Shards[home], SaleID: sale.ID, ItemID: item, UserID: user, Attempt: rand.Uint64(),
			OrderID: sharding.NewOrderID(sale.ID, rand.Uint64(), rand.Uint32()),
			Created: now, Expires: now.Add(10 * time.Minute), TTL: 15 * time.Minute, Credit: credit})
		cancel()
		if err == nil && r.Outcome == stock.Frozen {
			sh.Frozen.Add(1)
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
			sh.Borrowed.Add(credit.Units)
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
		if tool.Sum(rem) == 0 {
			return r, nil // truly sold out
		}
		if try == sh.Tries {
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
		sh.Borrows.Add(1)
		if k > 0 {
			credit = stock.Credit{MoveID: id, Units: k}
		}
	}
	if rem, err := sh.st.Available(ctx, sh.sale.Load(), item); err == nil && tool.Sum(rem) > 0 {
		sh.SoldOutWithStock.Add(1)
	}
	return stock.Result{Outcome: stock.SoldOut}, nil
}

// Users returns n distinct random user ids.
func Users(n int) []uint64 {
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

// AllBuyers returns user -> (shard, order id) over the sale's shards, failing
// on a user recorded twice or off the home shard.
func (e *Env) AllBuyers(t testing.TB, sale *sale.Sale) map[uint64]sharding.OrderID {
	t.Helper()
	out := map[uint64]sharding.OrderID{}
	for i, tag := range sale.Shards {
		m, err := e.T.Store.Buyers(context.Background(), tag)
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

// Left returns the units of item left over sale's shards.
func (e *Env) Left(t testing.TB, sale *sale.Sale, item int64) int64 {
	t.Helper()
	rem, err := e.T.Store.Remaining(context.Background(), sale, item)
	if err != nil {
		t.Fatal(err)
	}
	return tool.Sum(rem)
}

// WriterLag returns a consumer group's lag reader (reconcile.ReconcileOptions.WriterLag)
// on a topic of its own in the stack's Kafka holding records uncommitted
// records (8 partitions, the group at offset 0 on each), with the group and topic names, for flashctl's flags.
func WriterLag(t testing.TB, records int) (lag func(context.Context) (int64, error), group, topic string) {
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
	group = "reconcile-" + strconv.FormatInt(RandomSaleID(), 36)
	offs := kadm.Offsets{}
	for p := int32(0); p < 8; p++ {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: 0, LeaderEpoch: -1})
	}
	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, group, offs); err != nil {
		t.Fatalf("committing the group's offsets: %v", err)
	}
	return func(ctx context.Context) (int64, error) { return journal.GroupLag(ctx, cl, group, topic) }, group, topic
}

// InsertOrder plays the writer: it persists one order row.
func (e *Env) InsertOrder(t testing.TB, sale int64, item int64, user uint64, id sharding.OrderID, status string, created time.Time) {
	t.Helper()
	_, err := e.Pool.Exec(context.Background(), `
		INSERT INTO orders (id, sale_id, item_id, user_id, status, created_at, expires_at)
		VALUES ($1::uuid, $2, $3, $4, $5, $6, $7)`, id.String(), sale, item, int64(user), status, created, created.Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
}

// SyncSold sets items.sold to the item's active orders, as the writer keeps it.
func (e *Env) SyncSold(t testing.TB, sale int64) {
	t.Helper()
	_, err := e.Pool.Exec(context.Background(), `
		UPDATE items i SET sold = (SELECT count(*) FROM orders o
			WHERE o.sale_id = i.sale_id AND o.item_id = i.id AND o.status IN ('PENDING', 'PAID'))
		WHERE i.sale_id = $1`, sale)
	if err != nil {
		t.Fatal(err)
	}
}

// AssertSettled checks Q = S + P for every item of sale, from Redis and
// PostgreSQL directly.
func (e *Env) AssertSettled(t testing.TB, saleID int64) {
	t.Helper()
	ctx := context.Background()
	sale, err := e.T.Store.LoadSale(ctx, saleID)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range sale.Items {
		var q, p int64
		err := e.Pool.QueryRow(ctx, `SELECT quantity, (SELECT count(*) FROM orders WHERE sale_id = $1 AND item_id = $2
			AND status IN ('PENDING', 'PAID')) FROM items WHERE id = $2`, saleID, it.ID).Scan(&q, &p)
		if err != nil {
			t.Fatal(err)
		}
		if s := e.Left(t, sale, it.ID); q != s+p {
			t.Fatalf("item %d: Q %d != S %d + P %d", it.ID, q, s, p)
		}
	}
}

// Must fails t on err.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Main is the signature of flashctl's ops.Main, which Run runs.
type Main func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, clear bool) int

// Run runs main, flashctl's ops.Main, on the stack with extra environment
// variables over the stack's addresses, and returns its exit code and what
// it wrote.
func Run(main Main, extra map[string]string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	env := map[string]string{
		"FLASHSALE_REDIS": strings.Join(testenv.RedisAddrs(), ","),
		"DATABASE_URL":    testenv.DatabaseURL(),
		"KAFKA_BROKERS":   strings.Join(testenv.KafkaBrokers(), ","),
	}
	for k, v := range extra {
		env[k] = v
	}
	code = main(context.Background(), args, func(k string) string { return env[k] }, &out, &errb, false)
	return code, out.String(), errb.String()
}
