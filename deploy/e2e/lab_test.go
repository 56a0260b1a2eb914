package e2e_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"flashsale/deploy/lab"
	"flashsale/deploy/testenv"
	"flashsale/sharding/stock"
)

// labKinds are the faults of a lab run: the conditions of hosts on a
// network rather than processes on one machine.
var labKinds = []string{"latency-spike", "slow-link", "one-way-cut", "clock-bump", "clock-strobe", "gateway-pause"}

// labDefaultSeed is make test's lab run: its 40 s hold every lab kind, a
// latency spike, a one-way cut and a clock bump at least
// (TestLabDefaultPlan keeps them so).
const labDefaultSeed = 4

// TestLabChaos is the chaos run on the lab (deploy/lab): the same crowd,
// sale and checks as TestFaultChaos, on a Redis Cluster whose nodes, the
// gateways and the writers are hosts with links and clocks of their own,
// and faults of a network's: a latency spike on one link (50-800 ms, for
// seconds), a slow or jittery link with a bandwidth cap, a link cut one
// way, a clock bump of one host (a gateway, a master or a replica; 50 ms to
// 10 s either way), a clock strobe (a host's clock swinging back and forth),
// and a gateway paused (SIGSTOP, as a GC or VM pause) past its budgets.
// After the settle every invariant of TestFaultChaos is checked, and, per
// fault, the share of purchases answered 503 while it lasted and the
// seconds to full service after it (the report's table).
//
// make test runs it on labDefaultSeed for 40 s, among the tests of its
// first phase: it takes nothing of the stack's but PostgreSQL and Kafka,
// which it never faults (its own Redis Cluster, its own slot of the lab);
// make chaos LAB=1 runs it with the variables of make chaos (KINDS= from
// labKinds).
func TestLabChaos(t *testing.T) {
	need(t)
	cfg, err := chaosConfigWith(os.Getenv, chaosConfig{seed: labDefaultSeed, duration: 40 * time.Second, kinds: labKinds, rush: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lab seed %d (replay: make chaos LAB=1 SEED=%d DURATION=%v FAULTS=%d KINDS=%s)",
		cfg.seed, cfg.seed, cfg.duration, cfg.faults, strings.Join(cfg.kinds, ","))
	logs := filepath.Join(root, ".run", "artifacts", fmt.Sprintf("lab-%d-%s", cfg.seed, time.Now().UTC().Format("20060102T150405")))
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("E2E_LOG_DIR", logs)
	plan := planLab(rand.New(rand.NewPCG(cfg.seed, 1)), cfg)
	env := newLabEnv(t)
	for _, f := range plan {
		t.Logf("planned: %s", f)
	}
	start := time.Now()
	crowd := startChaosCrowd(env, cfg.seed, cfg.duration)
	if cfg.rush {
		env.crowd = crowd
	}
	done := runLabFaults(t, env, plan, start)
	crowd.wait()
	faults := <-done
	if err := env.lab.HealAll(); err != nil {
		t.Error(err)
	}
	for _, g := range env.gateways {
		_ = g.cmd.Process.Signal(syscall.SIGCONT)
		g.waitReady(t, 60*time.Second)
	}
	rep := checkChaos(t, env, crowd)
	rep.faults = faults
	rep.elapsed = time.Since(start)
	t.Log("\n" + rep.String(cfg) + labAvailability(faults, crowd, start))
	for _, v := range rep.violations {
		t.Error(v)
	}
}

// newLabEnv is newChaosEnv on the lab: six Redis nodes, two gateways and
// two writers, each a host, every one linked to what it reaches; the
// stack's PostgreSQL and Kafka broker behind links of their own.
func newLabEnv(t *testing.T) *chaosEnv {
	t.Helper()
	l := lab.New(t)
	cl := l.StartRedis(6, labRedisBase)
	e := &chaosEnv{topic: "e2e-lab-" + randHex(), lab: l, redis: cl.Addrs()}
	e.kafka = newChaosKafka(t, false, e.topic)
	e.pool = testenv.NewPool(t)
	pgp, err := pgPort()
	if err != nil {
		t.Fatal(err)
	}
	pgn, _ := strconv.Atoi(pgp)
	kafka := l.Host("kafka")
	var kafkaEnds []lab.Endpoint
	for _, b := range e.kafka.brokers {
		_, p, _ := strings.Cut(b, ":")
		n, _ := strconv.Atoi(p)
		kafkaEnds = append(kafkaEnds, lab.Endpoint{Host: kafka, Port: n})
	}
	pg := lab.Endpoint{Host: l.Host("postgres"), Port: pgn}
	t.Setenv("FLASHSALE_CLOCK_OFFSET", "0s") // every process's clock knob
	redis := strings.Join(cl.Addrs(), ",")
	brokers := strings.Join(e.kafka.brokers, ",")
	id := newSaleID()
	items := chaosItems(id)
	e.sale = createSaleWith(t, chaosUnits, chaosShards, -time.Second, map[string]any{"id": id, "paymentWindow": "10s", "items": items, "redis": cl.Addrs()})
	for _, it := range items {
		e.items = append(e.items, it["id"].(int64))
	}
	sid := strconv.FormatInt(e.sale.ID, 10)
	for k := range e.writers {
		h := l.Host(fmt.Sprintf("writer-%d", k))
		l.Connect(h, append(append(cl.Endpoints(), kafkaEnds...), pg)...)
		admin := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		h.Admin = admin
		e.wargs[k] = []string{"run", "-topic", e.topic, "-dlq-topic", e.topic + ".dlq", "-group", e.topic + "-writers",
			"-sales", sid, "-admin", admin, "-kafka-brokers", brokers, "-redis", redis, "-batch-size", "4"}
		e.wgids[k] = h.Gid
		e.writers[k] = startAs(t, h.Gid, fmt.Sprintf("writer %d", k), e.wargs[k]...)
	}
	for k := range e.gateways {
		h := l.Host(fmt.Sprintf("gateway-%d", k))
		l.Connect(h, append(cl.Endpoints(), kafkaEnds...)...)
		g := &gateway{addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), admin: fmt.Sprintf("127.0.0.1:%d", freePort(t)), gid: h.Gid}
		h.Admin = g.admin
		g.args = []string{"-listen", g.addr, "-admin", g.admin, "-topic", e.topic, "-jwt-secret", secret,
			"-trusted-proxies", "127.0.0.0/8", "-relay-sales", sid, "-kafka-brokers", brokers, "-redis", redis}
		g.proc = startAs(t, g.gid, "gateway "+g.addr, g.args...)
		e.gateways[k] = g
		e.labHosts[k] = h
	}
	for _, g := range e.gateways {
		g.waitReady(t, 60*time.Second)
	}
	return e
}

// labRedisBase is the first port of the lab's Redis nodes (beside the
// stack's 7001-7006).
const labRedisBase = 7201

// planLab draws a lab run's schedule from rng, as planFaults draws a
// chaos run's: each fault with its target (a link, a host, a gateway) and
// how long it lasts.
func planLab(rng *rand.Rand, cfg chaosConfig) []*fault {
	var out []*fault
	busy := map[string]time.Duration{}
	between := func(lo, hi float64) time.Duration {
		return time.Duration((lo + rng.Float64()*(hi-lo)) * float64(time.Second))
	}
	for at := 2 * time.Second; len(out) < cfg.faults && len(cfg.kinds) > 0; {
		at += between(1.5, 4)
		if at > cfg.duration-4*time.Second {
			break
		}
		f := &fault{kind: cfg.kinds[rng.IntN(len(cfg.kinds))], target: rng.IntN(2), shard: rng.IntN(chaosShards)}
		switch f.kind {
		case "latency-spike":
			f.link, f.hold = rng.IntN(4), between(1, 5)
			f.delay = time.Duration(50+rng.IntN(750)) * time.Millisecond
		case "slow-link":
			f.link, f.hold = rng.IntN(4), between(3, 8)
			f.delay = time.Duration(2+rng.IntN(18)) * time.Millisecond
		case "one-way-cut":
			f.link, f.hold = rng.IntN(4), between(2, 6)
			f.down = rng.IntN(2) == 0
		case "clock-bump", "clock-strobe":
			f.link, f.hold = rng.IntN(3), between(3, 10) // 0: a gateway, 1: a master, 2: a replica
			// 50 ms to 10 s, log-uniform, either way.
			f.delay = time.Duration(math.Exp(math.Log(0.05)+rng.Float64()*(math.Log(10)-math.Log(0.05))) * float64(time.Second))
			if rng.IntN(2) == 0 {
				f.delay = -f.delay
			}
		case "gateway-pause":
			f.hold = between(0.5, 3)
		}
		f.at = at
		for _, c := range f.labClasses() {
			f.at = max(f.at, busy[c])
		}
		if f.at > cfg.duration-3*time.Second {
			continue
		}
		for _, c := range f.labClasses() {
			busy[c] = f.at + f.hold + f.rest()
		}
		out = append(out, f)
	}
	slices.SortStableFunc(out, func(a, b *fault) int { return int(a.at - b.at) })
	return out
}

// labClasses are the resources a lab fault takes: one link's or host's
// faults do not overlap, nor a gateway's pause and its links.
func (f *fault) labClasses() []string {
	switch f.kind {
	case "latency-spike", "slow-link", "one-way-cut":
		return []string{fmt.Sprintf("link-%d-%d-%d", f.link, f.target, f.shard)}
	case "clock-bump", "clock-strobe":
		return []string{fmt.Sprintf("clock-%d-%d-%d", f.link, f.target, f.shard)}
	case "gateway-pause":
		return []string{fmt.Sprintf("gateway-%d", f.target)}
	}
	return []string{f.kind}
}

// runLabFaults is runFaults for a lab plan.
func runLabFaults(t *testing.T, e *chaosEnv, plan []*fault, start time.Time) <-chan []*fault {
	done := make(chan []*fault, 1)
	go func() {
		var wg sync.WaitGroup
		for _, f := range plan {
			wg.Go(func() {
				time.Sleep(time.Until(start.Add(f.at)))
				if f.err = e.labInject(t, f); f.err != nil {
					return
				}
				f.injected = time.Since(start)
				time.Sleep(f.hold)
				f.err = e.labHeal(f)
				f.healed = time.Since(start)
			})
		}
		wg.Wait()
		done <- plan
	}()
	return done
}

// labLink resolves a link fault's link as the layout is now: 0 a gateway
// to the master of a shard, 1 that master's replica to it, 2 a gateway to
// the Kafka broker, 3 a writer to PostgreSQL.
func (e *chaosEnv) labLink(f *fault) (*lab.Link, error) {
	l := e.lab
	switch f.link {
	case 0, 1:
		port, err := e.masterOf(f.shard)
		if err != nil {
			return nil, err
		}
		n, _ := strconv.Atoi(port)
		m := l.Redis.Node(n)
		if m == nil {
			return nil, fmt.Errorf("no lab node on %s", port)
		}
		to := lab.Endpoint{Host: m.Host, Port: m.Port}
		if f.link == 0 {
			return l.Link(e.labHosts[f.target], to), nil
		}
		r := l.Redis.Node(atoi(testenv.ReplicaOf(port)))
		if r == nil {
			return nil, fmt.Errorf("master %s has no replica now", port)
		}
		return l.Link(r.Host, to), nil
	case 2:
		for _, k := range l.Links(e.labHosts[f.target], nil) {
			if k.To.Host.Name == "kafka" {
				return k, nil
			}
		}
	case 3:
		for _, h := range l.Hosts() {
			if h.Gid == e.wgids[f.target] {
				for _, k := range l.Links(h, nil) {
					if k.To.Host.Name == "postgres" {
						return k, nil
					}
				}
			}
		}
	}
	return nil, fmt.Errorf("no link of kind %d", f.link)
}

// labHost resolves a clock fault's host: 0 a gateway, 1 the master of a
// shard, 2 its replica.
func (e *chaosEnv) labHost(f *fault) (*lab.Host, error) {
	if f.link == 0 {
		return e.labHosts[f.target], nil
	}
	port, err := e.masterOf(f.shard)
	if err != nil {
		return nil, err
	}
	if f.link == 2 {
		port = testenv.ReplicaOf(port)
	}
	n := e.lab.Redis.Node(atoi(port))
	if n == nil {
		return nil, fmt.Errorf("no lab node on %q", port)
	}
	return n.Host, nil
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// labInject strikes f.
func (e *chaosEnv) labInject(t *testing.T, f *fault) error {
	switch f.kind {
	case "latency-spike", "slow-link", "one-way-cut":
		k, err := e.labLink(f)
		if err != nil || k == nil {
			return fmt.Errorf("link: %v", err)
		}
		f.node = k.String()
		switch f.kind {
		case "latency-spike":
			return k.Delay(f.delay, 0)
		case "slow-link":
			if err := k.Delay(f.delay, f.delay/2); err != nil {
				return err
			}
			return k.Bandwidth(256)
		}
		dir := lab.Up
		if f.down {
			dir = lab.Down
		}
		f.node += " " + string(dir)
		if f.link == 0 {
			e.rushTo(f.target)
		}
		return k.Cut(dir)
	case "clock-bump", "clock-strobe":
		h, err := e.labHost(f)
		if err != nil {
			return err
		}
		f.node = h.Name
		if f.kind == "clock-bump" {
			return h.SetClock(f.delay)
		}
		f.stop = make(chan struct{})
		go strobe(h, f.delay, f.stop)
		return nil
	case "gateway-pause":
		e.rushTo(f.target)
		return e.gateways[f.target].cmd.Process.Signal(syscall.SIGSTOP)
	}
	return fmt.Errorf("unknown lab fault %q", f.kind)
}

// strobe swings h's clock between d and -d every 300 ms until stop.
func strobe(h *lab.Host, d time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(300 * time.Millisecond)
	defer t.Stop()
	for sign := time.Duration(1); ; sign = -sign {
		_ = h.SetClock(sign * d)
		select {
		case <-stop:
			_ = h.SetClock(0)
			return
		case <-t.C:
		}
	}
}

// labHeal ends f.
func (e *chaosEnv) labHeal(f *fault) error {
	switch f.kind {
	case "latency-spike", "slow-link", "one-way-cut":
		k, err := e.labLink(f)
		if err != nil || k == nil {
			// The layout moved (a failover): heal every link.
			return e.lab.HealAll()
		}
		return k.Heal()
	case "clock-bump":
		h, err := e.labHost(f)
		if err != nil {
			return err
		}
		if h.Name != f.node { // a failover moved the shard: the bumped host is another
			for _, x := range e.lab.Hosts() {
				if x.Name == f.node {
					h = x
				}
			}
		}
		return h.SetClock(0)
	case "clock-strobe":
		close(f.stop)
		return nil
	case "gateway-pause":
		return e.gateways[f.target].cmd.Process.Signal(syscall.SIGCONT)
	}
	return nil
}

// labAvailability tabulates, per fault, the purchases sent while it lasted,
// the share answered 503, and how long after it healed the last 503 came
// (within 15 s): the service the design lost to it.
func labAvailability(faults []*fault, c *chaosCrowd, start time.Time) string {
	var all []answer
	c.mu.Lock()
	for _, b := range c.buyers {
		all = append(all, b.attempts...)
	}
	c.mu.Unlock()
	var b strings.Builder
	b.WriteString("availability per fault (purchases sent while it lasted, answered 503, last 503 after it healed):\n")
	for _, f := range faults {
		if f.injected == 0 || f.healed == 0 {
			fmt.Fprintf(&b, "  %s: not run\n", f)
			continue
		}
		from, to := start.Add(f.injected), start.Add(f.healed)
		n, n503 := 0, 0
		var last time.Duration
		for _, a := range all {
			if a.sent.IsZero() {
				continue
			}
			if !a.sent.Before(from) && a.sent.Before(to) {
				n++
				if a.status == 503 {
					n503++
				}
			}
			if a.status == 503 && !a.sent.Before(to) && a.sent.Before(to.Add(15*time.Second)) {
				last = max(last, a.sent.Sub(to))
			}
		}
		share := 0.0
		if n > 0 {
			share = 100 * float64(n503) / float64(n)
		}
		fmt.Fprintf(&b, "  %-70s %5d sent, %5.1f%% 503, last 503 %4.1fs after\n", f.String(), n, share, last.Seconds())
	}
	return b.String()
}

// The stock package is read through chaosEnv's client; keep the import used
// by the helpers above even if they change.
var _ = stock.New
