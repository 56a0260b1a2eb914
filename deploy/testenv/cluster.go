package testenv

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// StackScript is the path of deploy/stack/stack.sh, the local stack's script
// (its fault commands: redis-kill PORT, redis-start PORT, pg-restart,
// broker-stop, broker-start).
func StackScript() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "stack", "stack.sh")
}

// Stack runs stack.sh with args and logs its output when it fails.
func Stack(t testing.TB, args ...string) error {
	t.Helper()
	out, err := exec.Command("bash", append([]string{StackScript()}, args...)...).CombinedOutput()
	if err != nil {
		t.Logf("stack.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return err
}

// Role is the first line of ROLE from the Redis node on port ("master",
// "slave"), or "" when the node does not answer.
func Role(port string) string {
	out, _ := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", port, "role").Output()
	first, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(first)
}

// ReplicaOf returns the port of the first replica of the master on port, or ""
// when it has none.
func ReplicaOf(port string) string {
	// INFO replication names a replica by the port it replicates over (its
	// TLS port, with tls-replication on); CLUSTER NODES over a plain
	// connection names every node by its plain port.
	id, _ := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", port, "cluster", "myid").Output()
	out, _ := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", port, "cluster", "nodes").Output()
	master := strings.TrimSpace(string(id))
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if master == "" || len(f) < 4 || f[3] != master || !strings.Contains(f[2], "slave") {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		if i := strings.LastIndexByte(addr, ':'); i >= 0 {
			return addr[i+1:]
		}
	}
	return ""
}

// HealCluster brings the node on port back, gives it its master role back and
// waits until all six nodes are up with cluster_state:ok, because the cluster
// is shared with everyone else's tests. It reports an error on t when the
// cluster is not healthy within a minute.
func HealCluster(t testing.TB, port string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	if Role(port) == "" {
		_ = Stack(t, "redis-start", port)
	}
	for Role(port) == "slave" && time.Now().Before(deadline) {
		// A manual failover waits for the replica to catch up: no write is lost.
		_ = exec.Command("redis-cli", "-h", "127.0.0.1", "-p", port, "cluster", "failover").Run()
		for i := 0; i < 50 && Role(port) == "slave"; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	}
	for time.Now().Before(deadline) {
		// Healthy, and the node's replica listed as its own again (the next
		// test looks it up).
		if st, err := exec.Command("bash", StackScript(), "status").Output(); err == nil && ReplicaOf(port) != "" {
			t.Logf("cluster healed: %s", strings.SplitN(string(st), "\n", 2)[0])
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("the cluster did not become healthy again within a minute (node %s role %q)", port, Role(port))
}
