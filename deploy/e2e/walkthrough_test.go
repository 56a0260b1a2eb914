package e2e_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
)

// TestWalkthrough runs the README's "Run a sale by hand" block as it is, with
// bash, in a scratch directory holding the built binaries as bin/ and a copy
// of deploy/sale.yaml under fresh ids, on free ports; every command must
// succeed and the answers must be the ones the comments promise.
func TestWalkthrough(t *testing.T) {
	need(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "<!-- walkthrough -->\n```sh\n")
	if ok {
		block, _, ok = strings.Cut(block, "```\n<!-- /walkthrough -->")
	}
	if !ok {
		t.Fatal("README.md has no walkthrough block")
	}
	dir := t.TempDir()
	if err := os.Symlink(binDir, filepath.Join(dir, "bin")); err != nil {
		t.Fatal(err)
	}
	sample, err := os.ReadFile(filepath.Join(root, "deploy/sale.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sale := rand.Int64N(sharding.MaxSaleID-10_000_000) + 10_000_000
	item := sale*100 + 1
	file := strings.Replace(strings.Replace(string(sample), "id: 42 ", fmt.Sprintf("id: %d ", sale), 1), "id: 4201,", fmt.Sprintf("id: %d,", item), 1)
	if file == string(sample) || !strings.Contains(file, fmt.Sprint(item)) {
		t.Fatal("deploy/sale.yaml no longer has the sample ids 42 and 4201")
	}
	if err := os.WriteFile(filepath.Join(dir, "sale.yaml"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"FLASHSALE_REDIS="+strings.Join(testenv.RedisAddrs(), ","), "DATABASE_URL="+testenv.DatabaseURL(),
		"KAFKA_BROKERS="+strings.Join(testenv.KafkaBrokers(), ","), "FLASHSALE_TOPIC="+testenv.NewTopic(t, "walkthrough"),
		fmt.Sprintf("SALE=%d", sale), fmt.Sprintf("ITEM=%d", item), "SALE_FILE=sale.yaml",
		// The block's gateway relays every sale by default: on the shared
		// stack it would take other tests' journal entries to its own
		// topic, where their writers never see them.
		fmt.Sprintf("FLASHSALE_RELAY_SALES=%d", sale),
		fmt.Sprintf("API=127.0.0.1:%d", freePort(t)), fmt.Sprintf("ADMIN=127.0.0.1:%d", freePort(t)), fmt.Sprintf("WADMIN=127.0.0.1:%d", freePort(t)))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	began := time.Now()
	if err := runBounded(cmd, 2*time.Minute); err != nil {
		logs(t, dir)
		t.Fatalf("the walkthrough failed: %v\n%s", err, out.String())
	}
	t.Logf("walkthrough (%v):\n%s", time.Since(began).Round(time.Millisecond), out.String())
	for _, want := range []string{
		`"status":"ACTIVE"`, `"status":"PENDING"} 202`, `ALREADY_PURCHASED`, `"error":"SALE_PAUSED"} 503`,
		`"error":"SALE_ENDED"} 410`, "status PAUSED", "status ACTIVE", "status ENDED", "clean",
	} {
		if !strings.Contains(out.String(), want) {
			logs(t, dir)
			t.Errorf("the walkthrough's output lacks %q", want)
		}
	}
}

// runBounded runs cmd, killing it after limit.
func runBounded(cmd *exec.Cmd, limit time.Duration) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("still running after %v", limit)
	}
}

func logs(t *testing.T, dir string) {
	for _, f := range []string{"gateway.log", "writer.log"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
			if len(b) > 3000 {
				b = b[len(b)-3000:]
			}
			t.Logf("%s:\n%s", f, b)
		}
	}
}
