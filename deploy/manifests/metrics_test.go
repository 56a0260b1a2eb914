package manifests

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/ops/saleops"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

// exportedMetric is one metric family a binary exports.
type exportedMetric struct {
	name   string
	kind   dto.MetricType
	binary string // "gateway" or "writer"
}

// exportedMetrics is THE list of metrics the binaries export and the dashboard and alert rules
// may name. When a binary renames or adds a metric, change it here: TestMetricsLiveScrape
// compares this list with /metrics of the real binaries, and the observability tests check every
// name used in deploy/observability against it.
var exportedMetrics = []exportedMetric{
	{"flashsale_gateway_requests_total", dto.MetricType_COUNTER, "gateway"},
	{"flashsale_gateway_request_duration_seconds", dto.MetricType_HISTOGRAM, "gateway"},
	{"flashsale_gateway_redis_errors_total", dto.MetricType_COUNTER, "gateway"},
	{"flashsale_gateway_soldout", dto.MetricType_GAUGE, "gateway"},
	{"flashsale_gateway_ratelimited_total", dto.MetricType_COUNTER, "gateway"},
	{"flashsale_gateway_ambiguous_reservations_total", dto.MetricType_COUNTER, "gateway"},
	{"flashsale_gateway_voids_total", dto.MetricType_COUNTER, "gateway"},
	{"flashsale_gateway_act_voids_total", dto.MetricType_COUNTER, "gateway"},
	{"flashsale_gateway_journal_full_total", dto.MetricType_COUNTER, "gateway"},
	{"flashsale_gateway_replica_ack_shortfalls_total", dto.MetricType_COUNTER, "gateway"},
	{"flashsale_gateway_replica_ack_unconfirmed_total", dto.MetricType_COUNTER, "gateway"},
	{"flashsale_gateway_clock_offset_seconds", dto.MetricType_GAUGE, "gateway"},
	{"flashsale_gateway_master_clock_jumps_total", dto.MetricType_COUNTER, "gateway"},
	{"flashsale_gateway_stock_drift_units", dto.MetricType_GAUGE, "gateway"},
	{"flashsale_gateway_stock_drift_age_seconds", dto.MetricType_GAUGE, "gateway"},
	{"flashsale_journal_backlog", dto.MetricType_GAUGE, "gateway"},
	{"flashsale_journal_oldest_age_seconds", dto.MetricType_GAUGE, "gateway"},
	{"flashsale_relay_entries_total", dto.MetricType_COUNTER, "gateway"},
	{"flashsale_relay_errors_total", dto.MetricType_COUNTER, "gateway"},
	{"flashsale_gateway_redis_batched_commands_total", dto.MetricType_COUNTER, "gateway"},
	{"flashsale_gateway_redis_batches_total", dto.MetricType_COUNTER, "gateway"},
	{"flashsale_gateway_stock_units", dto.MetricType_GAUGE, "gateway"},
	{"flashsale_gateway_sale_selling", dto.MetricType_GAUGE, "gateway"},
	{"flashsale_gateway_sale_paused", dto.MetricType_GAUGE, "gateway"},
	{"flashsale_gateway_draw_beacon_refused_total", dto.MetricType_COUNTER, "gateway"},
	{"flashsale_gateway_draw_beacon_overdue", dto.MetricType_GAUGE, "gateway"},
	{"flashsale_writer_events_consumed_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_orders_persisted_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_duplicates_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_dead_letters_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_failed_orders_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_consumer_lag", dto.MetricType_GAUGE, "writer"},
	{"flashsale_writer_expired_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_releases_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_paid_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_cancelled_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_reservation_to_commit_seconds", dto.MetricType_HISTOGRAM, "writer"},
	{"flashsale_writer_ghost_reservations_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_ghost_sweeps_skipped_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_expiry_skipped_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_stock_drift_units", dto.MetricType_GAUGE, "writer"},
	{"flashsale_writer_stock_units", dto.MetricType_GAUGE, "writer"},
	{"flashsale_writer_ledger_units", dto.MetricType_GAUGE, "writer"},
	{"flashsale_writer_sale_settled", dto.MetricType_GAUGE, "writer"},
	{"flashsale_writer_journal_backlog", dto.MetricType_GAUGE, "writer"},
	{"flashsale_writer_journal_oldest_age_seconds", dto.MetricType_GAUGE, "writer"},
	{"flashsale_writer_redis_errors_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_unlinked_runs_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_retries_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_replica_ack_shortfalls_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_replica_ack_unconfirmed_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_draw_log_entries_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_draw_log_refused_total", dto.MetricType_COUNTER, "writer"},
	{"flashsale_writer_draw_log_conflicts_total", dto.MetricType_COUNTER, "writer"},
}

// seriesNames returns every series name a query may use for the exported metrics: the family
// name, and for histograms its _bucket, _sum and _count series.
func seriesNames() map[string]exportedMetric {
	out := map[string]exportedMetric{}
	for _, m := range exportedMetrics {
		out[m.name] = m
		if m.kind == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				out[m.name+s] = m
			}
		}
	}
	return out
}

// TestMetricsLiveScrape builds the real gateway and writer, starts them against the local stack
// and checks that /metrics of each exports every metric of exportedMetrics with its type.
func TestMetricsLiveScrape(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: builds and runs the binaries")
	}
	testenv.Require(t, "redis", "postgres", "kafka")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	bin := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin+string(filepath.Separator), "./gateway", "./writer")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./gateway ./writer: %v\n%s", err, out)
	}

	// A live sale of our own, in PostgreSQL and Redis, so the gateway's catalog has an item
	// (its sold-out and stock gauges) and the writer computes its drift.
	saleID := randomID(t)
	s := &sale.Sale{
		ID: saleID, Name: "deploy-manifests metrics", StartsAt: time.Now().Add(-time.Minute), EndsAt: time.Now().Add(2 * time.Hour),
		PaymentWindow: sale.Duration(10 * time.Minute),
		Items:         []sale.Item{{ID: randomID(t), Name: "probe", Price: 100, Currency: "EUR", Quantity: 2}},
		Shards:        sharding.UniformTags(saleID, 2),
	}
	rc := testenv.NewRedis(t)
	pool := testenv.NewPool(t)
	if err := saleops.CreateSale(ctx, pool, stock.New(rc), s, 0); err != nil {
		t.Fatalf("creating sale %d: %v", saleID, err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rc.DoMulti(c,
			rc.B().Srem().Key(sharding.SalesKey).Member(strconv.FormatInt(saleID, 10)).Build(),
			rc.B().Del().Key(sharding.SaleKey(saleID)).Build())
		_, _ = pool.Exec(c, `DELETE FROM items WHERE sale_id = $1`, saleID)
		_, _ = pool.Exec(c, `DELETE FROM sales WHERE id = $1`, saleID)
	})

	topic := testenv.NewTopic(t, "deploy-metrics")
	dlq := testenv.NewTopic(t, "deploy-metrics-dlq")
	common := []string{
		"FLASHSALE_REDIS=" + strings.Join(testenv.RedisAddrs(), ","),
		"KAFKA_BROKERS=" + strings.Join(testenv.KafkaBrokers(), ","),
		"FLASHSALE_TOPIC=" + topic,
	}
	gwAdmin, wrAdmin := freeAddr(t), freeAddr(t)
	start(t, ctx, filepath.Join(bin, "gateway"), nil, append(common,
		"FLASHSALE_LISTEN="+freeAddr(t), "FLASHSALE_ADMIN="+gwAdmin, "FLASHSALE_JWT_SECRET="+randomHex(t),
		// Relay only our sale's journals: other tests share Redis.
		"FLASHSALE_RELAY_SALES="+strconv.FormatInt(saleID, 10)))
	start(t, ctx, filepath.Join(bin, "writer"), []string{"run"}, append(common,
		"DATABASE_URL="+testenv.DatabaseURL(), "FLASHSALE_DLQ_TOPIC="+dlq,
		"FLASHSALE_GROUP="+topic+"-writer", "FLASHSALE_ADMIN="+wrAdmin,
		// Expire only our (empty) sale: other tests share PostgreSQL. The schema is theirs to migrate.
		"FLASHSALE_SALES="+strconv.FormatInt(saleID, 10), "FLASHSALE_MIGRATE=false"))

	for binary, addr := range map[string]string{"gateway": gwAdmin, "writer": wrAdmin} {
		var want []exportedMetric
		for _, m := range exportedMetrics {
			if m.binary == binary {
				want = append(want, m)
			}
		}
		// Poll: some families appear only after the first refresh (the sold-out gauge after the
		// catalog has loaded our sale).
		var missing []string
		deadline := time.Now().Add(20 * time.Second)
		for {
			fams, err := scrape(ctx, "http://"+addr+"/metrics")
			missing = missing[:0]
			if err == nil {
				for _, m := range want {
					f, ok := fams[m.name]
					switch {
					case !ok:
						missing = append(missing, m.name)
					case f.GetType() != m.kind:
						missing = append(missing, fmt.Sprintf("%s (type %s, want %s)", m.name, f.GetType(), m.kind))
					}
				}
			} else {
				missing = append(missing, err.Error())
			}
			if len(missing) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		if len(missing) > 0 {
			t.Errorf("%s /metrics lacks what deploy/observability uses: %s", binary, strings.Join(missing, ", "))
		}
	}
}

func scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// start runs a binary until the test ends, then stops it with SIGTERM; its output is logged
// when the test fails.
func start(t *testing.T, ctx context.Context, path string, args, env []string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(path), tail(out.Bytes(), 4000))
		}
	})
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// freeAddr returns a loopback address with a port free at the time of the call.
func freeAddr(t *testing.T) string {
	t.Helper()
	return testenv.FreeAddr(t)
}

func randomID(t *testing.T) int64 {
	t.Helper()
	n, err := rand.Int(rand.Reader, big.NewInt(1<<32-2))
	if err != nil {
		t.Fatal(err)
	}
	return n.Int64() + 1
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := io.ReadFull(rand.Reader, b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
