package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"flashsale/deploy/testenv"
	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/ops/saleops"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/ops/toolbox"
	"flashsale/writer/schema"
)

// TestToolboxChecksTheStores: `toolbox --once` (the ops pod's readiness
// probe) dials Redis, PostgreSQL and Kafka with the tool's settings and says
// what answered: exit 0 with every node of the cluster and the writers' lag,
// exit 1 and the failing store named when one does not answer.
func TestToolboxChecksTheStores(t *testing.T) {
	opstest.NewEnv(t)
	testenv.Require(t, "kafka")
	_, group, topic := opstest.WriterLag(t, 3)
	code, out, errOut := runMain("toolbox", "--once", "--writer-group", group, "--orders-topic", topic)
	if code != ExitOK || !strings.Contains(out, "toolbox ok") || !strings.Contains(out, "redis ok (6 nodes answer)") ||
		!strings.Contains(out, "postgresql ok") || !strings.Contains(out, fmt.Sprintf("group %s has 3 records of %s to persist", group, topic)) {
		t.Fatalf("toolbox --once: exit %d\n%s%s", code, out, errOut)
	}
	// In the ops pod the writer's own variables name the group and topic.
	code, out, errOut = runMainEnv(map[string]string{"FLASHSALE_GROUP": group, "FLASHSALE_TOPIC": topic}, "toolbox", "--once")
	if code != ExitOK || !strings.Contains(out, fmt.Sprintf("group %s has 3 records of %s to persist", group, topic)) {
		t.Fatalf("toolbox --once with FLASHSALE_GROUP and FLASHSALE_TOPIC: exit %d\n%s%s", code, out, errOut)
	}
	// A group no writer committed for yet is reached all the same.
	code, out, _ = runMain("--json", "toolbox", "--once", "--writer-group", group+"-never", "--orders-topic", topic)
	var r toolbox.Reach
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != ExitOK || !r.OK || !strings.Contains(r.Kafka, "has not committed an offset yet") {
		t.Fatalf("toolbox --once, new group: exit %d, %v\n%s", code, err, out)
	}
	// Redis away: exit 1, Redis named, the others still checked.
	code, out, _ = runMain("--redis", "127.0.0.1:1", "toolbox", "--once", "--writer-group", group, "--orders-topic", topic)
	if code != ExitFail || !strings.Contains(out, "toolbox FAILING") || !strings.Contains(out, "redis FAILED: connecting to redis 127.0.0.1:1") ||
		!strings.Contains(out, "postgresql ok") || !strings.Contains(out, "kafka ok") {
		t.Fatalf("toolbox --once without Redis: exit %d\n%s", code, out)
	}
}

// TestToolboxRunsUntilStopped: without --once the toolbox checks every
// interval and exits 0 when it is told to stop (SIGTERM cancels Main's
// context), so that the pod restarts cleanly.
func TestToolboxRunsUntilStopped(t *testing.T) {
	opstest.NewEnv(t)
	testenv.Require(t, "kafka")
	_, group, topic := opstest.WriterLag(t, 0)
	// 4 s: the first check runs at once, the second 1 s after the first
	// ends; a check dials all three stores, slower on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	env := map[string]string{"FLASHSALE_REDIS": strings.Join(testenv.RedisAddrs(), ","), "DATABASE_URL": testenv.DatabaseURL(),
		"KAFKA_BROKERS": strings.Join(testenv.KafkaBrokers(), ",")}
	began := time.Now()
	code := Main(ctx, []string{"toolbox", "--every", "1s", "--writer-group", group, "--orders-topic", topic},
		func(k string) string { return env[k] }, &out, &errb, false)
	if code != ExitOK || time.Since(began) > 10*time.Second {
		t.Fatalf("toolbox: exit %d after %v\n%s%s", code, time.Since(began), out.String(), errb.String())
	}
	if n := strings.Count(out.String(), "toolbox ok"); n < 2 {
		t.Fatalf("toolbox checked %d times in 4 s at --every 1s, want at least 2:\n%s", n, out.String())
	}
}

// TestSaleCreateFromStandardInput: `sale create --file -` reads the sale from
// standard input (`kubectl exec -i deploy/flashsale-ops -- flashctl sale
// create --file - < sale.yaml`); empty or oversized input is refused with
// nothing written.
func TestSaleCreateFromStandardInput(t *testing.T) {
	e := opstest.NewEnv(t)
	defer func(r io.Reader) { tool.Stdin = r }(tool.Stdin)
	id := opstest.RandomSaleID()
	doc := fmt.Sprintf("id: %d\nname: piped sale\nstartsAt: 2026-01-01T10:00:00Z\nendsAt: 2036-01-01T10:00:00Z\n"+
		"items:\n  - {id: %d, name: Hat, price: 500, currency: EUR, quantity: 5}\n", id, id*100+1)
	for _, bad := range []struct{ in, want string }{
		{"", "sale file is empty"},
		{strings.Repeat("#", saleops.MaxSaleFile+1), fmt.Sprintf("reading sale file: more than %d bytes", saleops.MaxSaleFile)},
	} {
		tool.Stdin = strings.NewReader(bad.in)
		if code, _, errOut := runMain("sale", "create", "--file", "-"); code != ExitFail || !strings.Contains(errOut, bad.want) {
			t.Errorf("sale create from %d bytes: exit %d, %q; want %q", len(bad.in), code, errOut, bad.want)
		}
	}
	t.Cleanup(func() { e.DropSale(id) })
	tool.Stdin = strings.NewReader(doc)
	if code, out, errOut := runMain("sale", "create", "--file", "-", "--shards", "2"); code != ExitOK || !strings.Contains(out, "created") {
		t.Fatalf("sale create --file -: exit %d\n%s%s", code, out, errOut)
	}
	if ok, err := schema.SaleExists(context.Background(), e.Pool, id); err != nil || !ok {
		t.Fatalf("the piped sale is not in PostgreSQL (%v, %v)", ok, err)
	}
}
