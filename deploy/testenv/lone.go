package testenv

import (
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// LoneRedis starts a redis-server of its own on a free loopback port, with
// no persistence and the extra args (say "--cluster-enabled", "yes"), and
// returns a single-node client of it; both end with the test. It skips the
// test when redis-server is not on PATH (make up installs it).
func LoneRedis(t testing.TB, args ...string) rueidis.Client {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not on PATH (make up installs it)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	_ = ln.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, append([]string{"--port", port, "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no"}, args...)...)
	DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for wait := time.Now(); time.Since(wait) < 10*time.Second; time.Sleep(50 * time.Millisecond) {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:" + port},
			ForceSingleClient: true, DisableCache: true})
		if err == nil {
			t.Cleanup(c.Close)
			return c
		}
	}
	t.Fatalf("redis-server on port %s did not answer", port)
	return nil
}
