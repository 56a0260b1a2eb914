package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"flashsale/deploy/testenv"
	"flashsale/sharding/journal"
	"flashsale/sharding/stock"
)

// The lab's parts on a real cluster: a connection a host opens to a node
// goes through that host's link (a delay there shows in its round trip and
// in no other host's), a cut one way stalls it until healed, and a node's
// clock follows SetClock (libfaketime, read again within a second).
func TestLab(t *testing.T) {
	if testing.Short() {
		t.Skip("needs root, iptables and the lab's redis-server")
	}
	l := New(t)
	cl := l.StartRedis(6, 7301)
	a, b := l.Host("a"), l.Host("b")
	l.Connect(a, cl.Endpoints()...)
	l.Connect(b, cl.Endpoints()...)
	n := cl.Nodes[0]
	to := Endpoint{Host: n.Host, Port: n.Port}
	ping := func(h *Host) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "redis-cli", "-p", strconv.Itoa(n.Port), "ping")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(os.Getuid()), Gid: h.Gid}}
		start := time.Now()
		out, err := cmd.Output()
		if err == nil && strings.TrimSpace(string(out)) != "PONG" {
			t.Fatalf("ping from %s: %q", h.Name, out)
		}
		return time.Since(start), err
	}
	base, err := ping(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Link(a, to).Delay(100*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	if d, err := ping(a); err != nil || d < 200*time.Millisecond {
		t.Fatalf("a ping through a link delayed 100 ms each way took %v (%v), want 200 ms or more", d, err)
	}
	if d, err := ping(b); err != nil || d > base+150*time.Millisecond {
		t.Fatalf("another host's ping took %v (%v), as if through the delayed link (alone: %v)", d, err, base)
	}
	if err := l.Link(a, to).Heal(); err != nil {
		t.Fatal(err)
	}
	if err := l.Link(a, to).Cut(Down); err != nil {
		t.Fatal(err)
	}
	if _, err := ping(a); err == nil {
		t.Fatal("a ping through a link cut on the way back came back")
	}
	if err := l.HealAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := ping(a); err != nil {
		t.Fatalf("after the heal: %v", err)
	}
	// A gateway's fence beating a shard of a master: its clock's jump is
	// counted (journal.Fence.Jumps), whichever node that is.
	rc, err := testenv.NewRedisClientOn(cl.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	top, err := stock.Topology(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	var tag string
	for i := 0; tag == ""; i++ {
		if cand := fmt.Sprintf("lab%d:0:0", i); top.MasterOfTag(cand) == "127.0.0.1:"+strconv.Itoa(n.Port) {
			tag = cand
		}
	}
	f := journal.NewFence(rc, journal.FenceConfig{Tags: func() []string { return []string{tag} }})
	if err := f.Beat(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n.Role() != "master" {
		t.Fatalf("node %d is %q, want a master", n.Port, n.Role())
	}
	if err := n.Host.SetClock(3 * time.Second); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		d, err := n.Time(context.Background())
		if err == nil && d > 2500*time.Millisecond && d < 3500*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d's clock is %v from the machine's (%v), want about +3s", n.Port, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if d, err := cl.Nodes[1].Time(context.Background()); err != nil || d > 500*time.Millisecond || d < -500*time.Millisecond {
		t.Fatalf("another node's clock moved too: %v %v", d, err)
	}
	if err := f.Beat(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.Jumps() != 1 || f.Offset() < 2500*time.Millisecond {
		t.Fatalf("the fence saw %d jumps and an offset of %v after a 3 s jump of its master's clock, want 1 and about 3 s", f.Jumps(), f.Offset())
	}
}
