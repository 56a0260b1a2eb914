package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"flashsale/deploy/testenv"
	"flashsale/sharding/ops/ledger"
)

// benchAudit is what result.json of a bench run says of its audit (package
// bench/internal/audit's Report, the fields compared).
type benchAudit struct {
	Audit struct {
		Orders   int64    `json:"orders"`
		Accepted int64    `json:"accepted"` // distinct order ids answered 202
		Failures []string `json:"failures"`
		Items    []struct {
			ID        int64 `json:"id"`
			Q         int64 `json:"quantity"`
			Pending   int64 `json:"pending"`
			Paid      int64 `json:"paid"`
			Expired   int64 `json:"expired"`
			Cancelled int64 `json:"cancelled"`
			Failed    int64 `json:"failed"`
			S         int64 `json:"redisStock"`
		} `json:"items"`
	} `json:"audit"`
}

// TestLedgerAgreesWithBenchAudit runs `make demo` in miniature: a writer, a
// gateway, the bench's flash crowd with its audit (some winners pay, some
// cancel, their units selling again), then the closing report as demo.sh
// takes it, with the HTML beside the bench report. The audit passes and the
// ledger balances, and every count they share agrees: quantity, paid,
// pending, expired, cancelled, failed, the units left in Redis, the orders
// and the 202s (the bench's distinct ones reached PostgreSQL; the gateway's
// funnel counted each).
func TestLedgerAgreesWithBenchAudit(t *testing.T) {
	need(t)
	s := createSale(t, 300, 4, -time.Second)
	topic := "ledger-bench-" + randHex()
	startWriter(t, topic, s.ID)
	g := startGateway(t, topic, s)
	g.waitReady(t, 30*time.Second)
	out := filepath.Join(t.TempDir(), "bench")
	bench := exec.Command(filepath.Join(binDir, "bench"), "-url", "http://"+g.addr, "-sale", strconv.FormatInt(s.ID, 10),
		"-scenario", "flash-crowd", "-users", "3000", "-c", "64", "-pay", "0.4", "-cancel", "0.2", "-think", "50ms",
		"-jwt-secret", secret, "-xff", "-audit", "-out", out, "-metrics-url", "http://"+g.admin+"/metrics")
	bench.Env = append(os.Environ(), "FLASHSALE_REDIS="+strings.Join(testenv.RedisAddrs(), ","), "DATABASE_URL="+testenv.DatabaseURL())
	if b, err := bench.CombinedOutput(); err != nil {
		t.Fatalf("bench: %v\n%s", err, b)
	}
	var res benchAudit
	b, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil || json.Unmarshal(b, &res) != nil || len(res.Audit.Items) != 1 || len(res.Audit.Failures) > 0 {
		t.Fatalf("result.json: %v; audit %+v", err, res.Audit)
	}
	code, text, errOut := runFlashctl("sale", "report", "--sale", strconv.FormatInt(s.ID, 10), "--gateways", g.admin,
		"--writer-group", topic+"-writers", "--orders-topic", topic, "--html", filepath.Join(out, "ledger.html"))
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if code != 0 || !strings.HasPrefix(lines[len(lines)-1], "LEDGER BALANCED") {
		t.Fatalf("the demo's last lines: exit %d, want 0 and the ledger balanced last:\n%s%s", code, text, errOut)
	}
	t.Logf("the demo's last lines:\n%s", strings.Join(lines[max(0, len(lines)-4):], "\n"))
	if _, err := os.Stat(filepath.Join(out, "ledger.html")); err != nil {
		t.Fatalf("no ledger page beside the bench report: %v", err)
	}
	_, js, _ := runFlashctl("--json", "sale", "report", "--sale", strconv.FormatInt(s.ID, 10), "--gateways", g.admin,
		"--writer-group", topic+"-writers", "--orders-topic", topic)
	var rep ledger.SaleReport
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	a, it := res.Audit.Items[0], rep.Ledger.Items[0]
	failed := int64(0)
	for _, f := range it.Flows.Failed {
		failed += f.Orders
	}
	audit := []int64{a.ID, a.Q, a.Paid, a.Pending, a.Expired, a.Cancelled, a.Failed, a.S, res.Audit.Orders}
	ledger := []int64{it.Item, it.Q, it.Paid, it.Pending, it.Flows.Expired.Orders, it.Flows.Cancelled.Orders, failed, it.Unsold, it.Flows.Reserved}
	if !slices.Equal(audit, ledger) || a.Paid == 0 || a.Cancelled == 0 {
		t.Fatalf("the audit and the ledger disagree (item Q paid pending expired cancelled failed S orders):\n  audit  %v\n  ledger %v", audit, ledger)
	}
	// Each distinct 202 reached PostgreSQL; the gateway counted every 202
	// answer, a retry's replay of its order too.
	if res.Audit.Accepted != it.Flows.Reserved || rep.Funnel.Total.Purchases["accepted"] < res.Audit.Accepted {
		t.Fatalf("%d distinct 202s (bench), %d orders (ledger), %d 202 answers (gateway)", res.Audit.Accepted, it.Flows.Reserved, rep.Funnel.Total.Purchases["accepted"])
	}
}
