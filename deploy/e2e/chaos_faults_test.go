package e2e_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"flashsale/deploy/testenv"
	"flashsale/sharding/stock"
)

// chaosKinds are the faults a chaos run draws from.
var chaosKinds = []string{
	"gateway-kill", "writer-kill", "broker-stop", "master-freeze", "master-kill", "replica-kill",
	"pg-restart", "pause", "reshard", "partition-gateway", "partition-writer",
	"leader-failover", "reshard-kafka-down", "partitions-grow",
}

// fault is one planned fault and, once run, what became of it.
type fault struct {
	at     time.Duration // planned, after the start
	kind   string
	target int           // gateway or writer index; shard index for Redis faults
	shard  int           // partition-gateway: the shard whose master is cut off
	hold   time.Duration // from the injection to the heal
	shards int           // reshard: the new shard count
	// The lab's (TestLabChaos): which link or host, the delay or clock
	// offset, the cut's way, and a strobe's stop.
	link  int
	delay time.Duration
	down  bool
	stop  chan struct{}

	injected, healed time.Duration // after the start; 0 when not done
	node             string        // the Redis node or port it struck, once known
	err              error         // why it could not be injected or healed
}

func (f *fault) String() string {
	s := fmt.Sprintf("%6.1fs %-17s", f.at.Seconds(), f.kind)
	switch f.kind {
	case "gateway-kill", "writer-kill", "partition-writer":
		s += fmt.Sprintf(" #%d", f.target)
	case "partition-gateway":
		s += fmt.Sprintf(" #%d from shard %d's master", f.target, f.shard)
	case "master-freeze", "master-kill", "replica-kill":
		s += fmt.Sprintf(" shard %d", f.target)
	case "reshard", "reshard-kafka-down":
		s += fmt.Sprintf(" to %d shards", f.shards)
	case "leader-failover":
		s += fmt.Sprintf(" of item %d's partition", f.target)
	case "latency-spike", "slow-link", "clock-bump", "clock-strobe":
		s += fmt.Sprintf(" %v", f.delay)
	}
	if f.hold > 0 {
		s += fmt.Sprintf(" for %.1fs", f.hold.Seconds())
	}
	if f.node != "" {
		s += " [" + f.node + "]"
	}
	if f.injected > 0 {
		s += fmt.Sprintf(" (in %.1fs", f.injected.Seconds())
		if f.healed > 0 {
			s += fmt.Sprintf(", healed %.1fs", f.healed.Seconds())
		}
		s += ")"
	}
	if f.err != nil {
		s += " FAILED: " + f.err.Error()
	}
	return s
}

// classes are the resources a fault takes: faults of one class do not
// overlap (a node is not frozen while killed), faults of different ones do.
// A gateway's kill and its partition are one class: a gateway killed while
// cut off, with voids still queued, is the one case the fence leaves open
// (sharding/journal/DESIGN.md, "The fence"), which no run can pass. A
// reshard during a Kafka outage restarts both gateways, so it takes theirs.
func (f *fault) classes() []string {
	switch f.kind {
	case "gateway-kill", "partition-gateway":
		return []string{fmt.Sprintf("gateway-%d", f.target)}
	case "writer-kill", "partition-writer":
		return []string{fmt.Sprintf("writer-%d", f.target)}
	case "master-freeze", "master-kill", "replica-kill":
		return []string{"redis"}
	case "pause", "reshard":
		return []string{"sale"}
	case "reshard-kafka-down":
		return []string{"kafka", "gateway-0", "gateway-1"}
	case "broker-stop", "leader-failover", "partitions-grow":
		// Kafka's: a broker stopped while a leader fails over, or two
		// stops at once, would heal each other.
		return []string{"kafka"}
	}
	return []string{f.kind}
}

// rest is how long the resource of f is left alone after f healed, before
// the next fault of its class strikes: a second, but for a gateway cut off
// from a master. Its voids land only once its connection is back, after
// TCP's retransmission backoff (seconds after a cut of a few): killed
// before, it takes them along, the case the fence leaves open. A seeded
// run (528248) killed a gateway 0.5 s after its cut healed, and a buyer it
// had told 503 held an order.
func (f *fault) rest() time.Duration {
	if f.kind == "partition-gateway" {
		return gatewayVoidsLand
	}
	return time.Second
}

// gatewayVoidsLand is how long after a gateway's cut healed its queued voids
// are given to land before it may be killed.
const gatewayVoidsLand = 6 * time.Second

// planFaults draws the run's schedule from rng: a fault every 1.5-5 s from
// 2 s in to 4 s before the end, at most cfg.faults, each of a kind drawn
// from cfg.kinds with its target and how long it lasts, moved later while
// its class is busy.
func planFaults(rng *rand.Rand, cfg chaosConfig) []*fault {
	var out []*fault
	busy := map[string]time.Duration{}
	between := func(lo, hi float64) time.Duration {
		return time.Duration((lo + rng.Float64()*(hi-lo)) * float64(time.Second))
	}
	for at := 2 * time.Second; len(out) < cfg.faults && len(cfg.kinds) > 0; {
		at += between(1.5, 5)
		if at > cfg.duration-4*time.Second {
			break
		}
		f := &fault{kind: cfg.kinds[rng.IntN(len(cfg.kinds))], target: rng.IntN(2), shard: rng.IntN(chaosShards)}
		switch f.kind {
		case "gateway-kill":
			f.hold = between(0.5, 3)
		case "writer-kill":
			f.hold = between(1, 5)
		case "broker-stop":
			f.hold = between(3, 10)
		case "master-freeze":
			f.target, f.hold = f.shard, between(1, 6) // past 2-3 s its replica takes over
		case "master-kill":
			f.target, f.hold = f.shard, between(4, 8)
		case "replica-kill":
			f.target, f.hold = f.shard, between(2, 6)
		case "pause":
			f.hold = between(1, 4)
		case "reshard":
			f.shards = 3 + rng.IntN(4)
		case "partition-gateway", "partition-writer":
			f.hold = between(2, 8)
		case "leader-failover":
			// Past the relay's produce deadline (half its lease, 1.5 s):
			// franz-go gives the partition's records up while the other
			// partitions of the round take theirs.
			f.target, f.hold = rng.IntN(len(chaosItemUnits)), between(2, 6)
		case "partitions-grow":
			f.hold = 10 * time.Second // the clients' metadata age: the move happens within it
		case "reshard-kafka-down":
			// Kafka stops, the relays take entries they cannot produce,
			// the sale is resharded, Kafka comes back.
			f.shards, f.hold = 3+rng.IntN(4), between(5, 9)
		}
		f.at = at
		for _, c := range f.classes() {
			f.at = max(f.at, busy[c])
		}
		if f.at > cfg.duration-3*time.Second {
			continue
		}
		for _, c := range f.classes() {
			busy[c] = f.at + f.hold + f.rest()
		}
		out = append(out, f)
	}
	slices.SortStableFunc(out, func(a, b *fault) int { return int(a.at - b.at) })
	return out
}

// runFaults runs the plan in the background, each fault at its time but
// not before the fault of its class before it has healed and rested (a
// broker's start can take longer than planned), and sends the faults with
// their outcomes once all are healed.
func runFaults(t *testing.T, e *chaosEnv, plan []*fault, start time.Time) <-chan []*fault {
	done := make(chan []*fault, 1)
	go func() {
		var wg sync.WaitGroup
		type held struct {
			f      *fault
			healed chan struct{}
		}
		last := map[string]held{} // each class's fault before, its channel closed when healed
		for _, f := range plan {
			var prevs []held
			healed := make(chan struct{})
			for _, c := range f.classes() {
				if p := last[c]; p.f != nil {
					prevs = append(prevs, p)
				}
				last[c] = held{f, healed}
			}
			wg.Go(func() {
				defer close(healed)
				time.Sleep(time.Until(start.Add(f.at)))
				for _, prev := range prevs {
					<-prev.healed
					// The rest after it, from when it healed (its heal
					// may have come later than planned).
					time.Sleep(time.Until(start.Add(prev.f.healed + prev.f.rest())))
				}
				if f.err = e.inject(t, f); f.err != nil {
					return
				}
				f.injected = time.Since(start)
				if f.hold == 0 {
					return
				}
				time.Sleep(f.hold)
				f.err = e.heal(t, f)
				f.healed = time.Since(start)
			})
		}
		wg.Wait()
		done <- plan
	}()
	return done
}

// inject strikes f.
func (e *chaosEnv) inject(t *testing.T, f *fault) error {
	switch f.kind {
	case "gateway-kill":
		g := e.gateways[f.target]
		_ = g.cmd.Process.Kill()
		<-g.done
		return nil
	case "writer-kill":
		w := e.writers[f.target]
		_ = w.cmd.Process.Kill()
		<-w.done
		return nil
	case "broker-stop":
		return e.kafka.stop(t)
	case "leader-failover":
		p := e.kafka.partition(e.items[f.target])
		f.node = fmt.Sprintf("partition %d", p)
		return e.kafka.failLeader(e.topic, p)
	case "reshard-kafka-down":
		if err := e.kafka.stop(t); err != nil {
			return err
		}
		// Past the relay's hold and the fence's beat: the relays take
		// entries they cannot produce, and the reshard copies them.
		time.Sleep(2500 * time.Millisecond)
		if err := e.reshard(f); err != nil {
			return err
		}
		// The gateways restart during the outage (a deploy, a crash): the
		// records their relays had taken and not produced are gone with
		// them, and the copies on the new shards are the orders' only way
		// to PostgreSQL.
		for _, g := range e.gateways {
			_ = g.cmd.Process.Kill()
			<-g.done
			g.restart(t)
		}
		return nil
	case "pg-restart":
		return testenv.Stack(t, "pg-restart")
	case "partitions-grow":
		// An operator adds partitions to the orders topic mid-sale: an
		// item's records move to another partition once the clients read
		// the topic again, and the writers may take the new partition's
		// before the old one's last (an item's chain then breaks for a
		// moment: no watermark may cover what has not arrived).
		n, err := e.kafka.grow(t, e.topic, chaosPartitions)
		f.node = fmt.Sprintf("to %d partitions", n)
		return err
	case "master-freeze":
		e.rushAll()
		return e.redisFault(t, f)
	case "master-kill", "replica-kill":
		return e.redisFault(t, f)
	case "pause":
		return e.flashctl("sale", "pause", "--sale", strconv.FormatInt(e.sale.ID, 10))
	case "reshard":
		return e.reshard(f)
	case "partition-gateway":
		port, err := e.masterOf(f.shard)
		if err != nil {
			return err
		}
		e.rushTo(f.target)
		return e.cut(f, e.gateways[f.target].gid, func() (string, error) { return port, nil })
	case "partition-writer":
		return e.cut(f, gidWriter0+uint32(f.target), pgPort)
	}
	return fmt.Errorf("unknown fault kind %q", f.kind)
}

// heal ends f.
func (e *chaosEnv) heal(t *testing.T, f *fault) error {
	switch f.kind {
	case "gateway-kill":
		e.gateways[f.target].restart(t)
		return nil
	case "writer-kill":
		e.writers[f.target] = startAs(t, gidWriter0+uint32(f.target), fmt.Sprintf("writer %d again", f.target), e.wargs[f.target]...)
		return nil
	case "broker-stop", "reshard-kafka-down":
		return e.kafka.start(t)
	case "leader-failover":
		return e.kafka.moveLeader(e.topic, e.kafka.partition(e.items[f.target]))
	case "partitions-grow":
		return nil
	case "master-freeze":
		return testenv.Stack(t, "redis-thaw", f.node)
	case "master-kill", "replica-kill":
		return testenv.Stack(t, "redis-start", f.node)
	case "pause":
		return e.flashctl("sale", "resume", "--sale", strconv.FormatInt(e.sale.ID, 10))
	case "partition-gateway", "partition-writer":
		port, _ := strconv.Atoi(f.node)
		gid := uint32(gidWriter0 + f.target)
		if f.kind == "partition-gateway" {
			gid = e.gateways[f.target].gid
		}
		return e.parts.Heal(gid, port)
	}
	return nil
}

// rushTo sends a rush of buyers to gateway g and gives their requests a
// moment to leave, so that the fault struck next meets them in flight.
func (e *chaosEnv) rushTo(g int) {
	if e.crowd != nil {
		e.crowd.rush(g)
		time.Sleep(3 * time.Millisecond)
	}
}

// rushAll sends a rush to each gateway.
func (e *chaosEnv) rushAll() {
	if e.crowd != nil {
		e.crowd.rush(0)
		e.crowd.rush(1)
		time.Sleep(3 * time.Millisecond)
	}
}

// redisFault freezes or kills the master of shard f.target, or kills its
// replica, as the layout is when it strikes (a reshard or a failover may
// have moved it).
func (e *chaosEnv) redisFault(t *testing.T, f *fault) error {
	port, err := e.masterOf(f.target)
	if err != nil {
		return err
	}
	f.node = port
	switch f.kind {
	case "master-freeze":
		return testenv.Stack(t, "redis-freeze", port)
	case "master-kill":
		return testenv.Stack(t, "redis-kill", port)
	}
	if f.node = testenv.ReplicaOf(port); f.node == "" {
		return fmt.Errorf("master %s has no replica now", port)
	}
	return testenv.Stack(t, "redis-kill", f.node)
}

// reshard changes the sale's shard count to f.shards, or one more when it
// has that count already (an earlier reshard of the run set it).
func (e *chaosEnv) reshard(f *fault) error {
	c, err := testenv.NewRedisClientOn(e.redisAddrs())
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := stock.New(c).LoadSale(context.Background(), e.sale.ID)
	if err != nil {
		return err
	}
	if len(s.Shards) == f.shards {
		f.shards++
	}
	f.node = fmt.Sprintf("%d to %d", len(s.Shards), f.shards)
	return e.flashctl("reshard", "--sale", strconv.FormatInt(e.sale.ID, 10), "--shards", strconv.Itoa(f.shards))
}

// cut partitions the process of gid from the port resolve names.
func (e *chaosEnv) cut(f *fault, gid uint32, resolve func() (string, error)) error {
	if e.parts == nil {
		return fmt.Errorf("no partitions on this machine (needs root and iptables)")
	}
	port, err := resolve()
	if err != nil {
		return err
	}
	f.node = port
	n, _ := strconv.Atoi(port)
	return e.parts.Cut(gid, n)
}

// masterOf returns the port of the master serving the sale's shard i (i mod
// the shard count) now.
func (e *chaosEnv) masterOf(i int) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := testenv.NewRedisClientOn(e.redisAddrs())
	if err != nil {
		return "", err
	}
	defer c.Close()
	rs := stock.New(c)
	s, err := rs.LoadSale(ctx, e.sale.ID)
	if err != nil {
		return "", err
	}
	top, err := stock.Topology(ctx, c)
	if err != nil {
		return "", err
	}
	_, port, _ := strings.Cut(top.MasterOfTag(s.Shards[i%len(s.Shards)]), ":")
	if port == "" {
		return "", fmt.Errorf("no master serves shard %d", i)
	}
	return port, nil
}

func pgPort() (string, error) {
	u, err := url.Parse(testenv.DatabaseURL())
	if err != nil || u.Port() == "" {
		return "", fmt.Errorf("PostgreSQL port of %q: %v", testenv.DatabaseURL(), err)
	}
	return u.Port(), nil
}

// flashctl runs the ops tool against the stack.
func (e *chaosEnv) flashctl(args ...string) error {
	out, err := exec.Command(filepath.Join(binDir, "flashctl"), append([]string{"--database-url", testenv.DatabaseURL(),
		"--redis", strings.Join(e.redisAddrs(), ",")}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("flashctl %s: %v: %s", strings.Join(args, " "), err, lastLine(out))
	}
	return nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// healAll ends whatever a fault left behind, as an operator would after an
// incident: the network, every node running and thawed with its original
// role, the broker up, the sale resumed and any reshard finished, every
// process running and ready.
func (e *chaosEnv) healAll(t *testing.T) {
	t.Helper()
	if e.parts != nil {
		e.parts.Close()
	}
	for _, port := range []string{"7001", "7002", "7003", "7004", "7005", "7006"} {
		_ = testenv.Stack(t, "redis-thaw", port)
		if testenv.Role(port) == "" {
			_ = testenv.Stack(t, "redis-start", port)
		}
	}
	for _, port := range []string{"7001", "7002", "7003"} {
		testenv.HealCluster(t, port)
	}
	e.kafka.healAll(t, e.topic)
	// The reshard first: a sale with a reshard pending refuses a resume
	// (seed 725254: a reshard that met a master being failed over stopped
	// half-way, and 20 resumes were refused before it was finished).
	e.finishReshard(t)
	id := strconv.FormatInt(e.sale.ID, 10)
	for try := 0; ; try++ {
		err := e.flashctl("sale", "resume", "--sale", id)
		if err == nil || try == 20 {
			if err != nil {
				t.Errorf("could not resume the sale: %v", err)
			}
			break
		}
		time.Sleep(time.Second)
	}
	for k, w := range e.writers {
		select {
		case <-w.done:
			e.writers[k] = startAs(t, gidWriter0+uint32(k), fmt.Sprintf("writer %d at the heal", k), e.wargs[k]...)
		default:
		}
	}
	for _, g := range e.gateways {
		select {
		case <-g.done:
			g.restart(t)
		default:
		}
		g.waitReady(t, 60*time.Second)
	}
}

// finishReshard completes a reshard a fault interrupted (flashctl reshard
// resumes one with the same command), so that no shard stays frozen.
func (e *chaosEnv) finishReshard(t *testing.T) {
	t.Helper()
	c, err := testenv.NewRedisClientOn(e.redisAddrs())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rs := stock.New(c)
	for try := 0; try < 20; try++ {
		p, err := rs.PendingReshard(context.Background(), e.sale.ID)
		if err == nil && p == nil {
			return
		}
		if err == nil {
			err = e.flashctl("reshard", "--sale", strconv.FormatInt(e.sale.ID, 10), "--shards", strconv.Itoa(p.To))
		}
		if err != nil {
			t.Logf("finishing a reshard: %v", err)
		}
		time.Sleep(time.Second)
	}
	t.Errorf("a reshard of sale %d is still pending", e.sale.ID)
}
