package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"flashsale/bench/internal/report"
	"flashsale/deploy/testenv"
	"flashsale/sharding"
)

// buildBinaries builds the packages into a temporary directory.
func buildBinaries(t *testing.T, pkgs ...string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := t.TempDir()
	cmd := exec.Command("go", append([]string{"build", "-o", dir + "/"}, pkgs...)...)
	cmd.Dir = filepath.Join(filepath.Dir(file), "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

func stackEnv() []string {
	return append(os.Environ(), "FLASHSALE_REDIS="+strings.Join(testenv.RedisAddrs(), ","),
		"KAFKA_BROKERS="+strings.Join(testenv.KafkaBrokers(), ","), "DATABASE_URL="+testenv.DatabaseURL())
}

func benchCmd(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(bin, "bench"), args...)
	cmd.Env = append(stackEnv(), "FLASHSALE_JWT_SECRET="+testSecret)
	return cmd
}

// run starts a binary for the test's lifetime (SIGTERM at the end).
func run(t *testing.T, bin, name string, args ...string) {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = stackEnv(), log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("%s log:\n%s", name, tail(string(b), 20))
		}
	})
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	return testenv.FreeAddr(t)
}

// createSale creates a started one-item sale of units over 4 shards.
func createSale(t *testing.T, bin string, units int) int64 {
	t.Helper()
	id := rand.Int64N(sharding.MaxSaleID-10_000_000) + 10_000_000
	now := time.Now()
	body, _ := json.Marshal(map[string]any{"id": id, "name": "bench " + t.Name(), "paymentWindow": "10m",
		"startsAt": now.Add(-time.Second).UTC().Format(time.RFC3339), "endsAt": now.Add(time.Hour).UTC().Format(time.RFC3339),
		"items": []map[string]any{{"id": id*10 + 1, "name": "thing", "price": 100, "currency": "JPY", "quantity": units}}})
	file := filepath.Join(t.TempDir(), "sale.json")
	if err := os.WriteFile(file, body, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "flashctl"), "sale", "create", "--file", file, "--shards", "4")
	cmd.Env = stackEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("flashctl sale create: %v\n%s", err, out)
	}
	return id
}

// waitSale waits until the gateway serves every sale (it loads sales every
// second).
func waitSale(t *testing.T, addr string, ids ...int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, id := range ids {
		for {
			req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://%s/api/flash-sales/sales/%d", addr, id), nil)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if ctx.Err() != nil {
				t.Fatalf("gateway did not serve sale %d: %v", id, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func load(t *testing.T, dir string) *report.Result {
	t.Helper()
	r, err := report.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func decode(t *testing.T, s string) *hdrhistogram.Histogram {
	t.Helper()
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return h
}
