package reconcile_test

import (
	"bytes"
	"context"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/ops"
	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/ops/reconcile"
	"flashsale/sharding/stock"
)

// TestFaultMasterKilledThenReconciled kills the master holding shard 0 while users
// buy, keeps buying through the failover, brings the node back, plays the
// writer (a PostgreSQL row for every reservation answered Reserved), and then
// checks that reconcile reports the damage and its repair leaves Q = S + P.
func TestFaultMasterKilledThenReconciled(t *testing.T) {
	e := opstest.NewEnv(t)
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("needs redis-cli")
	}
	ctx := context.Background()
	sale := e.NewSale(t, 6, 20000)
	item := sale.Items[0].ID
	top, err := stock.Topology(ctx, e.C)
	if err != nil {
		t.Fatal(err)
	}
	victim := top.MasterOfTag(sale.Shards[0])
	_, port, _ := strings.Cut(victim, ":")
	onVictim := map[int]bool{}
	for i, tag := range sale.Shards {
		onVictim[i] = top.MasterOfTag(tag) == victim
	}

	type win struct {
		user    uint64
		id      sharding.OrderID
		created time.Time
	}
	var (
		mu                     sync.Mutex
		wins                   []win
		errs, afterKill, calls atomic.Int64
		killed                 atomic.Bool
		next                   atomic.Uint64
	)
	sh := opstest.NewShopper(e.T.Store, sale)
	sh.Timeout, sh.Tries = 300*time.Millisecond, 2
	base := 1 + uint64(time.Now().UnixNano())%(1<<40)<<20
	shoppers := testenv.StartShoppers(t, 8, 3*time.Millisecond, func() bool {
		u := base + next.Add(1)
		calls.Add(1)
		r, err := sh.Buy(ctx, item, u)
		if err != nil {
			errs.Add(1)
			time.Sleep(17 * time.Millisecond) // 20 ms with the pause
			return true
		}
		if r.Outcome == stock.Reserved {
			mu.Lock()
			wins = append(wins, win{u, r.OrderID, time.Now()})
			mu.Unlock()
			if killed.Load() && onVictim[sharding.HomeShard(u, sale.ID, 6)] {
				afterKill.Add(1)
			}
		}
		return true
	})
	began := time.Now()
	time.Sleep(700 * time.Millisecond)
	t.Cleanup(func() { testenv.HealCluster(t, port) })
	// Replication is asynchronous: cut the master from its replica and keep
	// the replica from reconnecting (a masterauth the master refuses), so the
	// purchases of the next 150 ms live on the master alone; then crash it. The
	// promoted replica lacks them, as after a real crash under load.
	replica := testenv.ReplicaOf(port)
	redisCLI := func(port string, args ...string) {
		if out, err := exec.Command("redis-cli", append([]string{"-h", "127.0.0.1", "-p", port}, args...)...).CombinedOutput(); err != nil {
			t.Logf("redis-cli -p %s %v: %v %s", port, args, err, out)
		}
	}
	if replica != "" {
		t.Cleanup(func() { redisCLI(replica, "config", "set", "masterauth", "") })
		redisCLI(replica, "config", "set", "masterauth", "flashctl-test-cuts-replication")
		redisCLI(port, "client", "kill", "type", "replica")
		time.Sleep(150 * time.Millisecond)
	}
	if err := testenv.Stack(t, "redis-kill", port); err != nil {
		shoppers.Stop()
		t.Fatal("could not kill the master")
	}
	killed.Store(true)
	if replica != "" {
		redisCLI(replica, "config", "set", "masterauth", "")
	}
	killedAt := time.Now()
	for afterKill.Load() < 20 && time.Since(killedAt) < 12*time.Second {
		time.Sleep(50 * time.Millisecond)
	}
	recovered := time.Since(killedAt)
	time.Sleep(300 * time.Millisecond)
	shoppers.Stop()
	t.Logf("killed master %s (shards %v on it); purchases on it succeeded again after %v; %d purchase calls, %d errors, %d reserved, in %v",
		victim, onVictim, recovered.Round(10*time.Millisecond), calls.Load(), errs.Load(), len(wins), time.Since(began).Round(10*time.Millisecond))
	if afterKill.Load() == 0 {
		t.Fatal("no purchase on the failed-over master succeeded")
	}
	if err := testenv.Stack(t, "redis-start", port); err != nil {
		t.Fatal("could not restart the node")
	}

	// The writer: one row per reservation answered Reserved.
	ids := make([]string, len(wins))
	us := make([]int64, len(wins))
	ts := make([]time.Time, len(wins))
	for i, w := range wins {
		ids[i], us[i], ts[i] = w.id.String(), int64(w.user), w.created
	}
	_, err = e.Pool.Exec(ctx, `
		INSERT INTO orders (id, sale_id, item_id, user_id, status, created_at, expires_at)
		SELECT x.id::uuid, $1, $2, x.u, 'PENDING', x.t, x.t + interval '10 minutes'
		FROM unnest($3::text[], $4::bigint[], $5::timestamptz[]) AS x(id, u, t)`, sale.ID, item, ids, us, ts)
	if err != nil {
		t.Fatal(err)
	}
	e.SyncSold(t, sale.ID)

	var out, errOut bytes.Buffer
	args := []string{"--redis", strings.Join(testenv.RedisAddrs(), ","), "--database-url", testenv.DatabaseURL(),
		"reconcile", "--sale", strconv.FormatInt(sale.ID, 10), "--grace", "1ms"}
	code := ops.Main(ctx, args, func(string) string { return "" }, &out, &errOut, false)
	t.Logf("reconcile (no repair) exit %d:\n%s%s", code, out.String(), errOut.String())
	rep, err := reconcile.Reconcile(ctx, e.T, sale.ID, reconcile.ReconcileOptions{Grace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	drift := rep.Before.Items[0].Drift
	t.Logf("drift caused by the failover: %d units; findings: %s", drift, reconcile.CountKinds(rep.Before.Findings))
	if rep.Clean {
		t.Log("the failover lost nothing this time (the replica had every write)")
	}
	if (code == ops.ExitOK) != rep.Clean || (code != ops.ExitOK && code != ops.ExitFail) {
		t.Fatalf("exit code %d for a report with clean=%v", code, rep.Clean)
	}

	out.Reset()
	errOut.Reset()
	// The writers have persisted everything (no lag): the repair may release
	// what the failover orphaned.
	_, group, topic := opstest.WriterLag(t, 0)
	repair := append([]string{"--kafka-brokers", strings.Join(testenv.KafkaBrokers(), ",")}, args...)
	repair = append(repair, "--repair", "--writer-group", group, "--orders-topic", topic)
	code = ops.Main(ctx, repair, func(string) string { return "" }, &out, &errOut, false)
	t.Logf("reconcile --repair exit %d:\n%s%s", code, out.String(), errOut.String())
	if code != ops.ExitOK {
		t.Fatalf("reconcile --repair exit %d", code)
	}
	e.AssertSettled(t, sale.ID)
	if time.Since(began) > 30*time.Second {
		t.Logf("note: the run took %v", time.Since(began))
	}
}
