package e2e_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"flashsale/deploy/testenv"
)

// TestLabSkewedFailover is a measurement (make lab-skew,
// FLASHSALE_LAB_SKEW=1): a master fails over to a replica whose clock is
// off by each skew of FLASHSALE_LAB_SKEWS (0,2s,-2s), under the chaos run's
// crowd on the lab. Entry ids, fence marks and the relay's hold are stamped
// and read by a master's clock, which becomes another host's at a failover
// (sharding/journal/DESIGN.md, "Clocks"). The replica's clock is set 3 s in,
// the master SIGKILLed 2 s later, and brought back (as a replica) 7 s after
// that; then every invariant of the chaos run is checked and the purchases
// answered 503 from the kill to 8 s after it are counted.
func TestLabSkewedFailover(t *testing.T) {
	if os.Getenv("FLASHSALE_LAB_SKEW") == "" {
		t.Skip("a measurement: FLASHSALE_LAB_SKEW=1 (make lab-skew)")
	}
	need(t)
	skews, err := durations(envOr("FLASHSALE_LAB_SKEWS", "0,2s,-2s"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, skew := range skews {
		t.Run(skew.String(), func(t *testing.T) {
			rows = append(rows, skewedFailover(t, skew))
		})
	}
	t.Log("\n| replica's clock | purchases from the kill to 8 s after | answered 503 | last 503 after the kill | promises |\n|---|---|---|---|---|\n" +
		strings.Join(rows, "\n"))
}

func skewedFailover(t *testing.T, skew time.Duration) string {
	env := newLabEnv(t)
	port, err := env.masterOf(0)
	if err != nil {
		t.Fatal(err)
	}
	master := env.lab.Redis.Node(atoi(port))
	replica := env.lab.Redis.Node(atoi(replicaPort(port)))
	if master == nil || replica == nil {
		t.Fatalf("no lab master and replica for shard 0 (%s)", port)
	}
	start := time.Now()
	crowd := startChaosCrowd(env, uint64(1000+skew.Milliseconds()), 16*time.Second)
	time.Sleep(3 * time.Second)
	if err := replica.Host.SetClock(skew); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	killed := time.Now()
	master.Kill()
	time.Sleep(7 * time.Second)
	if err := master.Start(); err != nil {
		t.Fatal(err)
	}
	crowd.wait()
	if err := env.lab.HealAll(); err != nil {
		t.Error(err)
	}
	for _, g := range env.gateways {
		_ = g.cmd.Process.Signal(syscall.SIGCONT)
		g.waitReady(t, 60*time.Second)
	}
	rep := checkChaos(t, env, crowd)
	rep.elapsed = time.Since(start)
	t.Log("\n" + rep.String(chaosConfig{duration: 16 * time.Second}))
	for _, v := range rep.violations {
		t.Error(v)
	}
	n, n503, last := window(crowd, killed, killed.Add(8*time.Second))
	promises := "held"
	if len(rep.violations) > 0 {
		promises = fmt.Sprintf("**%d broken**", len(rep.violations))
	}
	return fmt.Sprintf("| %v | %d | %.1f %% | %.1f s | %s |", skew, n, 100*float64(n503)/float64(max(n, 1)), last.Seconds(), promises)
}

// replicaPort returns the port of the replica of the master on port.
func replicaPort(port string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if r := testenv.ReplicaOf(port); r != "" {
			return r
		}
		time.Sleep(100 * time.Millisecond)
	}
	return ""
}

// window counts the purchases sent in [from, to), those answered 503, and
// the last 503 among them after from.
func window(c *chaosCrowd, from, to time.Time) (n, n503 int, last time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.buyers {
		for _, a := range b.attempts {
			if a.sent.IsZero() || a.sent.Before(from) || !a.sent.Before(to) {
				continue
			}
			n++
			if a.status == 503 {
				n503++
				last = max(last, a.sent.Sub(from))
			}
		}
	}
	return n, n503, last
}
