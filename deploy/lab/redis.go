package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"flashsale/deploy/testenv"
)

// Cluster is the lab's Redis Cluster: each node a host of its own.
type Cluster struct {
	Nodes []*Node
}

// Node is one redis-server of the lab's cluster.
type Node struct {
	Host *Host
	Port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
	lab  *Lab
	bin  []string // redis-server, libfaketime
}

// Addrs returns the nodes' client addresses, as the cluster announces them.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = "127.0.0.1:" + strconv.Itoa(n.Port)
	}
	return out
}

// Node returns the node on port (nil for none).
func (c *Cluster) Node(port int) *Node {
	for _, n := range c.Nodes {
		if n.Port == port {
			return n
		}
	}
	return nil
}

// Endpoints returns the nodes' client ports as endpoints.
func (c *Cluster) Endpoints() []Endpoint {
	out := make([]Endpoint, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = Endpoint{Host: n.Host, Port: n.Port}
	}
	return out
}

// StartRedis starts a cluster of n nodes (n/2 masters, a replica each) on
// ports from base, every node a host with a clock of its own and links of
// its own to every other node's client and bus ports, and waits until it
// serves every slot.
func (l *Lab) StartRedis(n, base int) *Cluster {
	l.t.Helper()
	bin := labRedis(l.t)
	c := &Cluster{}
	for i := range n {
		port := base + i
		h := l.Host("redis-" + strconv.Itoa(port))
		dir := l.t.TempDir()
		h.clockFile = filepath.Join(dir, "clock")
		if err := os.WriteFile(h.clockFile, []byte("+0\n"), 0o644); err != nil {
			l.t.Fatal(err)
		}
		c.Nodes = append(c.Nodes, &Node{Host: h, Port: port, dir: dir, lab: l, bin: bin})
	}
	for _, a := range c.Nodes {
		for _, b := range c.Nodes {
			if a != b {
				l.Connect(a.Host, Endpoint{b.Host, b.Port}, Endpoint{b.Host, b.Port + 10000})
			}
		}
	}
	for _, nd := range c.Nodes {
		if err := nd.Start(); err != nil {
			l.t.Fatal(err)
		}
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("lab: redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, nd := range c.Nodes {
		for {
			out, _ := exec.Command("redis-cli", "-p", strconv.Itoa(nd.Port), "cluster", "info").Output()
			if strings.Contains(string(out), "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				l.t.Fatalf("lab: node %d: cluster not ok within 30 s:\n%s", nd.Port, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	l.Redis = c
	return c
}

// Start starts the node (again, after Kill: its data and cluster config
// are kept).
func (nd *Node) Start() error {
	conf := fmt.Sprintf(`bind 127.0.0.1
port %d
protected-mode no
dir %s
cluster-enabled yes
cluster-config-file nodes.conf
cluster-node-timeout 2000
cluster-require-full-coverage no
maxmemory-policy noeviction
appendonly yes
appendfsync everysec
save ""
logfile %s
`, nd.Port, nd.dir, filepath.Join(nd.dir, "redis.log"))
	cf := filepath.Join(nd.dir, "redis.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(nd.bin[0], cf)
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+nd.bin[1], "FAKETIME_TIMESTAMP_FILE="+nd.Host.clockFile,
		"FAKETIME_CACHE_DURATION=1", "FAKETIME_DONT_FAKE_MONOTONIC=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(os.Getuid()), Gid: nd.Host.Gid}}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("lab: starting redis %d: %w", nd.Port, err)
	}
	nd.cmd, nd.done = cmd, make(chan struct{})
	done := nd.done
	go func() { _ = cmd.Wait(); close(done) }()
	nd.lab.t.Cleanup(func() { nd.Kill() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := exec.Command("redis-cli", "-p", strconv.Itoa(nd.Port), "ping").Output()
		if strings.TrimSpace(string(out)) == "PONG" {
			return nil
		}
		select {
		case <-done:
			b, _ := os.ReadFile(filepath.Join(nd.dir, "redis.log"))
			return fmt.Errorf("lab: redis %d exited at start:\n%s", nd.Port, b)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("lab: redis %d did not answer within 10 s", nd.Port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill SIGKILLs the node (nothing when it is not running).
func (nd *Node) Kill() {
	if nd.cmd == nil {
		return
	}
	select {
	case <-nd.done:
		return
	default:
	}
	_ = nd.cmd.Process.Kill()
	<-nd.done
}

// Signal sends sig to the node (SIGSTOP freezes it, SIGCONT thaws it).
func (nd *Node) Signal(sig syscall.Signal) error {
	if nd.cmd == nil {
		return fmt.Errorf("lab: redis %d is not running", nd.Port)
	}
	return nd.cmd.Process.Signal(sig)
}

// Role answers the node's role ("master", "slave", "" when it does not
// answer).
func (nd *Node) Role() string { return testenv.Role(strconv.Itoa(nd.Port)) }

// Time answers the node's clock (its TIME) less the machine's.
func (nd *Node) Time(ctx context.Context) (time.Duration, error) {
	out, err := exec.CommandContext(ctx, "redis-cli", "-p", strconv.Itoa(nd.Port), "time").Output()
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return 0, fmt.Errorf("lab: TIME of %d: %q", nd.Port, out)
	}
	s, err1 := strconv.ParseInt(f[0], 10, 64)
	us, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("lab: TIME of %d: %q", nd.Port, out)
	}
	return time.Until(time.Unix(s, us*1000)), nil
}

// labRedis returns the lab's redis-server and libfaketime (stack.sh
// lab-redis builds the first once).
func labRedis(t interface {
	Helper()
	Fatalf(string, ...any)
}) []string {
	t.Helper()
	out, err := exec.Command("bash", testenv.StackScript(), "lab-redis").Output()
	lines := strings.Fields(string(out))
	if err != nil || len(lines) != 2 {
		t.Fatalf("lab: stack.sh lab-redis: %v (%q)", err, out)
	}
	return lines
}
